"""Efficiency against the median of the batch's passing samples, where no reference exists.

Properties of the analyzer on hand-built rows (hypothesis), the reward's treatment of a
missing yardstick, and the real paths: evaluate() (a trainer's batch), a pytest session with
xdist workers (the median is taken at the controller's session end), and a translated
language (JavaScript, no references at all).
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.analyzers import AnalyzerCache, Subject, run_analyzers
from harness.analyzers.efficiency import FLOOR_S, NO_YARDSTICK
from harness.evaluate import evaluate
from harness.records import CheckCase, Problem, Sample
from harness.reward import score_rows
from suites.humaneval import problem_from_record

CASES = ("c0", "c1", "c2")


def problem(task_id: str = "T/0", **metadata: Any) -> Problem:
    cases = tuple(CheckCase(c, f"assert f({i}) == {i}", "compare") for i, c in enumerate(CASES))
    return Problem(
        suite="toy", task_id=task_id, prompt="", entry_point="f", cases=cases, reference="",
        candidate_names=("f",), metadata=metadata,
    )  # fmt: skip


def row(task_id: str, sample_id: str, times: dict[str, float | None]) -> dict[str, Any]:
    """A row; a case with a time passed, a case with None failed."""
    cases = [
        {
            "case_id": c,
            "status": "passed" if times.get(c) is not None else "failed",
            "duration_s": times.get(c) if times.get(c) is not None else 0.0001,
            "message": "" if times.get(c) is not None else "assert 0 == 1",
        }
        for c in CASES
    ]
    passed = all(times.get(c) is not None for c in CASES)
    return {
        "suite": "toy", "task_id": task_id, "sample_id": sample_id,
        "status": "passed" if passed else "failed", "passed": passed, "error_kind": None,
        "cases": cases, "execution": {"max_rss_kb": 1000},
    }  # fmt: skip


def efficiency(rows: list[dict[str, Any]], problems: dict[str, Problem]) -> list[dict[str, Any]]:
    subjects = [Subject(r, problems[r["task_id"]], "") for r in rows]
    reports = run_analyzers(subjects, ["efficiency"], AnalyzerCache(Path("/nonexistent/x")))
    return [r["efficiency"] for r in reports]


# Seconds of a case, or None (the case failed); most samples pass most cases.
times_st = st.one_of(st.none(), st.floats(min_value=FLOOR_S, max_value=5.0, allow_nan=False))
sample_st = st.fixed_dictionaries({c: times_st for c in CASES})
batch_st = st.lists(sample_st, min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(batch_st, st.randoms(use_true_random=False))
def test_median_properties(samples: list[dict[str, float | None]], rnd: random.Random) -> None:
    p = problem()
    rows = [row("T/0", str(i), t) for i, t in enumerate(samples)]
    reports = efficiency(rows, {"T/0": p})
    medians = {
        c: statistics.median(t[c] for t in samples if t[c] is not None)
        for c in CASES
        if sum(t[c] is not None for t in samples) >= 2
    }
    for times, report in zip(samples, reports, strict=True):
        if not medians:  # one sample, or no case passed by two: named missing, never 0 or 1
            assert report["missing"] == NO_YARDSTICK and report["baseline"] is None
            continue
        assert report["baseline"] == "median" and "missing" not in report
        compared = [c for c in CASES if times[c] is not None and c in medians]
        if not compared:
            assert report["speed"] is None and report["cases"] == 0  # scores 0 in the reward
            continue
        assert 0.0 < report["speed"] <= 1.0
        expected = sum(medians[c] for c in compared) / sum(times[c] for c in compared)
        assert report["speed"] == pytest.approx(min(1.0, expected))
        if all(times[c] <= medians[c] for c in compared):
            assert report["speed"] == 1.0  # at or below the median on every case: full credit
    # The order of the batch does not matter, nor do other problems' samples in it.
    shuffled = list(range(len(rows)))
    rnd.shuffle(shuffled)
    others = [row("T/1", str(i), {c: 4.0 for c in CASES}) for i in range(3)]
    mixed = [rows[i] for i in shuffled] + others
    again = efficiency(mixed, {"T/0": p, "T/1": problem("T/1")})
    for position, index in enumerate(shuffled):
        assert again[position] == reports[index]


@settings(max_examples=40, deadline=None)
@given(batch_st, st.floats(min_value=1.0, max_value=50.0))
def test_median_speed_ignores_the_machines_pace(
    samples: list[dict[str, float | None]], factor: float
) -> None:
    """Every sample k times slower (a loaded machine): the same speeds."""
    p = {"T/0": problem()}
    rows = [row("T/0", str(i), t) for i, t in enumerate(samples)]
    slower = [
        row("T/0", str(i), {c: None if v is None else v * factor for c, v in t.items()})
        for i, t in enumerate(samples)
    ]
    for a, b in zip(efficiency(rows, p), efficiency(slower, p), strict=True):
        assert (a.get("speed") is None) == (b.get("speed") is None)
        if a.get("speed") is not None:
            assert a["speed"] == pytest.approx(b["speed"])


@settings(max_examples=40, deadline=None)
@given(batch_st, sample_st)
def test_a_sample_no_slower_than_another_scores_no_lower(
    samples: list[dict[str, float | None]], fast: dict[str, float | None]
) -> None:
    """Add a copy of ``fast`` made slower on every case: the faster one never scores lower."""
    slow = {c: None if v is None else v * 1.5 for c, v in fast.items()}
    batch = [*samples, fast, slow]
    reports = efficiency([row("T/0", str(i), t) for i, t in enumerate(batch)], {"T/0": problem()})
    a, b = reports[-2], reports[-1]
    if a.get("speed") is not None:
        assert a["speed"] >= b["speed"]


def test_the_reference_wins_where_one_was_timed() -> None:
    p = problem(reference_durations={c: 0.01 for c in CASES})
    rows = [row("T/0", str(i), {c: 0.02 for c in CASES}) for i in range(3)]
    for report in efficiency(rows, {"T/0": p}):
        assert report["baseline"] == "reference" and report["speed"] == pytest.approx(0.5)
    # A translated language never uses a timing of the Python reference.
    js = problem(reference_durations={c: 0.01 for c in CASES}, language="js")
    assert {r["baseline"] for r in efficiency(rows, {"T/0": js})} == {"median"}


def test_infrastructure_errors_are_not_peers() -> None:
    rows = [row("T/0", "a", {c: 0.01 for c in CASES}), row("T/0", "b", {c: 0.01 for c in CASES})]
    rows[1].update(status="error", error_kind="infra")
    assert efficiency(rows, {"T/0": problem()})[0]["missing"] == NO_YARDSTICK


def test_weighted_reward_scores_against_the_median_or_names_it_missing() -> None:
    p = {"T/0": problem()}
    program = "def f(x):\n    return x\n"
    rows = [row("T/0", s, {c: t for c in CASES}) for s, t in (("a", 0.01), ("b", 0.02))]
    for r in rows:
        r["program"] = program
    fast, slow = score_rows(rows, p, "weighted")
    assert fast["reward_parts"]["efficiency"] == pytest.approx(0.1)  # at the median (0.015)
    assert slow["reward_parts"]["efficiency"] == pytest.approx(0.1 * 0.015 / 0.02)
    assert fast["reward_range"] == [0.0, 1.0] and "reward_missing" not in fast
    (alone,) = score_rows(rows[:1], p, "weighted")  # one sample: nothing to compare with
    assert "efficiency" not in alone["reward_parts"]
    assert alone["reward_missing"] == {"efficiency": f"efficiency: {NO_YARDSTICK}"}
    assert alone["reward_range"] == [0.0, pytest.approx(0.9)]


# ---------------------------------------------------------------- real runs

UNIQUE_NO_REFERENCE = {
    "task_id": "Toy/unique",
    "prompt": 'def count_unique(xs):\n    """How many distinct values xs holds."""\n',
    "entry_point": "count_unique",
    "test": "def check(candidate):\n"
    "    assert candidate(list(range(1500))) == 1500\n"
    "    assert candidate(list(range(1000)) * 2) == 1000\n"
    "    assert candidate([]) == 0\n",
}
LINEAR = "    return len(set(xs))\n"
QUADRATIC = (
    "    seen = []\n    for x in xs:\n        if x not in seen:\n            seen.append(x)\n"
    "    return len(seen)\n"
)


def test_evaluate_scores_a_batch_against_its_median(tmp_path: Path) -> None:
    """A trainer's batch: three samples of a problem without a reference."""
    p = problem_from_record(UNIQUE_NO_REFERENCE, "toy")
    assert p.reference == ""
    samples = [
        Sample(p.task_id, LINEAR, "linear"),
        Sample(p.task_id, "    return len(dict.fromkeys(xs))\n", "linear2"),
        Sample(p.task_id, QUADRATIC, "quadratic"),
    ]
    rows = evaluate([p], samples, reward="weighted", out_dir=tmp_path / "batch")
    assert [r["status"] for r in rows] == ["passed"] * 3
    reports = {r["sample_id"]: r["analyzers"]["efficiency"] for r in rows}
    assert {r["baseline"] for r in reports.values()} == {"median"}
    assert reports["linear"]["speed"] == 1.0 == reports["linear2"]["speed"]
    assert reports["quadratic"]["speed"] < 0.5
    assert rows[2]["reward_parts"]["efficiency"] < rows[0]["reward_parts"]["efficiency"]
    # One sample alone: the part is named missing, not scored.
    (alone,) = evaluate([p], samples[:1], reward="weighted", out_dir=tmp_path / "alone")
    assert "efficiency" in alone["reward_missing"] and "efficiency" not in alone["reward_parts"]


def test_plugin_takes_the_median_over_the_whole_run_at_session_end(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two xdist workers the samples of a problem may be judged apart; the controller
    scores them together."""
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    suite = pytester.path / "problems.jsonl"
    suite.write_text(json.dumps(UNIQUE_NO_REFERENCE) + "\n")
    samples = pytester.path / "samples.jsonl"
    entries = [("linear", LINEAR), ("linear2", LINEAR), ("quadratic", QUADRATIC)]
    samples.write_text(
        "".join(
            json.dumps({"task_id": "Toy/unique", "sample_id": s, "completion": c}) + "\n"
            for s, c in entries
        )
    )
    out = pytester.path / "out"
    result = pytester.runpytest(
        "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(samples), "--llm-reward",
        "weighted", "--llm-out", str(out), "-p", "no:codeeval_gate", "-n", "2",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    rows = {r["sample_id"]: r for r in map(json.loads, (out / "results.jsonl").open())}
    reports = {s: r["analyzers"]["efficiency"] for s, r in rows.items()}
    assert {r["baseline"] for r in reports.values()} == {"median"}
    assert {r["peers"] for r in reports.values()} == {3}
    assert reports["quadratic"]["speed"] < reports["linear"]["speed"] == 1.0
    assert all("efficiency" in r["reward_parts"] for r in rows.values())


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_translated_language_scores_efficiency_against_the_median(tmp_path: Path) -> None:
    from suites.registry import load_suite

    (p,) = [q for q in load_suite("humaneval-js") if q.task_id == "js/HumanEval/0"]
    fixture = Path(__file__).parent / "fixtures" / "languages" / "samples.jsonl"
    body = next(
        r["completion"]
        for r in map(json.loads, fixture.open())
        if r["task_id"] == p.task_id and r["sample_id"] == "fixture"
    )
    samples = [Sample(p.task_id, body, "a"), Sample(p.task_id, body, "b")]
    rows = evaluate([p], samples, reward="weighted", out_dir=tmp_path)
    assert [r["status"] for r in rows] == ["passed", "passed"]
    for r in rows:
        assert r["analyzers"]["efficiency"]["baseline"] == "median"
        assert 0.0 < r["reward_parts"]["efficiency"] <= 0.1
        assert set(r["reward_missing"]) == {"quality"}  # radon/ruff/bandit read Python
        assert r["reward_range"] == [0.0, pytest.approx(0.9)]
