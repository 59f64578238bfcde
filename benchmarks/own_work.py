"""The programs' own work: a set of programs run bare, a fork each, with no judging at all.

Each program runs bare in a forked child (no sandbox, no channel, no judging): its inputs
evaluated in order, 2 programs at a time, as the tools run them. What it runs is what any
evaluator must run to reach the same verdicts:

- every input, or, in the default mode, the inputs up to the first one a verdict fails on
  (``stop_after``: the case a tool's row names as its first failure);
- a call past its limit is cut there and ends its program, as a timeout ends a sample;
  the limits are evalplus's, the lower of the two tools': ``max(1 s, 4 x`` the reference's
  own time on that input, measured here first).

Each input's text is compiled before the clock starts, once per problem, in the process that
forks the pool (the pool's processes inherit it): an evaluator can parse its inputs once per
problem (the project's fork server does), so a floor that parsed them per program would be
higher than what a tool must pay.

The wall time of that is what an evaluator that forks each program in turn, in the given
order, from a process holding the whole benchmark, pays for running them: a tool that judged
in no time at all but ran the programs that way. It is not a bound on every tool: one that
orders its work by cost and forks from a small warm process can beat it (the project did, at
0.98x of it on 2026-12-07). The bound for any order of inputs and any schedule is
:func:`least_work_s`: the CPU each verdict needs, shared perfectly over the workers.
``benchmarks/evalplus_speed.py`` prints both beside each tool.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import signal
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from types import CodeType

from harness.completions import assemble_program
from harness.records import Problem

MIN_LIMIT_S = 1.0  # evalplus's DEFAULT_MIN_TIME_LIMIT
LIMIT_FACTOR = 4.0  # evalplus's DEFAULT_GT_TIME_LIMIT_FACTOR
MEMORY_BYTES = 8 << 30


@dataclass(frozen=True)
class Job:
    problem: Problem
    source: str
    limits: Mapping[str, float] | None  # None: the reference's pass, no limits but a backstop
    stop_after: str | None = None  # the case after which the program's verdict is known


# Each problem's inputs, compiled: (the prelude, the calls) of each case, by the problem's
# inputs' text. Filled in the process that forks the pools (:func:`compile_inputs`).
_Inputs = tuple[tuple[CodeType | None, tuple[CodeType, ...]], ...]
_COMPILED: dict[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], _Inputs] = {}


def _inputs_key(problem: Problem) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    return problem.task_id, tuple((case.prelude, tuple(case.calls)) for case in problem.cases)


def compiled_inputs(problem: Problem) -> _Inputs:
    """``problem``'s inputs compiled (once per process: kept for the processes it forks)."""
    key = _inputs_key(problem)
    if key not in _COMPILED:
        _COMPILED[key] = tuple(
            (
                compile(case.prelude, "<input>", "exec") if case.prelude else None,
                tuple(compile(call, "<input>", "eval") for call in case.calls),
            )
            for case in problem.cases
        )
    return _COMPILED[key]


def compile_inputs(problems: Sequence[Problem]) -> None:
    """Compile every problem's inputs here, before a pool forks from this process."""
    for problem in problems:
        compiled_inputs(problem)


def _pool(workers: int) -> ProcessPoolExecutor:
    """A pool whose processes are forked from this one (so they hold its compiled inputs)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))


class _Late(BaseException):
    """A call past its limit (a BaseException: programs that catch Exception do not eat it)."""


def _late(*_: object) -> None:
    raise _Late


def _run_in_child(job: Job, report_fd: int) -> None:
    """Run ``job``'s program on its inputs and write ``{case_id: cpu seconds}`` to the fd."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    limits = job.limits
    backstop = 600 if limits is None else int(sum(limits.values())) + 5
    resource.setrlimit(resource.RLIMIT_CPU, (backstop, backstop))
    signal.signal(signal.SIGALRM, _late)
    problem = job.problem
    namespace: dict[str, object] = {}
    times: dict[str, float] = {}
    try:
        exec(compile(assemble_program(problem, job.source).program, "<program>", "exec"), namespace)
        exec(problem.test_setup, namespace)
        for name in problem.candidate_names:
            namespace[name] = namespace.get(problem.entry_point)
        for case, (prelude, calls) in zip(problem.cases, compiled_inputs(problem), strict=True):
            limit = None if limits is None else limits.get(case.case_id, MIN_LIMIT_S)
            started = time.process_time()
            if limit is not None:
                signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                if prelude is not None:
                    exec(prelude, namespace)
                for call in calls:
                    eval(call, namespace)
            except _Late:
                break
            except BaseException:  # the program raised: a failed input, the next one runs
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                times[case.case_id] = time.process_time() - started
            if case.case_id == job.stop_after:
                break
    except BaseException:  # the program does not load: nothing more to run
        pass
    os.write(report_fd, json.dumps(times).encode())


def run_job(job: Job) -> dict[str, float]:
    """``job`` in a forked child; the CPU seconds of each input it ran."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            _run_in_child(job, write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b"{}")


def reference_limits(problems: Sequence[Problem], workers: int) -> dict[str, dict[str, float]]:
    """``{task_id: {case_id: limit}}`` from each reference's own time on each input."""
    compile_inputs(problems)
    with _pool(workers) as pool:
        timings = pool.map(run_job, [Job(p, p.reference, None) for p in problems])
        return {
            problem.task_id: {k: max(MIN_LIMIT_S, LIMIT_FACTOR * t) for k, t in times.items()}
            for problem, times in zip(problems, timings, strict=True)
        }


def first_failure(row: Mapping[str, object]) -> str | None:
    """The case a row's verdict fails on first (None: it passed every input it ran)."""
    for case in row.get("cases", ()):  # type: ignore[union-attr]
        if case["status"] != "passed":
            return str(case["case_id"])
    return None


def least_cost_s(times: Mapping[str, float], statuses: Mapping[str, str]) -> float:
    """The least CPU a verdict of one program needs: every input when it passes them all
    (none may be skipped), else its cheapest failed input alone (an evaluator that guessed
    the right one first). ``times``: each input's CPU run bare; ``statuses``: each input's
    verdict with every input judged."""
    if not statuses:  # a program no run could judge: the least it might have cost
        return min(times.values(), default=0.0)
    # A failed input past a time-out is not reached bare: the time-out is then among these.
    failed = [times[c] for c, status in statuses.items() if status != "passed" and c in times]
    return min(failed) if failed else sum(times.values())


def least_work_s(
    problems: Sequence[Problem],
    programs: Sequence[tuple[str, str, Mapping[str, str]]],
    *,
    workers: int = 2,
) -> float:
    """The default mode's floor for any evaluator, any order of inputs: each program's
    :func:`least_cost_s` (``(task_id, source, {case_id: status})``, the statuses of a run that
    judged every input), summed and shared perfectly over ``workers`` cores. No fork, no
    module load, no scheduling counted: a bound, lower than any run can be."""
    jobs = _bare_jobs(problems, [(task, source, None) for task, source, _ in programs], workers)
    with _pool(workers) as pool:
        timings = list(pool.map(run_job, jobs))
    cpu = sum(
        least_cost_s(times, statuses)
        for times, (_, _, statuses) in zip(timings, programs, strict=True)
    )
    return cpu / workers


def own_work_s(
    problems: Sequence[Problem],
    programs: Sequence[tuple[str, str, str | None]],
    *,
    workers: int = 2,
) -> float:
    """Seconds to run ``programs`` (``(task_id, source, stop_after)``) bare, ``workers`` at a
    time, with evalplus's limits measured from the references first (not timed)."""
    jobs = _bare_jobs(problems, programs, workers)
    start = time.perf_counter()
    with _pool(workers) as pool:
        list(pool.map(run_job, jobs))
    return time.perf_counter() - start


def _bare_jobs(
    problems: Sequence[Problem], programs: Sequence[tuple[str, str, str | None]], workers: int
) -> list[Job]:
    """A :class:`Job` per ``(task_id, source, stop_after)``, with evalplus's limits measured
    from the references first (not timed)."""
    limits = reference_limits(problems, workers)
    by_id = {p.task_id: p for p in problems}
    return [Job(by_id[task], source, limits[task], stop) for task, source, stop in programs]
