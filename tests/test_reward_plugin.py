"""``pytest --llm-eval ... --llm-reward weighted``: the reward keys in OUT/results.jsonl."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

PROBLEMS = [
    {
        "task_id": "Toy/add",
        "prompt": 'def add(a, b):\n    """Return a + b."""\n',
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n"
        "    assert candidate(1, 2) == 3\n"
        "    assert candidate(0, 0) == 0\n"
        "    assert candidate(-1, 1) == 0\n",
    }
]
SAMPLES = [
    {"task_id": "Toy/add", "sample_id": "right", "completion": "    return a + b\n"},
    {"task_id": "Toy/add", "sample_id": "wrong", "completion": "    return a - b\n"},
    {"task_id": "Toy/add", "sample_id": "broken", "completion": "    return a +\n"},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_llm_reward_weighted_adds_analyzers_reward_parts_and_feedback(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    suite = write_jsonl(pytester.path / "problems.jsonl", PROBLEMS)
    samples = write_jsonl(pytester.path / "samples.jsonl", SAMPLES)
    out = pytester.path / "out"
    result = pytester.runpytest(
        "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(samples),
        "--llm-reward", "weighted", "--llm-out", str(out), "-p", "no:codeeval_gate",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the wrong and broken samples fail
    rows = {r["sample_id"]: r for r in map(json.loads, (out / "results.jsonl").open())}
    for row in rows.values():
        assert {"analyzers", "reward", "reward_parts", "reward_range", "feedback"} <= set(row)
        assert set(row["analyzers"]) == {
            "syntax", "structure", "tests", "coverage", "radon", "bandit", "style", "efficiency",
        }  # fmt: skip
        assert sum(row["reward_parts"].values()) == pytest.approx(row["reward"])
    assert rows["right"]["reward"] > rows["wrong"]["reward"] > rows["broken"]["reward"] == 0.0
    assert rows["right"]["analyzers"]["coverage"]["line_rate"] == 1.0
    assert rows["wrong"]["feedback"].splitlines()[:3] == [
        "Function `add`: FOUND",
        "Syntax: OK",
        "Tests: 1/3 passed",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["reward"] == "weighted"


def test_with_workers_a_rewards_per_program_reports_are_made_where_samples_are_judged(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-n 2 --llm-reward code_levels``: each local xdist worker makes the syntax and
    structure reports of the samples it judged (plugin.ahead), so the controller, which scores
    every row at the end, walks no program itself. A worker sent the suite (``--llm-ship
    always``, as remote ones are) keeps a cache the controller never reads, so it leaves them
    to the controller, as ``-n 0`` does. The rows are the same every way."""
    from harness.analyzers.structure import StructureAnalyzer

    analyzed_here: list[str] = []
    analyze = StructureAnalyzer.analyze

    def spy(self, subjects):  # the controller is this process; the workers are not
        analyzed_here.extend(s.program for s in subjects)
        return analyze(self, subjects)

    monkeypatch.setattr(StructureAnalyzer, "analyze", spy)
    suite = write_jsonl(pytester.path / "problems.jsonl", PROBLEMS)
    many = [
        {"task_id": "Toy/add", "sample_id": str(i), "completion": f"    return a + b + {i % 3}\n"}
        for i in range(12)
    ]
    samples = write_jsonl(pytester.path / "samples.jsonl", [*SAMPLES, *many])
    rows = []
    for number, options in enumerate([("-n", "2"), ("-n", "2", "--llm-ship", "always"), ()]):
        monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / f"cache-{number}"))  # each cold
        analyzed_here.clear()
        out = pytester.path / f"out-{number}"
        result = pytester.runpytest(
            "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(samples), *options,
            "--llm-reward", "code_levels", "--llm-out", str(out), "-p", "no:codeeval_gate",
        )  # fmt: skip
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        rows.append(
            [
                {k: v for k, v in row.items() if k not in ("duration_s", "execution", "cases")}
                for row in map(json.loads, (out / "results.jsonl").open())
            ]
        )
        assert len(analyzed_here) == (0 if number == 0 else len(SAMPLES) + len(many)), options
    assert rows[0] == rows[1] == rows[2]
    assert {r["analyzers"]["syntax"]["ok"] for r in rows[0]} == {True, False}


# Loaded with -p in the controller and the workers: each sample's pytest-timeout guard is 1 s
# (the controller compiles the suite with it), and in the workers analyzing ahead is slow (two
# seconds a call) and happens every 4 samples.
SLOW_AHEAD = """
import time

import harness.pipeline.compile

harness.pipeline.compile._outer_timeout_s = lambda problem: 1


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        import harness.analyzers
        import plugin.ahead

        plugin.ahead.AHEAD_EVERY = 4
        analyze_ahead = harness.analyzers.analyze_ahead

        def slow(*args, **kwargs):
            time.sleep(2.0)
            return analyze_ahead(*args, **kwargs)

        harness.analyzers.analyze_ahead = slow
"""


def test_analyzing_ahead_is_outside_each_samples_time_limit(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker analyzes its judged samples after an item's protocol, outside pytest-timeout's
    guard of the item: analyzing long programs may take longer than a sample's own limit, and
    must not fail the sample that happened to run last."""
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    pytester.makepyfile(slowahead=SLOW_AHEAD)
    path = os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    suite = write_jsonl(pytester.path / "problems.jsonl", PROBLEMS)
    right = [
        {"task_id": "Toy/add", "sample_id": str(i), "completion": f"    return a + b + 0 * {i}\n"}
        for i in range(12)
    ]
    samples = write_jsonl(pytester.path / "samples.jsonl", right)
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(samples), "-n", "2",
        "-p", "slowahead", "--llm-reward", "code_levels", "--llm-out", str(out),
        "-p", "no:codeeval_gate", timeout=240,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").open()]
    assert [r["status"] for r in rows] == ["passed"] * 12
    module = next((out / "suite").rglob("test_*.py")).read_text()
    assert "pytest.mark.timeout(1)" in module  # the guard the samples ran under
