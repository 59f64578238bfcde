"""Run a stdio program on its problem's tests and judge each one, in the trusted process.

:func:`execute` is what the core calls for a stdio problem (through the hooks in
:mod:`harness.stdio.hooks`), in place of the Python value path. It returns the sandbox's usual
:class:`SampleExecution`, one case per test, already judged: a test the program passed is
``ok`` with the values ``["passed", ""]``; a wrong answer is ``ok`` with
``["wrong_answer", "wrong_answer: token 3: expected '5', got '6'"]`` (the generated test asserts
``v[0] == 'passed'``); a time limit is ``timeout``; a runtime error, memory limit or output limit
is ``crashed`` with the verdict in its message; a fault of the harness is ``error``.
"""

from __future__ import annotations

import time
from collections.abc import Generator

import harness.stdio.native_runner as native_runner
import harness.stdio.python_runner as python_runner
from harness.records import EVERY_CASE, Problem
from harness.sandbox import CaseExecution, SampleExecution, Sandbox, SandboxSettings
from harness.sandbox.api import empty_resources
from harness.sandbox.shared import shared_sandbox
from harness.stdio.checkers import Comparison, compare, presentation_matches
from harness.stdio.outcome import (
    OUTPUT_LIMIT_BYTES,
    TestRun,
    Verdict,
    add_resources,
    run_failure,
)
from harness.stdio.problem import StdioSpec, stdio_spec
from harness.stdio.special import run_judge

NOT_RUN = "not run: an earlier test failed (only the verdict counts)"


def execute(
    problem: Problem,
    program: str,
    *,
    hide: tuple[str, ...] = (),
    memory_mb: int = 1024,
    timeout_override_s: float | None = None,
) -> SampleExecution:
    """Run ``program`` on every test of ``problem`` (or up to the first failure) and judge.

    ``memory_mb`` (the run's cap for function problems) is not used: a stdio problem carries
    its own memory limit. ``timeout_override_s`` (``--llm-timeout``) replaces its time limit.
    """
    started = time.monotonic()
    spec = stdio_spec(problem)
    limit_s = timeout_override_s or spec.time_limit_s
    case_ids = [case.case_id for case in problem.cases]
    inputs = [test.input for test in spec.tests]
    judge = _Judge(problem, spec, limit_s, hide)
    notes: list[str] = []
    if spec.language == "python":
        sandbox = python_sandbox(spec, hide)
        runs = python_runner.run_tests(sandbox, program, inputs, limit_s, judge.keep_going)
    else:
        try:
            prepared = native_runner.prepare(
                spec.language, program, hide=hide, memory_mb=spec.memory_mb
            )
        except Exception as exc:  # noqa: BLE001 - the sandbox or cache failed: not the sample
            return SampleExecution(cases={}, infra_error=f"{type(exc).__name__}: {exc}")
        if isinstance(prepared, native_runner.CompileFailure):
            cases = {c: CaseExecution(c, "crashed", message=prepared.message) for c in case_ids}
            return SampleExecution(
                cases=cases,
                stderr=prepared.log[-2000:],
                duration_s=time.monotonic() - started,
                notes=["compile failed"],
            )
        if not prepared.cached:
            notes.append(f"compiled in {prepared.compile_s:.2f}s")
        runs = native_runner.run_tests(prepared, inputs, limit_s, spec.memory_mb, judge.keep_going)
    try:
        results = judge.judge_all(case_ids, runs)
    except Exception as exc:  # noqa: BLE001 - a launch failure mid-run: the harness's fault
        return SampleExecution(cases={}, infra_error=f"{type(exc).__name__}: {exc}", notes=notes)
    finally:
        runs.close()  # tests queued ahead of a failure are collected, never judged
    if judge.stopped_early:
        notes.append("stopped at the first failed test")
    if judge.infra_error:
        return SampleExecution(cases={}, infra_error=judge.infra_error, notes=notes)
    return SampleExecution(
        cases=results,
        stderr=judge.stderr_tail,
        duration_s=time.monotonic() - started,
        max_rss_kb=int(judge.resources["max_rss_kib"]),
        notes=notes,
        resources=judge.resources,
    )


def python_sandbox(spec: StdioSpec, hide: tuple[str, ...]) -> Sandbox:
    """The warm Python fork server for this problem's memory limit (shared per settings)."""
    return shared_sandbox(
        SandboxSettings(
            memory_mb=spec.memory_mb + python_runner.PYTHON_MEMORY_SLACK_MB,
            max_output_bytes=OUTPUT_LIMIT_BYTES + 1,
            hide_paths=hide,
        )
    )


class _Judge:
    """Judges runs as they come, and tells the runner whether to go on."""

    def __init__(self, problem: Problem, spec: StdioSpec, limit_s: float, hide: tuple[str, ...]):
        self.problem = problem
        self.spec = spec
        self.limit_s = limit_s
        self.hide = hide
        self.last_passed = True
        # A partial-credit reward (harness.reward's every_case) needs every test's verdict.
        self.stop_at_first_failure = spec.stop_at_first_failure and not problem.metadata.get(
            EVERY_CASE
        )
        self.resources = empty_resources()
        self.stopped_early = False
        self.infra_error: str | None = None
        self.stderr_tail = ""

    def keep_going(self, run: TestRun) -> bool:
        """Called by the runner after each run (the verdict is already known by then)."""
        if run.end == "error":
            return False
        return self.last_passed or not self.stop_at_first_failure

    def judge_all(
        self, case_ids: list[str], runs: Generator[TestRun, None, None]
    ) -> dict[str, CaseExecution]:
        results: dict[str, CaseExecution] = {}
        for index, run in enumerate(runs):
            if run.end == "error":
                self.infra_error = run.detail or "the sandbox could not run a test"
                break
            case = self._case(case_ids[index], index, run)
            self.last_passed = (
                case.status == "ok" and bool(case.values) and case.values[0] == "passed"
            )
            if run.stderr_tail:
                self.stderr_tail = run.stderr_tail
            add_resources(self.resources, run.resources)
            results[case.case_id] = case
            if _is_syntax_error(run):  # no later test would parse either: a compile error
                message = f"compile error: {run.detail}"[:300]
                return {c: CaseExecution(c, "crashed", message=message) for c in case_ids}
        for case_id in case_ids:
            if case_id not in results:
                self.stopped_early = True
                results[case_id] = CaseExecution(case_id, "ok", values=["not_run", NOT_RUN])
        return results

    def _case(self, case_id: str, index: int, run: TestRun) -> CaseExecution:
        failure = run_failure(run, self.limit_s)
        if failure is not None:
            verdict, message = failure
            status = "timeout" if verdict == "time_limit" else "crashed"
            return CaseExecution(
                case_id, status, duration_s=run.duration_s, message=f"{verdict}: {message}"
            )
        test = self.spec.tests[index]
        comparison, verdict = self._compare(test.input, run.stdout, test.output)
        message = "" if comparison.passed else f"{verdict}: {comparison.message}"
        return CaseExecution(
            case_id,
            "ok",
            values=["passed" if comparison.passed else verdict, message],
            duration_s=run.duration_s,
        )

    def _compare(self, test_input: str, output: str, expected: str) -> tuple[Comparison, Verdict]:
        checker = self.spec.checker
        if checker.kind == "special":
            sandbox = python_sandbox(self.spec, self.hide)
            comparison, judge_failed = run_judge(
                sandbox, checker.judge_source, test_input, output, expected
            )
            return comparison, "judge_error" if judge_failed else "wrong_answer"
        comparison = compare(output, expected, checker)
        if (
            not comparison.passed
            and checker.kind == "exact"
            and presentation_matches(output.rstrip(), expected.rstrip())
        ):
            return comparison, "presentation_error"
        return comparison, "wrong_answer"


def _is_syntax_error(run: TestRun) -> bool:
    return run.end == "raised" and run.detail.startswith(
        ("SyntaxError", "IndentationError", "TabError")
    )
