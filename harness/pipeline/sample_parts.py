"""A sample's cases in parts, when only its verdict is wanted: the first failed part ends it.

A problem whose loader sets ``metadata["stop_at_first_failure"]`` (EvalPlus's suites: hundreds of
inputs per problem, and evalplus itself stops at the first failure unless asked for details)
runs its cases in parts, all in one child of the fork server that waits at the end of each part
(``SampleRequest.pauses``) until the trusted side has judged it: every group of cases (``base``,
``plus``) starts a part of its own, and a large group is cut into parts whose cost grows
fourfold. A case's cost is the reference's measured time on it (calibration's
``reference_durations``) plus the harness's own per case; the first part of a group costs
about four parts' fixed cost (a round trip to the trusted side and a judging step), so a
correct program of cheap inputs runs a group in one or two parts and a wrong one wastes at
most a few milliseconds past its failure, while a group of slow inputs is cut finer. Without
measured times, parts grow by count (64, 256, 1024, ...). The trusted side judges each part as
it comes back and tells the child to go on, or stops it after a failed part, so a program wrong
on a base input costs only its base inputs, and a correct one a round trip per part more than
running every case at once.

The values still come back from the sandbox and are judged in the trusted process; only when
the child runs on changes. A reward that needs every case (partial credit), a run that asks
for every case's verdict, and ``--llm-per-case`` set ``metadata["every_case"]`` and get one part.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.pipeline.compile import oracle_group
from harness.records import EVERY_CASE, STOP_AT_FIRST_FAILURE, Problem
from harness.sandbox import CaseExecution, SampleExecution, SandboxSettings
from harness.sandbox.api import RESOURCE_KEYS, empty_resources

FIRST_PART = 64  # cases in a group's first part, when the reference's times are unknown
GROWTH = 4  # each next part of a group is this many times larger (in cases, or in cost)
# Seconds a part costs beside its cases, and the harness's own seconds per case (its value
# encoded, framed, forwarded, decoded and judged: ~30 us), to which the reference's time is
# added. PART_S was measured when each part was a child of its own (~4 ms of CPU); a part's
# end now costs ~0.3 ms of wall time (the round trip: benchmarks/evalplus_speed.py
# --parts-cost). Finer parts could save only part of what the failing programs run past their
# first failure (HumanEval+: ~0.5 s of CPU in all), so the cut is left as it was.
PART_S = 0.004
CASE_S = 0.00003
FIRST_COST_S = GROWTH * PART_S  # a group's first part, in estimated seconds
NOT_RUN = "not run: an earlier case failed (only the verdict counts)"
STOPPED_NOTE = "stopped at the first failed part of its cases"
# Of each of stdout and stderr, over all parts: what one child may write.
_OUTPUT_CAP = SandboxSettings().max_output_bytes

Part = tuple[int, int]  # case indexes [start, stop) of the problem's cases


def stops_at_first_failure(problem: Problem) -> bool:
    """Whether ``problem``'s samples run in parts that stop at the first failed one."""
    metadata = problem.metadata or {}
    return bool(metadata.get(STOP_AT_FIRST_FAILURE)) and not metadata.get(EVERY_CASE)


def parts_of(problem: Problem) -> tuple[Part, ...]:
    """The parts ``problem``'s cases run in, in order (one part: every case at once)."""
    count = len(problem.cases)
    if not stops_at_first_failure(problem) or count == 0:
        return ((0, count),)
    durations = (problem.metadata or {}).get("reference_durations") or {}
    parts: list[Part] = []
    start = 0
    while start < count:
        group = oracle_group(problem.cases[start].case_id)
        end = start
        while end < count and oracle_group(problem.cases[end].case_id) == group:
            end += 1
        ids = [case.case_id for case in problem.cases[start:end]]
        if all(case_id in durations for case_id in ids):
            costs = [CASE_S + float(durations[case_id]) for case_id in ids]
            parts += _by_cost(start, costs)
        else:
            parts += _by_count(start, end)
        start = end
    return tuple(parts)


def _by_count(start: int, end: int) -> list[Part]:
    """Parts of cases ``[start, end)`` of 64, 256, 1024, ... cases."""
    parts: list[Part] = []
    size = FIRST_PART
    while start < end:
        stop = min(end, start + size)
        parts.append((start, stop))
        start, size = stop, size * GROWTH
    return parts


def _by_cost(start: int, costs: list[float]) -> list[Part]:
    """Parts of the cases from ``start`` on, whose estimated ``costs`` they sum, each at most
    ``FIRST_COST_S``, then ``GROWTH`` times the one before (a case alone may cost more)."""
    parts: list[Part] = []
    budget = FIRST_COST_S
    index = 0
    while index < len(costs):
        stop, spent = index + 1, costs[index]
        while stop < len(costs) and spent + costs[stop] <= budget:
            spent += costs[stop]
            stop += 1
        parts.append((start + index, start + stop))
        index, budget = stop, budget * GROWTH
    return parts


def merged(executions: Sequence[SampleExecution]) -> SampleExecution:
    """The executions of a sample's parts as one: every case that ran, times and counters
    summed, the peak memory the largest, output kept up to one child's bound."""
    if len(executions) == 1:
        return executions[0]
    cases: dict[str, CaseExecution] = {}
    resources = empty_resources()
    notes: list[str] = []
    stdout = stderr = ""
    for part in executions:
        cases.update(part.cases)
        stdout += part.stdout[: max(0, _OUTPUT_CAP - len(stdout))]
        stderr += part.stderr[: max(0, _OUTPUT_CAP - len(stderr))]
        for key in RESOURCE_KEYS:
            value = part.resources.get(key, 0)
            resources[key] = (
                max(resources[key], value) if key == "max_rss_kib" else (resources[key] + value)
            )
        notes += [note for note in part.notes if note not in notes]
    return SampleExecution(
        cases=cases,
        stdout=stdout,
        stderr=stderr,
        duration_s=sum(part.duration_s for part in executions),
        max_rss_kb=max(part.max_rss_kb for part in executions),
        infra_error=next((p.infra_error for p in executions if p.infra_error), None),
        notes=notes,
        resources=resources,
    )
