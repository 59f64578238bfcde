"""The target languages' definitions by name (``js``, ``cpp``, ``java``, ``rs``).

:func:`harness.languages.hooks.register` fills this table (and the core's,
:mod:`harness.language_hooks`); importing :mod:`harness.languages` registers the built-in
languages. The compile and run machinery reads a problem's definition here.
"""

from __future__ import annotations

from harness.language_hooks import language_of
from harness.languages.base import Language
from harness.records import Problem

_LANGUAGES: dict[str, Language] = {}


def add_language(language: Language) -> None:
    """Keep ``language``'s definition under its name (a later one replaces it)."""
    _LANGUAGES[language.name] = language


def get_language(name: str) -> Language:
    """The definition of the language registered as ``name``."""
    language = _LANGUAGES.get(name)
    if language is None:
        known = ", ".join(names()) or "none"
        raise KeyError(
            f"unknown language {name!r} (registered: {known}); a language registers itself "
            "with harness.languages.hooks.register(<its Language>)"
        )
    return language


def names() -> tuple[str, ...]:
    """The registered languages' names, in registration order."""
    return tuple(_LANGUAGES)


def language_for(problem: Problem) -> Language:
    """The definition of a translated problem's language (KeyError for a Python problem)."""
    name = language_of(problem)
    if name is None:
        raise KeyError(f"{problem.task_id} is a Python problem")
    return get_language(name)
