"""The target languages' definitions by name (``js``, ``cpp``, ``java``, ``rs``).

There is one table, the core's (:mod:`harness.language_hooks`): :func:`harness.languages.hooks.register`
puts a language's hooks there, and the hooks carry the language's definition. The compile and
run machinery reads a problem's definition through here.
"""

from __future__ import annotations

from harness import language_hooks
from harness.language_hooks import language_of
from harness.languages.base import Language
from harness.records import Problem


def get_language(name: str) -> Language:
    """The definition of the language registered as ``name``."""
    language = getattr(language_hooks.get(name), "language", None)
    if not isinstance(language, Language):
        raise KeyError(
            f"language {name!r} is registered with the core, but not through "
            "harness.languages.hooks.register(<its Language>): it has no definition here"
        )
    return language


def names() -> tuple[str, ...]:
    """The names of the languages registered with a definition, in registration order."""
    return tuple(
        name
        for name in language_hooks.names()
        if isinstance(getattr(language_hooks.get(name), "language", None), Language)
    )


def language_for(problem: Problem) -> Language:
    """The definition of a translated problem's language (KeyError for a Python problem)."""
    name = language_of(problem)
    if name is None:
        raise KeyError(f"{problem.task_id} is a Python problem")
    return get_language(name)
