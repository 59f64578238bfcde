"""Every sample given has exactly one row in results.jsonl, whatever happens while it is judged.

A sample item can fail without verdicts: pytest-timeout's guard fires inside it, a plugin's
hook raises before it runs, its xdist worker dies, the run stops early (``--maxfail``). Its row
must still be written, with the reason, and the summary's counts must add up to the samples
given, so that pass@k is never computed over the rest alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PROBLEM = {
    "task_id": "toy/add",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n",
}
RIGHT = "    return a + b\n"
WRONG = "    return a - b\n"
# A conftest of the kind that made rows vanish: hooks that raise around a sample item, or
# let pytest-timeout's guard fire inside it.
CONFTEST = """
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "sample[sleepy]":
            item.add_marker(pytest.mark.timeout(1))


def pytest_runtest_call(item):
    if item.name == "sample[boom]":
        raise RuntimeError("a plugin broke")
    if item.name == "sample[guard]":
        pytest.fail("Timeout (>1.0s) from pytest-timeout.")
"""


def _run(pytester: pytest.Pytester, samples: list[dict], *args: str) -> tuple[Path, Path]:
    problems = pytester.path / "problems.jsonl"
    problems.write_text(json.dumps(PROBLEM) + "\n")
    sample_file = pytester.path / "samples.jsonl"
    sample_file.write_text("".join(json.dumps(s) + "\n" for s in samples))
    pytester.makeconftest(CONFTEST)
    out = pytester.path / "out"
    pytester.runpytest_subprocess(
        "--llm-eval", f"jsonl:{problems}", "--llm-samples", str(sample_file), "--llm-out", str(out),
        "--llm-timeout", "5", "-p", "no:codeeval_gate", "-p", "no:cacheprovider", "-q", *args,
        timeout=240,
    )  # fmt: skip
    return out, problems


def _sample(sample_id: str, completion: str) -> dict:
    return {"task_id": "toy/add", "sample_id": sample_id, "completion": completion}


def _check_counts(out: Path, problems: Path, samples: list[dict]) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["sample_id"] for r in rows) == sorted(s["sample_id"] for s in samples)
    entry = json.loads((out / "summary.json").read_text())["suites"][f"jsonl:{problems}"]
    assert entry["samples"] == len(samples)
    counted = entry["passed"] + entry["failed"] + entry["timeout"] + entry["errors"]
    assert counted + entry["data_errors"] == len(samples)
    return {r["sample_id"]: r for r in rows}


@pytest.mark.parametrize("workers", ["0", "2"])
def test_samples_that_fail_outside_judging_keep_their_rows(
    pytester: pytest.Pytester, workers: str
) -> None:
    samples = [  # first: read-ahead runs later samples while earlier items wait
        _sample("sleepy", "    import time\n    time.sleep(4)\n    return a + b\n"),
        _sample("right", RIGHT),
        _sample("wrong", WRONG),
        _sample("boom", RIGHT),
        _sample("guard", RIGHT),
        _sample("right-2", RIGHT),
    ]
    out, problems = _run(pytester, samples, "-n", workers)
    rows = _check_counts(out, problems, samples)
    assert rows["right"]["status"] == rows["right-2"]["status"] == "passed"
    assert rows["wrong"]["status"] == "failed"
    assert (rows["boom"]["status"], rows["boom"]["error_kind"]) == ("error", "infra")
    assert "a plugin broke" in rows["boom"]["cases"][0]["message"]
    assert rows["guard"]["status"] == "timeout"
    assert rows["guard"]["cases"][0]["message"].startswith("not judged: ")
    assert rows["sleepy"]["status"] == "timeout"
    assert "pytest-timeout" in rows["sleepy"]["cases"][0]["message"]


def test_a_run_stopped_early_still_counts_every_sample(pytester: pytest.Pytester) -> None:
    samples = [_sample("wrong", WRONG)] + [_sample(f"right-{i}", RIGHT) for i in range(3)]
    out, problems = _run(pytester, samples, "-n", "0", "--maxfail", "1")
    rows = _check_counts(out, problems, samples)
    assert rows["wrong"]["status"] == "failed"
    for i in range(3):
        row = rows[f"right-{i}"]
        assert (row["status"], row["error_kind"]) == ("error", "infra")
        assert "not judged: the run stopped early" in row["cases"][0]["message"]


def test_a_sample_that_kills_its_worker_is_judged_once(pytester: pytest.Pytester) -> None:
    """The item that took its xdist worker down is reported as crashed, not queued again: the
    replacement worker judges the rest, and every sample keeps its row."""
    samples = [_sample(f"s{i}", RIGHT) for i in range(6)] + [_sample("killer", WRONG)]
    pytester.makeconftest(
        CONFTEST
        + """

import os


def pytest_runtest_setup(item):
    if item.name == "sample[killer]":
        os._exit(3)  # the worker dies while this item runs
"""
    )
    problems = pytester.path / "problems.jsonl"
    problems.write_text(json.dumps(PROBLEM) + "\n")
    sample_file = pytester.path / "samples.jsonl"
    sample_file.write_text("".join(json.dumps(s) + "\n" for s in samples))
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", f"jsonl:{problems}", "--llm-samples", str(sample_file), "--llm-out", str(out),
        "-n", "2", "-p", "no:codeeval_gate", "-p", "no:cacheprovider", "-q", timeout=240,
    )  # fmt: skip
    text = result.stdout.str()
    assert text.count("worker") < 12, text  # one replacement, not a crash loop
    rows = _check_counts(out, problems, samples)
    assert rows["killer"]["status"] != "passed"
    assert all(rows[f"s{i}"]["status"] == "passed" for i in range(6))
