"""The error every suite loader raises for a suite it cannot give."""


class SuiteError(ValueError):
    """An unknown suite, a suite that cannot be loaded, or a bad split spec for it."""
