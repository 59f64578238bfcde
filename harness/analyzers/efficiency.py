"""efficiency: the sample's runtime against a yardstick on the same cases, and its peak memory.

Each case's yardstick (``baseline``) is one of:

- ``reference``: the reference solution's time on the case,
  ``problem.metadata["reference_durations"]`` (measured in the same sandbox by
  harness.pipeline.timeouts), for a Python problem whose reference was timed;
- ``median``: otherwise (a problem without a reference: a user's JSONL problem without
  ``canonical_solution``, and every translated language, which has no references at all), the
  median time of the samples **of the same batch** that passed that case, when at least
  :data:`MIN_PEERS` of them did (the sample itself included: it is one of the samples).

A batch is what one call scores together (``score_rows``): every sample of a run at the
plugin's session end, one ``harness.evaluate.evaluate()`` call for a trainer (a GRPO group, a
MAGRPO turn). So the median compares a sample with its siblings on the same problem, on the
same machine, in the same run.

Only cases the sample passed are compared (a wrong answer that returns early is not fast).
``speed`` is yardstick time / sample time summed over those cases, capped at 1.0: as fast as
the reference (or as the median passing sample) or faster scores 1; a sample that passed no
case with a yardstick scores 0. Case times below :data:`FLOOR_S` count as the floor on both
sides. When a problem has no yardstick for any case in the batch (no reference, and fewer
than two samples passed any one case, e.g. one sample per problem) the report is
``{"missing": why, ...}``, and the reward leaves efficiency out and names it in
``reward_missing`` instead of scoring it 0.

``traced`` says the sample ran under coverage.py's tracer (the reward asked for coverage):
its timings are then slower than untraced ones, so the reference must be timed the same way
(the caller's ``reference_durations`` should come from a run with the same settings); the
samples of one batch always ran with the same settings.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from harness.analyzers.base import Report, Subject
from harness.language_hooks import language_of

# Case timings below 1 ms are call overhead and noise, not the algorithm: both sides get
# this floor, so a fast solution is not ranked by jitter.
FLOOR_S = 1e-3
# A median of one sample is the sample itself: it says nothing about it.
MIN_PEERS = 2
NO_YARDSTICK = (
    f"no reference solution to time against, and fewer than {MIN_PEERS} samples of this "
    "problem in the batch passed any one case to take the median of"
)


class EfficiencyReport(TypedDict, total=False):
    cases: int
    sample_s: float | None
    reference_s: float | None  # the yardstick's time on the compared cases
    ratio: float | None  # sample time / yardstick time
    speed: float | None  # min(1, yardstick / sample)
    baseline: str | None  # "reference", "median", or None (missing)
    peers: int | None  # median: samples of the batch that passed some case of the problem
    max_rss_kb: int | None
    traced: bool
    missing: str  # only when there is no yardstick


class EfficiencyAnalyzer:
    name = "efficiency"
    version = "2"
    static = False

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]:
        medians = batch_medians(subjects)
        return [dict(efficiency_report(s, medians.get(_problem_key(s)))) for s in subjects]


def _problem_key(subject: Subject) -> tuple[str, str]:
    return str(subject.row.get("suite", "")), str(subject.row.get("task_id", ""))


def has_reference_times(subject: Subject) -> bool:
    """Whether the problem's reference was timed (never for a translated language: its
    timings would be the Python reference's)."""
    problem = subject.problem
    if problem is None:
        return False
    if language_of(problem) is not None:
        return False
    return bool(problem.metadata.get("reference_durations"))


def passed_times(row: Mapping[str, Any]) -> Iterable[tuple[str, float]]:
    """``(case_id, seconds)`` of each case the row passed with a measured time (floored)."""
    if row.get("status") == "error" and row.get("error_kind") in ("infra", "data"):
        return  # never ran as the model's program
    for case in row.get("cases") or []:
        if case.get("status") == "passed" and case.get("duration_s") is not None:
            yield str(case.get("case_id")), max(float(case["duration_s"]), FLOOR_S)


def batch_medians(
    subjects: Sequence[Subject],
) -> dict[tuple[str, str], tuple[dict[str, float], int]]:
    """Per problem without reference times: ``({case_id: median seconds}, peers)`` over the
    batch's samples that passed each case (cases with fewer than MIN_PEERS are left out)."""
    times: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    peers: dict[tuple[str, str], int] = defaultdict(int)
    for subject in subjects:
        if subject.problem is None or has_reference_times(subject):
            continue
        key = _problem_key(subject)
        found = False
        for case_id, seconds in passed_times(subject.row):
            times[key][case_id].append(seconds)
            found = True
        peers[key] += found
    out = {}
    for key, per_case in times.items():
        medians = {c: statistics.median(v) for c, v in per_case.items() if len(v) >= MIN_PEERS}
        out[key] = (medians, peers[key])
    return out


def efficiency_report(
    subject: Subject, medians: tuple[dict[str, float], int] | None = None
) -> EfficiencyReport:
    """The report of one sample; ``medians`` from :func:`batch_medians` for a problem without
    reference times (without them, such a problem's efficiency is missing)."""
    execution = subject.row.get("execution") or {}
    rss = execution.get("max_rss_kb")
    traced = bool(execution.get("coverage"))
    if has_reference_times(subject):
        assert subject.problem is not None
        yardstick = dict(subject.problem.metadata["reference_durations"])
        baseline, peers = "reference", None
    elif medians is not None and medians[0]:
        yardstick, peers = medians
        baseline = "median"
    else:
        return {"missing": NO_YARDSTICK, "baseline": None, "max_rss_kb": rss, "traced": traced}
    sample_s = reference_s = 0.0
    compared = 0
    for case_id, seconds in passed_times(subject.row):
        ref = yardstick.get(case_id)
        if ref is None:
            continue
        sample_s += seconds
        reference_s += max(float(ref), FLOOR_S)
        compared += 1
    report: EfficiencyReport = {
        "cases": compared, "sample_s": None, "reference_s": None, "ratio": None, "speed": None,
        "baseline": baseline, "peers": peers, "max_rss_kb": rss, "traced": traced,
    }  # fmt: skip
    if compared:
        ratio = sample_s / reference_s
        report.update(
            sample_s=sample_s, reference_s=reference_s, ratio=ratio, speed=min(1.0, 1.0 / ratio)
        )
    return report
