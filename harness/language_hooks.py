"""The languages a problem can be written in besides Python, as the evaluation core sees them.

A language beyond Python (JavaScript, C++, Java, Rust: :mod:`harness.languages`) is a product
built on the core. It registers what the core needs from it (:class:`LanguageHooks`) here,
under the name a problem carries in ``metadata["language"]``, and the core consults this
table wherever a problem's language makes a difference: assembling a program
(:mod:`harness.completions`), running it (:mod:`harness.pipeline.runtime`), bounding its run
(:mod:`harness.pipeline.compile`), prompting for it (:mod:`harness.models.base`) and scoring it
(:mod:`harness.reward.score`). A Python problem never reaches the table.

Importing :mod:`harness.languages` registers the built-in languages; the table loads it (and
any installed ``codeeval.extensions`` entry point, :mod:`harness.extensions`) the first time a
name is not found. To add a language, implement :class:`LanguageHooks` and call
:func:`register` with it when your package is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from harness.extensions import load_extensions
from harness.records import Problem
from harness.sandbox import SampleExecution


class LanguageHooks(Protocol):
    """What one language provides to the evaluation core."""

    name: str  # the value of a problem's ``metadata["language"]`` (``js``, ``cpp``, ...)
    title: str  # for people: ``JavaScript``, ``C++``
    fence_tags: frozenset[str]  # markdown tags of its code blocks (``js``, ``javascript``, ...)
    completion_stops: tuple[str, ...]  # stop sequences that end a continued stub

    def instruction(self, prompt: str) -> str:
        """The chat instruction that asks a model to complete ``prompt`` (the stub)."""
        ...

    def entry_defined(self, code: str, name: str) -> bool:
        """Whether ``code`` defines the entry point ``name`` itself (a whole solution)."""
        ...

    def program(self, problem: Problem, code: str) -> tuple[str, bool]:
        """The program the compiler sees for ``code`` taken from a completion, and whether
        ``code`` was a whole solution (True) or continued the prompt (False)."""
        ...

    def execute(
        self,
        problem: Problem,
        program: str,
        *,
        hide: tuple[str, ...],
        memory_mb: int,
        timeout_override_s: float | None,
    ) -> SampleExecution:
        """Compile and run ``program`` on every case of ``problem``, sandboxed, with the
        values decoded for the trusted checks (the Python sandbox's result shape)."""
        ...

    def worst_case_s(self, problem: Problem) -> float:
        """The longest a sample of ``problem`` can take (compiling, then every case failing)."""
        ...

    def reports(
        self, row: Mapping[str, Any], problem: Problem, reports: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The analyzer reports of a result row: ``{"missing": why}`` for each analyzer that
        cannot read this language."""
        ...

    def missing_parts(self, preset: str, parts: Mapping[str, float]) -> dict[str, str]:
        """``{part: why}`` for the reward parts of ``preset`` no analyzer measures in this
        language (they are left out of the reward and its range, never scored 0)."""
        ...


_REGISTERED: dict[str, LanguageHooks] = {}


def register(hooks: LanguageHooks) -> LanguageHooks:
    """Make ``hooks`` the language named ``hooks.name`` (a later registration replaces it)."""
    if not hooks.name or hooks.name == "python":
        raise ValueError(f"a language needs a name other than 'python', got {hooks.name!r}")
    _REGISTERED[hooks.name] = hooks
    return hooks


def get(name: str) -> LanguageHooks:
    """The language registered as ``name``."""
    hooks = _REGISTERED.get(name)
    if hooks is None:
        load_extensions()  # the bundled languages and installed ones register on import
        hooks = _REGISTERED.get(name)
    if hooks is None:
        known = ", ".join(names()) or "none"
        raise KeyError(
            f"unknown language {name!r} (registered: {known}). `import harness.languages` "
            "registers js, cpp, java and rs; another language registers itself with "
            "harness.language_hooks.register(<its LanguageHooks>)"
        )
    return hooks


def names() -> tuple[str, ...]:
    """The registered languages' names, in registration order."""
    load_extensions()
    return tuple(_REGISTERED)


def language_of(problem: Problem) -> str | None:
    """The problem's language, or None for a Python problem."""
    value: Any = problem.metadata.get("language") if problem.metadata else None
    return value if isinstance(value, str) and value != "python" else None


def hooks_for(problem: Problem) -> LanguageHooks | None:
    """The hooks of the problem's language; None for a Python problem (no lookup at all)."""
    name = language_of(problem)
    return None if name is None else get(name)
