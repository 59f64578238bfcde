"""Judge samples of a compiled suite: the one function the plugin's items and the in-process
path share, and the loop that judges a whole suite (or a worker's share of it) here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.gcpause import paused_gc
from harness.pipeline.cpu_budget import SAMPLE_BUDGET_S
from harness.pipeline.results import CaseOutcome, SampleOutcomes, build_row, execution_record
from harness.pipeline.runtime import READ_AHEAD, LoadedSuite, loaded_suite
from harness.pipeline.sample_parts import NOT_RUN, STOPPED_NOTE, Part, merged
from harness.pipeline.verdicts import (
    case_functions,
    judge_sample,
    load_check_module,
    prepare_oracle_cases,
)
from harness.records import Problem
from harness.sandbox import SampleExecution

Key = tuple[str, str]  # (task_id, sample_id)
CheckFunctions = Sequence[tuple[str, Callable[..., Any]]]


def judge_one(
    suite: LoadedSuite,
    key: Key,
    functions: CheckFunctions,
    *,
    upcoming: Iterable[Key] = (),
    on_execution: Callable[[SampleExecution, bool], None] | None = None,
) -> list[CaseOutcome]:
    """Run one sample in the suite's sandbox and judge every case in this (trusted) process.

    ``upcoming``: samples this process judges next; the fork server starts them now (read
    ahead). ``on_execution(execution, ran_here)`` is told of the execution before any check
    runs, so a caller can record it even if judging is cut short (a timeout guard, Ctrl-C).
    An infrastructure fault of the sandbox gets one fresh try.
    """
    # The collector waits until the sample is judged: its values, executions and verdicts are
    # trees that die with it, freed by reference counting. Collected while they live, they
    # would be walked and promoted to the old generations, whose full collections walk every
    # object the process keeps (a loaded suite's hundred thousand cases).
    with paused_gc():
        return _judge_whole_or_in_parts(suite, key, functions, upcoming, on_execution)


def _judge_whole_or_in_parts(
    suite: LoadedSuite,
    key: Key,
    functions: CheckFunctions,
    upcoming: Iterable[Key],
    on_execution: Callable[[SampleExecution, bool], None] | None,
) -> list[CaseOutcome]:
    suite.plan([key, *upcoming])  # this one first: plan() skips what is already queued
    if suite.in_parts(key[0]):
        return _judge_in_parts(suite, key, functions, on_execution)
    try:
        execution, ran_here = suite.execution_with_retry(*key)
    finally:
        suite.release(*key)
    if on_execution is not None:
        on_execution(execution, ran_here)
    return judge_sample(suite.problems[key[0]], functions, execution)


def _judge_in_parts(
    suite: LoadedSuite,
    key: Key,
    functions: CheckFunctions,
    on_execution: Callable[[SampleExecution, bool], None] | None,
) -> list[CaseOutcome]:
    """Judge a sample part by part (harness.pipeline.sample_parts) and run no part after a
    failed one: its cases are failed as not run. The checks of all parts share one sample's
    budget."""
    problem = suite.problems[key[0]]
    by_case = dict(functions)
    outcomes: list[CaseOutcome] = []
    executions: list[SampleExecution] = []
    spent = [0.0]  # CPU the checks used: decoding a part's values is not theirs
    run = suite.execution_parts(*key)
    try:
        for part in run:
            executions.append(part)
            execution = merged(executions)
            if on_execution is not None:
                on_execution(execution, True)
            if part.infra_error:
                return judge_sample(problem, functions, execution)
            judged, failed = _judge_parts_of(problem, suite.parts(key[0]), part, by_case, spent)
            outcomes += judged
            if failed:
                break
    finally:
        rest = run.stop()  # no part after a failed one is run
    if rest is not None:  # the output and accounting of the stopped child
        executions.append(rest)
        execution = merged(executions)
    judged_ids = {outcome.case_id for outcome in outcomes}
    not_run = [CaseOutcome(c, "failed", NOT_RUN) for c, _f in functions if c not in judged_ids]
    if on_execution is not None and (not_run or rest is not None):
        if not_run:
            execution.notes.append(f"{STOPPED_NOTE}: {len(not_run)} cases not run")
        on_execution(execution, True)
    return outcomes + not_run


def _judge_parts_of(
    problem: Problem,
    parts: Sequence[Part],
    execution: SampleExecution,
    by_case: dict[str, Callable[..., Any]],
    spent: list[float],
) -> tuple[list[CaseOutcome], bool]:
    """Judge the parts whose cases ``execution`` holds (a reply may hold several: the child's
    module failed, or the rest of the sample after a time-out), each in turn, up to the first
    that fails; and whether one failed. ``spent``: the checks' CPU so far, added to."""
    outcomes: list[CaseOutcome] = []
    for start, stop in parts:
        ids = [c.case_id for c in problem.cases[start:stop] if c.case_id in execution.cases]
        if not ids:
            continue
        prepare_oracle_cases(problem, ids)
        started = time.process_time()
        budget = SAMPLE_BUDGET_S - spent[0]
        judged = judge_sample(problem, [(c, by_case[c]) for c in ids], execution, budget)
        spent[0] += time.process_time() - started
        outcomes += judged
        if any(outcome.status != "passed" for outcome in judged):
            return outcomes, True
    return outcomes, False


def judge_suite(
    root: Path,
    keys: Sequence[Key] | None = None,
    emit: Callable[[dict[str, Any]], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """The ``results.jsonl`` rows of a compiled suite's samples (``keys``: only those), judged
    in this process, one row per sample always, in the order of ``keys``.

    ``emit`` is given each row as soon as it is built (a worker streams them back);
    ``on_start`` the index in ``keys`` of each sample before it is run and judged.
    """
    suite = loaded_suite(root)
    by_key = {(row["task_id"], row["sample_id"]): row for row in suite.sample_rows}
    keys = list(by_key) if keys is None else list(keys)
    functions: dict[str, CheckFunctions] = {}
    rows = []
    for index, key in enumerate(keys):
        if on_start is not None:
            on_start(index)
        problem = suite.problems[key[0]]
        outcomes = SampleOutcomes(problem.suite, key[0], key[1])

        def record(execution: SampleExecution, _ran_here: bool) -> None:
            outcomes.execution = execution_record(execution)  # noqa: B023 - used at once

        try:
            if key[0] not in functions:
                module = load_check_module(suite.module_paths[key[0]])
                functions[key[0]] = case_functions(problem, module)
            upcoming = keys[index + 1 : index + READ_AHEAD + 1]
            verdicts = judge_one(
                suite, key, functions[key[0]], upcoming=upcoming, on_execution=record
            )
        except Exception as exc:  # noqa: BLE001 - the harness's fault: this sample's row says so
            reason = f"not judged: {type(exc).__name__}: {exc}"[:300]
            verdicts = [CaseOutcome(c.case_id, "error", reason) for c in problem.cases]
        outcomes.cases = {v.case_id: v for v in verdicts}
        row = build_row(problem, outcomes, by_key[key])
        rows.append(row)
        if emit is not None:
            emit(row)
    return rows
