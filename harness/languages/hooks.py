"""A target language as the evaluation core sees it, and how a language registers itself.

:class:`CompiledLanguage` implements :class:`harness.language_hooks.LanguageHooks` for one
:class:`~harness.languages.base.Language` (its types, literals, stub, driver and toolchain):
programs are assembled by :mod:`harness.languages.assemble`, compiled and run by
:mod:`harness.languages.runner`, and scored by :mod:`harness.languages.rewards`.
:func:`register` makes a language known to the core; its hooks carry its definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import harness.languages.assemble as assemble
import harness.languages.rewards as rewards
import harness.languages.runner as runner
from harness import language_hooks
from harness.languages.base import Language
from harness.records import Problem
from harness.sandbox import SampleExecution


class CompiledLanguage:
    """The core's hooks for one target language (delegates to the language's machinery)."""

    def __init__(self, language: Language) -> None:
        self.language = language
        self.name = language.name
        self.title = language.title
        self.fence_tags = language.fence_tags
        self.completion_stops = language.completion_stops

    def instruction(self, prompt: str) -> str:
        return self.language.instruction(prompt)

    def entry_defined(self, code: str, name: str) -> bool:
        return self.language.entry_defined(code, name)

    def program(self, problem: Problem, code: str) -> tuple[str, bool]:
        return assemble.assemble(self.language, problem, code)

    def execute(
        self,
        problem: Problem,
        program: str,
        *,
        hide: tuple[str, ...],
        memory_mb: int,
        timeout_override_s: float | None,
    ) -> SampleExecution:
        return runner.execute(
            problem,
            program,
            hide=hide,
            memory_mb=memory_mb,
            timeout_override_s=timeout_override_s,
        )

    def worst_case_s(self, problem: Problem) -> float:
        return runner.worst_case_s(problem)

    def reports(
        self, row: Mapping[str, Any], problem: Problem, reports: Mapping[str, Any]
    ) -> dict[str, Any]:
        return rewards.native_reports(self.title, row, reports)

    def missing_parts(self, preset: str, parts: Mapping[str, float]) -> dict[str, str]:
        return rewards.missing_parts(self.title, preset, parts)


def register(language: Language) -> CompiledLanguage:
    """Make ``language`` known to the core (its hooks carry its definition)."""
    hooks = CompiledLanguage(language)
    language_hooks.register(hooks)
    return hooks
