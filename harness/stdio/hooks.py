"""The core's hooks for stdio programs, one per language (``stdio-python``, ``stdio-cpp``, ...).

A stdio problem's ``metadata["language"]`` names one of these, so the core asks them to prompt
for, assemble, run and score its samples (:mod:`harness.language_hooks`): the answer is a whole
program in a fenced block, run on each test by :mod:`harness.stdio.execute`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import harness.stdio.execute as stdio_execute
from harness import language_hooks
from harness.languages import get_language
from harness.languages import rewards as native_rewards
from harness.records import Problem
from harness.sandbox import SampleExecution
from harness.stdio.problem import LANGUAGE_PREFIX, STDIO_LANGUAGES, is_large, stdio_spec

JUDGE_SLACK_S = 10.0  # a special judge's run per test, and the start of a runtime

_PYTHON_FENCES = frozenset({"python", "py", "python3"})
_JAVA_NOTE = " Name the public class Main."


class StdioHooks:
    """What the core needs from one language's stdio programs."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.name = LANGUAGE_PREFIX + language
        if language == "python":
            self.title, self.fence, self.fence_tags = "Python", "python", _PYTHON_FENCES
        else:
            base = get_language(language)
            self.title, self.fence, self.fence_tags = base.title, base.fence, base.fence_tags
        self.completion_stops: tuple[str, ...] = ()  # a whole program: no stub to continue

    def instruction(self, prompt: str) -> str:
        """Ask for a whole program that reads stdin and writes stdout."""
        note = _JAVA_NOTE if self.language == "java" else ""
        return (
            f"Solve the following problem with a complete {self.title} program. It reads the "
            "input from standard input and writes the answer to standard output, with nothing "
            f"else printed.{note} Answer with the whole program in a single ```{self.fence} "
            f"code block.\n\n{prompt.strip()}"
        )

    def entry_defined(self, code: str, name: str) -> bool:
        return bool(code.strip())  # any code block is a whole program

    def program(self, problem: Problem, code: str) -> tuple[str, bool]:
        return code, True

    def execute(
        self,
        problem: Problem,
        program: str,
        *,
        hide: tuple[str, ...],
        memory_mb: int,
        timeout_override_s: float | None,
    ) -> SampleExecution:
        return stdio_execute.execute(
            problem,
            program,
            hide=hide,
            memory_mb=memory_mb,
            timeout_override_s=timeout_override_s,
        )

    def case_files(self, problem: Problem) -> dict[str, str]:
        """A large test's input and expected output, as files beside the generated module
        (``public_1.in``, ``public_1.out``; the module's docstring names them)."""
        spec = stdio_spec(problem)
        files = {}
        for case, test in zip(problem.cases, spec.tests, strict=True):
            if is_large(test):
                files[f"{case.case_id}.in"] = test.input
                files[f"{case.case_id}.out"] = test.output
        return files

    def worst_case_s(self, problem: Problem) -> float:
        spec = stdio_spec(problem)
        compile_s = 0.0 if self.language in ("python", "js") else 60.0
        per_test = (
            spec.time_limit_s + 1.0 + (JUDGE_SLACK_S if spec.checker.kind == "special" else 0)
        )
        return compile_s + per_test * len(spec.tests)

    def reports(
        self, row: Mapping[str, Any], problem: Problem, reports: Mapping[str, Any]
    ) -> dict[str, Any]:
        if self.language == "python":  # the analyzers read Python source: all of them apply
            return dict(reports)
        return native_rewards.native_reports(self.title, row, reports)

    def missing_parts(self, preset: str, parts: Mapping[str, float]) -> dict[str, str]:
        if self.language == "python":
            return {}
        return native_rewards.missing_parts(self.title, preset, parts)


def register_all() -> None:
    """Make ``stdio-python``, ``stdio-cpp``, ``stdio-java``, ``stdio-rs`` and ``stdio-js`` known."""
    for language in STDIO_LANGUAGES:
        language_hooks.register(StdioHooks(language))
