"""Judge one sample: run its problem's generated check functions over what the sandbox sent back.

Both ways of scoring a sample go through :func:`judge_sample`: the plugin's per-sample pytest
item (and, with ``--llm-per-case``, the ``sandbox`` fixture's :class:`SampleCheck`) and the
trainers' in-process path in :mod:`harness.evaluate`. So a verdict, and the message a failed case
carries, never depends on which path computed it.

A generated check function looks like::

    def test_case_1(sandbox):
        v = sandbox.values("case_1")
        assert abs(v[0] - 0.33) < 1e-06

It runs here, in the trusted process, with pytest's assertion rewriting, so a failed case's
message shows exactly what the candidate returned.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import marshal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

import pytest
from _pytest._code import ExceptionInfo
from _pytest.assertion import util as assertion_util
from _pytest.outcomes import Exit

from harness.memo import IdentityMemo
from harness.oracles import judge as judge_with_oracle
from harness.oracles import prepare as prepare_expected
from harness.paths import cache_dir, write_cache_file
from harness.pipeline import known_values
from harness.pipeline.compile import oracle_group
from harness.pipeline.cpu_budget import (
    CASE_BUDGET_S,
    SAMPLE_BUDGET_S,
    Budget,
    CheckBudgetExceeded,
    check_budget,
)
from harness.pipeline.results import CaseOutcome
from harness.records import CheckCase, Problem
from harness.sandbox import CaseExecution, SampleExecution

MAX_MESSAGE = 300
_EXPLANATION_LINES = 8


class SandboxInfrastructureError(RuntimeError):
    """The sandbox could not run the sample: an error of the harness, not of the sample."""


def _cpu_s() -> float:
    return time.process_time()


class SampleCheck:
    """What a generated test sees of its sample: the values its candidate calls returned."""

    def __init__(self, problem: Problem, execution: SampleExecution, report: dict[str, Any]):
        self.problem = problem
        self.execution = execution
        self._report = report

    def values(self, case_id: str) -> list[Any]:
        """The decoded values of the case's candidate calls; fails the test if there are none."""
        case = self._case(case_id)
        if case.status != "ok" or case.values is None:
            self._fail(case)
        return list(case.values)

    def judge(self, case_id: str) -> None:
        """For cases judged by a named oracle (harness.oracles): fails the test unless the
        oracle accepts the values the candidate's call returned."""
        values = self.values(case_id)
        case = case_index(self.problem)[case_id]
        why = judge_with_oracle(case.oracle, values, case.expected)
        if why is not None:
            pytest.fail(why[:MAX_MESSAGE], pytrace=False)

    def passed(self, case_id: str) -> None:
        """For checks that ran inside the sandbox: fails the test unless the check held."""
        case = self._case(case_id)
        if case.status != "ok":
            self._fail(case)

    def _case(self, case_id: str) -> CaseExecution:
        case = self.execution.cases.get(case_id)
        if case is None:
            self._report["sandbox_status"] = "error"
            raise SandboxInfrastructureError(f"the sandbox returned nothing for {case_id}")
        self._report["case_duration_s"] = case.duration_s
        return case

    def _fail(self, case: CaseExecution) -> None:
        self._report["sandbox_status"] = case.status
        if case.status == "error":
            raise SandboxInfrastructureError(case.message or "the sandbox failed on this case")
        pytest.fail(describe(case), pytrace=False)


def describe(case: CaseExecution) -> str:
    """Why a case failed inside the sandbox, in one line."""
    if case.status == "raised" and case.exception:
        text = f"candidate raised {case.exception.get('type')}: {case.exception.get('message', '')}"
    elif case.status == "assertion":
        text = "check failed inside the sandbox" + (f": {case.message}" if case.message else "")
    elif case.status == "timeout":
        text = case.message or "timed out"
    else:
        text = case.message or f"candidate {case.status}"
    return text[:MAX_MESSAGE]


def case_functions(problem: Problem, module: ModuleType) -> list[tuple[str, Callable[..., Any]]]:
    """``(case_id, function)`` for every case of ``problem``, from its generated module.

    An oracle case has no function of its own: its group's (``test_plus`` for ``plus_12``,
    parametrized by ``case_id``; see ``harness.pipeline.compile.oracle_group``) is called with its id.
    """
    found: list[tuple[str, Callable[..., Any]]] = []
    for case in problem.cases:
        function = getattr(module, f"test_{case.case_id}", None)
        if function is None and case.oracle:
            group = getattr(module, f"test_{oracle_group(case.case_id)}", None)
            if group is not None:
                function = functools.partial(group, case_id=case.case_id)
        if function is None:
            raise LookupError(f"{module.__name__} has no test_{case.case_id}: regenerate the suite")
        found.append((case.case_id, function))
    return found


def case_index(problem: Problem) -> dict[str, CheckCase]:
    """``{case_id: case}`` of ``problem`` (kept for the last few problems: an oracle case
    looks its expected output up once per sample)."""
    return _case_indexes.get(problem, lambda: {c.case_id: c for c in problem.cases})


_case_indexes: IdentityMemo[dict[str, CheckCase]] = IdentityMemo(limit=64)


def judge_sample(
    problem: Problem,
    functions: Sequence[tuple[str, Callable[..., Any]]],
    execution: SampleExecution,
    budget_s: float = SAMPLE_BUDGET_S,
) -> list[CaseOutcome]:
    """Run every check function of the sample; one outcome per case, in the problem's order.

    A sample the sandbox could not run (``infra_error``) gets ``error`` for every case.
    ``budget_s``: CPU seconds all these checks may spend here (a sample judged in parts
    passes what its earlier parts left).
    """
    if execution.infra_error:
        message = f"sandbox failure: {execution.infra_error}"
        return [CaseOutcome(c.case_id, "error", message) for c in problem.cases]
    prepare_oracle_cases(problem, [case_id for case_id, _function in functions])
    outcomes: list[CaseOutcome] = []
    spent_until = _cpu_s() + budget_s
    running: tuple[str, float] | None = None  # the case on the clock, and its seconds
    # The budget is armed once per sample and restarted per case (arming per case was a few
    # percent of a HumanEval sample's whole cost). Should its signal escape a case's own
    # handling (it repeats while armed), the case running then fails and the rest are not
    # checked.
    try:
        with stable_assert_messages(), check_budget(max(budget_s, 0.0)) as budget:
            for case_id, function in functions:
                executed = execution.cases.get(case_id)
                if executed is not None and executed.known:  # its oracle passed these values
                    outcomes.append(CaseOutcome(case_id, "passed", "", executed.duration_s))
                    continue
                seconds = min(CASE_BUDGET_S, spent_until - _cpu_s())
                running = (case_id, seconds)
                outcome = _judge_case(problem, case_id, function, execution, budget, seconds)
                outcomes.append(outcome)
                running = None
                if outcome.status == "passed" and executed is not None and executed.encoding:
                    known_values.passed_values.record(problem, executed)
    except CheckBudgetExceeded:
        pass
    judged = {o.case_id for o in outcomes}
    for case_id, _function in functions:
        if case_id not in judged:
            seconds = running[1] if running is not None and running[0] == case_id else 0.0
            outcomes.append(CaseOutcome(case_id, "failed", _over_budget(seconds)))
    return outcomes


def prepare_oracle_cases(problem: Problem, case_ids: Sequence[str]) -> None:
    """Parse and decode the expected outputs of these oracle cases now (once per process):
    they are trusted data, and their cost must not count against the checks' budget.

    The cases already prepared for the problem are passed by (each part of each sample asks
    again for its cases, twice: a problem's samples asked 900,000 times for HumanEval+'s
    165,000 cases). Kept for the last few problems only, which :func:`prepare_expected`'s
    parses outlive (a worker judges a problem's samples together)."""
    index = case_index(problem)
    done = _prepared_cases.get(problem, set)
    for case_id in case_ids:
        if case_id in done:
            continue
        case = index.get(case_id)
        if case is not None and case.oracle and case.expected:
            prepare_expected(case.expected)
        done.add(case_id)


_prepared_cases: IdentityMemo[set[str]] = IdentityMemo(limit=8)


def _judge_case(
    problem: Problem,
    case_id: str,
    function: Callable[..., Any],
    execution: SampleExecution,
    budget: Budget,
    seconds: float,
) -> CaseOutcome:
    report: dict[str, Any] = {}
    try:
        if seconds <= 0:
            raise CheckBudgetExceeded()
        budget.restart(seconds)
        function(SampleCheck(problem, execution, report))
        budget.pause()
    except (KeyboardInterrupt, Exit):
        budget.pause()
        raise
    except CheckBudgetExceeded:
        budget.pause()
        status, message = "failed", _over_budget(seconds)
    except BaseException as exc:  # noqa: B036 - a check may raise anything (its verdict)
        budget.pause()
        status, message = case_status(exc, report), failure_message(exc)
    else:
        status, message = "passed", ""
    return CaseOutcome(case_id, status, message, float(report.get("case_duration_s", 0.0)))


def _over_budget(budget: float) -> str:
    """The message of a case the sample's check budget stopped (``budget`` 0: a later case)."""
    if budget <= 0:
        return f"not checked: the sample's checks already used their {SAMPLE_BUDGET_S:g} s budget"
    return (
        f"the check ran past its budget ({budget:.2g} s of CPU in the trusted process): "
        "the candidate's value is too costly to compare"
    )


def case_status(exc: BaseException, report: dict[str, Any]) -> str:
    """failed / timeout / error for a check that raised."""
    if isinstance(exc, SandboxInfrastructureError):
        return "error"
    sandbox_status = report.get("sandbox_status")
    if sandbox_status in ("timeout", "error"):
        return sandbox_status
    return "failed"


def failure_message(exc: BaseException) -> str:
    """The message pytest shows for ``exc`` (its crash line), capped."""
    if type(exc) is _FAILED and isinstance(exc.msg, str) and not getattr(exc, "__notes__", None):
        # pytest.fail(why): pytest's own line, "Failed: why", without formatting a traceback
        # (an oracle fails hundreds of a wrong program's inputs this way)
        text = f"Failed: {exc.msg}" if exc.msg else "Failed"
    else:
        text = ExceptionInfo.from_exception(exc).exconly(tryshort=True)
    return text.strip()[:MAX_MESSAGE]


_FAILED = pytest.fail.Exception


class _PlainConfig:
    """What pytest's comparison explainer reads from a config, fixed: verbosity 0, no colour.

    A case's message is data (results.jsonl, feedback to a model): it must not change with
    ``-v``, the terminal or a CI variable.
    """

    class _Writer:
        @staticmethod
        def _highlight(source: str, lexer: str = "python") -> str:
            return source

    def get_verbosity(self, kind: str = "") -> int:
        return 0

    def getoption(self, name: str, default: Any = None) -> Any:
        return 0 if name == "verbose" else default

    def get_terminal_writer(self) -> Any:
        return self._Writer()


_PLAIN_CONFIG = _PlainConfig()


def _explain(op: str, left: object, right: object) -> str | None:
    """pytest's explanation of a failed comparison, as its assertion plugin formats it."""
    try:
        lines = assertion_util.assertrepr_compare(_PLAIN_CONFIG, op, left, right)
    except Exception:  # noqa: BLE001 - an explanation is a courtesy, never a verdict
        return None
    if not lines:
        return None
    lines = [line.replace("\n", "\\n") for line in lines[:_EXPLANATION_LINES]]
    return "\n~".join(lines).replace("%", "%%")


@contextlib.contextmanager
def stable_assert_messages() -> Iterator[None]:
    """Rewritten asserts explain comparisons the same way in every session and path."""
    saved = assertion_util._reprcompare
    assertion_util._reprcompare = _explain
    try:
        yield
    finally:
        assertion_util._reprcompare = saved


_check_modules: dict[tuple[str, int, int], ModuleType] = {}


def load_check_module(path: Path) -> ModuleType:
    """A generated test module, imported with pytest's assertion rewriting.

    The plugin's per-sample items and the in-process path both import generated modules
    through here: the same rewriting pytest applies, so a failed case's message is the same on
    both. The rewritten code is cached on disk by source, path and versions (pytest's own
    cache is skipped under PYTHONDONTWRITEBYTECODE, and workers would each redo it), and in
    memory by the file's path, size and modification time. On disk the key is the source
    alone, not its path: a trainer compiles the same checks into a new folder every batch, and
    each run of ``pytest --llm-eval`` into its own ``--llm-out``.
    """
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    module = _check_modules.get(key)
    if module is None:
        module = ModuleType(f"codeeval_checks_{len(_check_modules)}")
        module.__file__ = str(path)
        exec(_rewritten_code(path), module.__dict__)
        if len(_check_modules) > 4096:  # a trainer compiles a suite per batch
            _check_modules.clear()
        _check_modules[key] = module
    return module


def _rewritten_code(path: Path) -> CodeType:
    from _pytest.assertion.rewrite import rewrite_asserts

    source = path.read_bytes()
    tag = f"{pytest.__version__}\0{sys.version}\0".encode()
    digest = hashlib.sha256(tag + source).hexdigest()[:32]
    cached = _code_cache_dir() / f"{digest}.marshal"
    try:
        return _with_filename(marshal.loads(cached.read_bytes()), str(path))
    except (OSError, ValueError, EOFError, TypeError):
        pass
    tree = ast.parse(source, filename=str(path))
    rewrite_asserts(tree, source, str(path), None)
    code = compile(tree, str(path), "exec", dont_inherit=True)
    write_cache_file(cached, marshal.dumps(code))
    return code


def _with_filename(code: CodeType, filename: str) -> CodeType:
    """``code`` (and the functions' code within it) as compiled from ``filename``, for
    tracebacks and pytest's failure reports."""
    if code.co_filename == filename:
        return code
    consts = tuple(
        _with_filename(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


def _code_cache_dir() -> Path:
    return cache_dir() / "checks"
