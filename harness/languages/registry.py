"""The target languages by name (``js``, ``cpp``, ``java``, ``rs``)."""

from __future__ import annotations

from functools import cache
from typing import Any

from harness.languages.base import Language
from harness.records import Problem

NAMES = ("js", "cpp", "java", "rs")


@cache
def get_language(name: str) -> Language:
    if name == "js":
        from harness.languages.javascript import JavaScript

        return JavaScript()
    if name == "cpp":
        from harness.languages.cpp import Cpp

        return Cpp()
    if name == "java":
        from harness.languages.java import Java

        return Java()
    if name == "rs":
        from harness.languages.rust import Rust

        return Rust()
    raise KeyError(f"unknown language {name!r}; known: {', '.join(NAMES)}")


def language_of(problem: Problem) -> str | None:
    """The problem's target language, or None for a Python problem."""
    value: Any = problem.metadata.get("language") if problem.metadata else None
    return value if isinstance(value, str) and value != "python" else None


def language_for(problem: Problem) -> Language:
    name = language_of(problem)
    if name is None:
        raise KeyError(f"{problem.task_id} is a Python problem")
    return get_language(name)
