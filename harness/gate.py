"""The CI regression gate: per-problem comparison of a run against a baseline.

Everything here is a pure function over per-sample result rows (the ``results.jsonl`` shape):
no files, no pytest. The plugin (``plugin/gate.py``) and ``codeeval compare`` call it.

pass@1 of a problem is the fraction of its samples that passed; samples with status ``error``
(infrastructure or data faults) are left out, as in the summary's pass@k. The gate compares only
problems present in both runs, and fails a suite when

* the drop of mean pass@1 over those problems exceeds ``max_drop`` (absolute), and
* a one-sided paired test over problems says the drop is not noise at ``confidence``:
  exact McNemar on discordant pairs when both runs have one sample per problem, else a paired
  bootstrap over problems;

or when ``fail_under`` is set and the run's pass@1 is below it.

A suite of which no sample could be judged (every one an infrastructure or data error, e.g. a
suite whose problems all need an unfetched dependency overlay) has no pass@1. In the baseline
it cannot be regressed from: the suite is not compared, and a note says so. In the run it
fails the gate when the baseline judged that suite (what was measured is gone) and when a floor
is set (a floor that nothing was measured against is not met); the reason names the errors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

MCNEMAR = "exact McNemar (one-sided binomial test on discordant pairs)"
BOOTSTRAP = "paired bootstrap over problems (one-sided, centred)"


@dataclass(frozen=True)
class ProblemResult:
    """How one problem fared in one run: ``passed`` of ``samples`` scored samples."""

    passed: int
    samples: int

    @property
    def rate(self) -> float:
        return self.passed / self.samples if self.samples else 0.0


def problem_results(
    rows: Iterable[Mapping[str, Any]], suite: str | None = None
) -> dict[str, ProblemResult]:
    """Per-problem pass counts of one suite (all rows when ``suite`` is None).

    Rows with status ``error`` do not count; a problem with only such rows is absent.
    """
    passed: dict[str, int] = {}
    total: dict[str, int] = {}
    for row in rows:
        if suite is not None and row.get("suite") != suite:
            continue
        if row.get("status") == "error":
            continue
        task = str(row["task_id"])
        total[task] = total.get(task, 0) + 1
        passed[task] = passed.get(task, 0) + (1 if _row_passed(row) else 0)
    return {t: ProblemResult(passed[t], total[t]) for t in total}


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that puts ``HumanEval/2`` before ``HumanEval/10``."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text))


def _row_passed(row: Mapping[str, Any]) -> bool:
    if "passed" in row:
        return bool(row["passed"])
    return row.get("status") == "passed"


def mean_rate(results: Mapping[str, ProblemResult]) -> float:
    """Mean per-problem pass@1 (0.0 for no problems)."""
    if not results:
        return 0.0
    return math.fsum(r.rate for r in results.values()) / len(results)


def mcnemar_p(improved: int, regressed: int) -> float:
    """One-sided exact McNemar p-value that regressions outnumber improvements by chance.

    Under the null hypothesis each discordant pair is equally likely to go either way, so the
    number of pass→fail pairs is Binomial(improved + regressed, 1/2).
    """
    n = improved + regressed
    if n == 0:
        return 1.0
    # Exact tail P(X >= regressed) in integers (scipy.stats would cost seconds to import per
    # run); consecutive binomial coefficients follow from each other by one multiply-divide.
    coeff = math.comb(n, regressed)
    tail = 0
    for i in range(regressed, n + 1):
        tail += coeff
        coeff = coeff * (n - i) // (i + 1)
    # In logs, so that a tiny p-value of a huge run does not underflow to 0.
    return min(1.0, math.exp(math.log(tail) - n * math.log(2)))


def bootstrap_p(diffs: Iterable[float], resamples: int = 10_000, seed: int = 0) -> float:
    """One-sided paired-bootstrap p-value for "the mean difference is below zero".

    ``diffs`` are per-problem differences (current - baseline). The null distribution is the
    bootstrap distribution of the mean of the centred differences; the p-value is the share of
    it at or below the observed mean (with the usual +1 correction so it is never 0).
    """
    import numpy as np  # here: the gate of a run without a baseline never needs it

    d = np.asarray(list(diffs), dtype=float)
    if d.size == 0:
        return 1.0
    observed = float(d.mean())
    centred = d - observed
    if not np.any(centred):
        # Every problem moved by the same amount: no spread, no noise to speak of.
        return 1.0 if observed >= 0 else 1.0 / (resamples + 1)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(resamples, d.size))
    means = centred[idx].mean(axis=1)
    hits = int(np.count_nonzero(means <= observed + 1e-12))
    return (hits + 1) / (resamples + 1)


def bootstrap_interval(
    diffs: Iterable[float], confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile paired-bootstrap interval of the mean of per-problem ``diffs``."""
    import numpy as np

    d = np.asarray(list(diffs), dtype=float)
    if d.size == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    # Clamped to the sample's range: float rounding of a constant sample must not widen it.
    return (max(float(low), float(d.min())), min(float(high), float(d.max())))


@dataclass(frozen=True)
class ProblemChange:
    """A problem whose pass@1 differs between baseline and current run."""

    task_id: str
    baseline: float
    current: float


@dataclass
class SuiteVerdict:
    """The gate's finding for one suite."""

    suite: str
    current_pass1: float | None  # None: no sample of the suite could be judged in this run
    baseline_pass1: float | None = None  # None: no baseline, or none of its samples judged
    compared: int = 0
    drop: float = 0.0
    max_drop: float = 0.0
    test: str | None = None
    p_value: float | None = None
    confidence: float = 0.95
    significant: bool = False
    regressed: list[ProblemChange] = field(default_factory=list)
    improved: list[ProblemChange] = field(default_factory=list)
    only_baseline: list[str] = field(default_factory=list)
    only_current: list[str] = field(default_factory=list)
    fail_under: float | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said, but no failure

    @property
    def passed(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        return data


def compare_suite(
    suite: str,
    current: Mapping[str, ProblemResult],
    baseline: Mapping[str, ProblemResult] | None,
    *,
    max_drop: float = 0.0,
    confidence: float = 0.95,
    fail_under: float | None = None,
    resamples: int = 10_000,
    seed: int = 0,
) -> SuiteVerdict:
    """Compare one suite's per-problem results with a baseline's and decide.

    ``baseline`` None means only the floor (``fail_under``) applies. An empty ``current`` or
    ``baseline`` (no problem judged: only errors) is the module docstring's no-pass@1 case.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if max_drop < 0.0:
        raise ValueError(f"max_drop must be >= 0, got {max_drop}")
    verdict = SuiteVerdict(
        suite=suite,
        current_pass1=mean_rate(current) if current else None,
        max_drop=max_drop,
        confidence=confidence,
        fail_under=fail_under,
    )
    _check_floor(verdict)
    if baseline is None:
        return verdict
    if not baseline:
        verdict.notes.append(
            "the baseline judged no sample of this suite (all ended in errors): it has no "
            "pass@1, so nothing can regress from it; not compared"
        )
        verdict.only_current = sorted(current, key=natural_key)
        return verdict
    if not current:
        verdict.baseline_pass1 = mean_rate(baseline)
        verdict.only_baseline = sorted(baseline, key=natural_key)
        verdict.reasons.append(
            f"no sample of this suite could be judged in this run (all ended in errors), but "
            f"the baseline judged {len(baseline)} problem(s) at pass@1 "
            f"{verdict.baseline_pass1:.4f} (the run's errors and data errors say why)"
        )
        return verdict
    common = sorted(set(current) & set(baseline), key=natural_key)
    verdict.only_baseline = sorted(set(baseline) - set(current), key=natural_key)
    verdict.only_current = sorted(set(current) - set(baseline), key=natural_key)
    verdict.compared = len(common)
    if not common:
        # A baseline that shares no problem cannot vouch for this run: that is a failure too.
        verdict.baseline_pass1 = mean_rate(baseline)
        verdict.reasons.append("no problem in common with the baseline: nothing was compared")
        return verdict
    _compare_common(verdict, current, baseline, common, resamples, seed)
    # A tiny epsilon so that a drop equal to the tolerance (up to float noise) passes.
    if verdict.drop > max_drop + 1e-12 and verdict.significant:
        verdict.reasons.append(
            f"pass@1 dropped by {verdict.drop:.4f} (> {max_drop:.4f}) and the drop is "
            f"significant (p={verdict.p_value:.4g} < {1.0 - confidence:.4g})"
        )
    return verdict


def _check_floor(verdict: SuiteVerdict) -> None:
    """A reason when the run's pass@1 misses the floor (``fail_under``), or has none."""
    floor = verdict.fail_under
    if floor is None:
        return
    if verdict.current_pass1 is None:
        verdict.reasons.append(
            f"no sample of this suite could be judged (all ended in errors), so the floor "
            f"{floor:.4f} is not met"
        )
    elif verdict.current_pass1 < floor:
        verdict.reasons.append(f"pass@1 {verdict.current_pass1:.4f} is below the floor {floor:.4f}")


def _compare_common(
    verdict: SuiteVerdict,
    current: Mapping[str, ProblemResult],
    baseline: Mapping[str, ProblemResult],
    common: list[str],
    resamples: int,
    seed: int,
) -> None:
    """The drop, the changed problems and the test's p-value over the ``common`` problems:
    McNemar's test when every problem has one sample each side, else a paired bootstrap."""
    base = [baseline[t].rate for t in common]
    cur = [current[t].rate for t in common]
    verdict.baseline_pass1 = math.fsum(base) / len(base)
    verdict.drop = verdict.baseline_pass1 - math.fsum(cur) / len(cur)
    for task, b, c in zip(common, base, cur, strict=True):
        if c < b:
            verdict.regressed.append(ProblemChange(task, float(b), float(c)))
        elif c > b:
            verdict.improved.append(ProblemChange(task, float(b), float(c)))
    single = all(current[t].samples == 1 and baseline[t].samples == 1 for t in common)
    if single:
        verdict.test = MCNEMAR
        verdict.p_value = mcnemar_p(len(verdict.improved), len(verdict.regressed))
    else:
        verdict.test = BOOTSTRAP
        diffs = [c - b for b, c in zip(base, cur, strict=True)]
        verdict.p_value = bootstrap_p(diffs, resamples=resamples, seed=seed)
    verdict.significant = verdict.p_value < 1.0 - verdict.confidence


def format_verdict(v: SuiteVerdict, limit: int = 20) -> list[str]:
    """Human-readable lines for a terminal or a text report."""
    lines = [_headline(v)]
    if v.test is not None and v.p_value is not None:
        lines.append(
            f"  test: {v.test}: p={v.p_value:.4g} at confidence {v.confidence:g}"
            f" -> {'significant' if v.significant else 'within noise'}"
        )
    lines += _change_lines(v, limit)
    if v.only_baseline:
        lines.append(f"  {len(v.only_baseline)} problem(s) only in the baseline (not compared)")
    if v.only_current:
        lines.append(f"  {len(v.only_current)} problem(s) only in this run (not compared)")
    lines.extend(f"  note: {n}" for n in v.notes)
    lines.extend(f"  reason: {r}" for r in v.reasons)
    return lines


def _headline(v: SuiteVerdict) -> str:
    """The suite's pass@1, against the baseline and the floor where there are, and the verdict."""
    current = "n/a (no sample judged)" if v.current_pass1 is None else f"{v.current_pass1:.4f}"
    head = f"{v.suite}: pass@1 {current}"
    if v.baseline_pass1 is not None and v.compared:
        head += f" (baseline {v.baseline_pass1:.4f} on {v.compared} common problems"
        head += f", drop {v.drop:+.4f}, max drop {v.max_drop:.4f})"
    elif v.baseline_pass1 is not None:
        head += f" (baseline {v.baseline_pass1:.4f}, no problem compared)"
    if v.fail_under is not None:
        head += f", floor {v.fail_under:.4f}"
    return head + (" -- OK" if v.passed else " -- FAILED")


def _change_lines(v: SuiteVerdict, limit: int) -> list[str]:
    """The regressed and improved problems, ``limit`` named of each (pass->fail wording when
    every rate is 0 or 1, i.e. one sample per problem)."""
    binary = all(
        c.baseline in (0.0, 1.0) and c.current in (0.0, 1.0) for c in v.regressed + v.improved
    )
    titles = ("pass->fail", "fail->pass") if binary else ("worse", "better")
    lines = []
    for title, changes in zip(titles, (v.regressed, v.improved), strict=True):
        if changes:
            shown = ", ".join(_change(c) for c in changes[:limit])
            more = f", ... {len(changes) - limit} more" if len(changes) > limit else ""
            lines.append(f"  {title} ({len(changes)}): {shown}{more}")
    return lines


def _change(c: ProblemChange) -> str:
    if c.baseline in (0.0, 1.0) and c.current in (0.0, 1.0):
        return c.task_id
    return f"{c.task_id} ({c.baseline:.2f}->{c.current:.2f})"
