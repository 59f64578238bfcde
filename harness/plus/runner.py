"""Run the reference (and its mutants) on candidate inputs, in the real sandbox.

A reference solution is benchmark data, not trusted code, so it runs where samples run: the
fork server's isolated children, one request for a whole batch of inputs (one case per input,
each with its own time limit; a case that times out costs only its own limit, the server goes
on with the next). Expected values are what the sandbox's value channel sends back, decoded in
this process, exactly as a sample's values are during evaluation.

Mutants run inside the same sandbox through a small driver appended to the program: each
mutant is the whole program with one edit, executed in its own namespace, guarded by a real-time
timer (a mutant may loop forever) and compared with the reference there. Which mutants an input
kills only steers the choice of inputs; it never becomes an expected value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.pipeline.runtime import build_request
from harness.records import CheckCase, Problem
from harness.sandbox import Sandbox


class InfrastructureError(RuntimeError):
    """The sandbox could not run a batch: nothing from this generation may be cached."""


@dataclass(frozen=True)
class Run:
    """The reference on one input: ``ok`` with its value, or why not."""

    status: str
    value: Any = None
    duration_s: float = 0.0


def call_text(args: tuple[Any, ...], callee: str = "candidate") -> str:
    """``candidate(<args as literals>)``: the call the sandbox evaluates."""
    return f"{callee}({', '.join(repr(a) for a in args)})"


def run_batch(
    problem: Problem,
    program: str,
    calls: Sequence[str],
    sandbox: Sandbox,
    *,
    timeout_s: float,
    seed: int = 0,
) -> list[Run]:
    """Evaluate each expression of ``calls`` against ``program``; one :class:`Run` each."""
    if not calls:
        return []
    cases = tuple(
        CheckCase(f"probe_{i}", call, "compare", calls=(call,), check="", timeout_s=timeout_s)
        for i, call in enumerate(calls)
    )
    probe = dataclasses.replace(problem, cases=cases, defects=())
    execution = sandbox.run(build_request(probe, program, seed=seed))
    if execution.infra_error:
        raise InfrastructureError(execution.infra_error)
    runs = []
    for case in cases:
        result = execution.cases.get(case.case_id)
        if result is None:
            raise InfrastructureError(f"the sandbox returned nothing for {case.case_id}")
        if result.status == "error":
            raise InfrastructureError(result.message or "sandbox error")
        if result.status == "ok" and result.values:
            runs.append(Run("ok", result.values[0], result.duration_s))
        else:
            runs.append(Run(result.status, None, result.duration_s))
    return runs


def reference_runs(
    problem: Problem,
    program: str,
    inputs: Sequence[tuple[Any, ...]],
    sandbox: Sandbox,
    *,
    timeout_s: float,
    seed: int = 0,
    callee: str = "candidate",
) -> list[Run]:
    """The reference's run on each input (``callee``: the function ``program`` defines that the
    calls go to: the guarded reference of :func:`harness.plus.contracts.guarded_program`)."""
    calls = [call_text(args, callee) for args in inputs]
    return run_batch(problem, program, calls, sandbox, timeout_s=timeout_s, seed=seed)


_DRIVER = '''

def __plus_kills__(args, alarm_s, targets, spend_s):
    """Indices (of ``targets``) of the mutants whose answer differs from the reference's.

    Mutants are skipped once this process has spent ``spend_s`` on them, and a mutant that
    ran out of (or close to) its ``alarm_s`` twice is not tried again.
    """
    import copy as _copy
    import math as _math
    import signal as _signal
    import time as _time

    global __plus_functions__
    if __plus_functions__ is None:
        __plus_functions__ = []
        for _source in __plus_sources__:
            _ns = {"__name__": "solution"}
            try:
                exec(compile(_source, "<mutant>", "exec"), _ns)
                __plus_functions__.append(_ns.get(__plus_entry__))
            except BaseException:
                __plus_functions__.append(None)

    def _same(a, b):
        if type(a) is float or type(b) is float:
            try:
                return _math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
            except TypeError:
                return False
        if type(a) in (list, tuple) and type(b) is type(a):
            return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
        try:
            return bool(a == b)
        except BaseException:
            return False

    class _Late(BaseException):
        pass

    def _alarm(signum, frame):
        raise _Late()

    # The guarded reference where there is one: an input its contract refuses kills nothing.
    checked = globals().get("__plus_checked__") or globals()[__plus_entry__]
    reference = checked(*_copy.deepcopy(args))
    late = __plus_late__  # mutants that ran out of time twice are not tried again
    killed = []
    previous = _signal.signal(_signal.SIGALRM, _alarm)
    try:
        for index in targets:
            function = __plus_functions__[index]
            if function is None or late.get(index, 0) >= 2 or __plus_spent__[0] > spend_s:
                continue
            started = _time.perf_counter()
            try:
                _signal.setitimer(_signal.ITIMER_REAL, alarm_s)
                try:
                    answer = function(*_copy.deepcopy(args))
                finally:
                    _signal.setitimer(_signal.ITIMER_REAL, 0)
                differs = not _same(answer, reference)
            except _Late:
                differs = True
            except BaseException:
                differs = True
            took = _time.perf_counter() - started
            __plus_spent__[0] += took
            if took > alarm_s / 2:
                late[index] = late.get(index, 0) + 1
            if differs:
                killed.append(index)
    finally:
        _signal.signal(_signal.SIGALRM, previous)
    return killed
'''


def kill_runs(
    problem: Problem,
    program: str,
    mutant_sources: Sequence[str],
    inputs: Sequence[tuple[Any, ...]],
    sandbox: Sandbox,
    *,
    alarm_s: float,
    spend_s: float,
    targets: Sequence[Sequence[int]] | None = None,
) -> list[frozenset[int] | None]:
    """For each input, the mutants (indices into ``mutant_sources``) it tells from the reference.

    ``targets`` limits which mutants each input is tried against (default: all); ``spend_s``
    bounds the time spent on mutants in the batch. ``None`` for an input where the reference
    itself raised or the batch case timed out.
    """
    if not inputs or not mutant_sources:
        return [frozenset() for _ in inputs]
    driver = (
        program
        + _DRIVER
        + f"\n__plus_entry__ = {problem.entry_point!r}\n"
        + f"__plus_sources__ = {list(mutant_sources)!r}\n"
        + "__plus_functions__ = None\n"
        + "__plus_late__ = {}\n"
        + "__plus_spent__ = [0.0]\n"
    )
    everyone = list(range(len(mutant_sources)))
    calls = [
        f"__plus_kills__({args!r}, {alarm_s!r}, "
        f"{list(targets[i]) if targets else everyone!r}, {spend_s!r})"
        for i, args in enumerate(inputs)
    ]
    per_case = min(10.0, alarm_s * (len(mutant_sources) + 2) + 0.5)
    runs = run_batch(problem, driver, calls, sandbox, timeout_s=per_case)
    out: list[frozenset[int] | None] = []
    for run in runs:
        ok = run.status == "ok" and isinstance(run.value, list)
        out.append(frozenset(int(i) for i in run.value) if ok else None)
    return out
