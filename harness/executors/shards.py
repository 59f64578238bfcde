"""Splitting a batch by problem over workers, putting the rows back in order, and the rows of
a share whose worker died.

A problem's samples always go to one worker together: the worker compiles and calibrates the
problem once, numbers the sample ids of a task exactly as the local path does (they are
numbered within a task), and its analyzer cache sees the problem's repeats.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from harness.records import Problem, Sample, to_json


def split_by_problem(samples: Sequence[Sample], workers: int) -> list[list[int]]:
    """Indices of ``samples`` per share: at most ``workers`` non-empty shares, every task in
    exactly one, each share's indices ascending (the batch's order within a share).

    Balanced by sample count, largest task first onto the lightest share (LPT): no share
    exceeds the ideal ``len(samples) / workers`` by more than one task's samples. Ties go in
    the order tasks first appear, so the same batch always splits the same way.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1 (got {workers})")
    by_task: dict[str, list[int]] = {}
    for index, sample in enumerate(samples):
        by_task.setdefault(sample.task_id, []).append(index)
    groups = sorted(by_task.values(), key=lambda g: (-len(g), g[0]))
    count = min(workers, len(groups))
    heap = [(0, share) for share in range(count)]  # (samples so far, share)
    shares: list[list[int]] = [[] for _ in range(count)]
    for group in groups:
        load, share = heapq.heappop(heap)
        shares[share].extend(group)
        heapq.heappush(heap, (load + len(group), share))
    return [sorted(share) for share in shares]


def merge_rows(
    shares: Sequence[Sequence[int]], rows: Sequence[Sequence[dict[str, Any]]], total: int
) -> list[dict[str, Any]]:
    """The shares' rows (each in its share's order) back in the batch's order."""
    if len(shares) != len(rows):
        raise ValueError(f"{len(shares)} shares but {len(rows)} lists of rows")
    merged: list[dict[str, Any] | None] = [None] * total
    for indices, share_rows in zip(shares, rows, strict=True):
        if len(indices) != len(share_rows):
            raise ValueError(f"a share of {len(indices)} samples came back with {len(share_rows)}")
        for index, row in zip(indices, share_rows, strict=True):
            merged[index] = row
    missing = [i for i, row in enumerate(merged) if row is None]
    if missing:
        raise ValueError(f"no row for samples {missing[:5]} (the shares do not cover the batch)")
    return merged  # type: ignore[return-value]


def failed_rows(
    problems: Mapping[str, Problem], samples: Sequence[Sample], message: str
) -> list[dict[str, Any]]:
    """Rows with status ``error`` (kind ``infra``) for samples whose worker died: the same
    fields as a judged row, every case ``error``, the message in ``execution.infra_error``.
    A trainer masks them (reward ``None``) instead of scoring the model 0."""
    from harness.completions import assemble_program
    from harness.pipeline.results import CaseOutcome, SampleOutcomes, build_row
    from harness.sandbox.api import empty_resources

    rows = []
    for sample in samples:
        problem = problems[sample.task_id]
        assembled = assemble_program(problem, sample.completion)
        outcomes = SampleOutcomes(problem.suite, sample.task_id, sample.sample_id)
        outcomes.execution = {
            "duration_s": 0.0,
            "max_rss_kb": 0,
            "stdout": "",
            "stderr": "",
            "coverage": None,
            "notes": [],
            "infra_error": message,
            **empty_resources(),  # nothing ran
        }
        outcomes.cases = {
            c.case_id: CaseOutcome(c.case_id, "error", message) for c in problem.cases
        }
        record = {**to_json(sample), "program": assembled.program, "kind": assembled.kind}
        rows.append(build_row(problem, outcomes, record))
    return rows
