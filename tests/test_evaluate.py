"""harness.evaluate: the Python entry point trainers use, through the real plugin and sandbox."""

from __future__ import annotations

import pytest

from harness.evaluate import evaluate
from harness.records import Sample
from harness.sandbox.api import RESOURCE_KEYS
from suites import load_suite


@pytest.fixture(scope="module")
def problems():
    return [p for p in load_suite("humaneval") if p.task_id in {"HumanEval/0", "HumanEval/53"}]


def test_rows_come_back_in_sample_order_with_verdicts(problems, tmp_path) -> None:
    samples = [
        Sample("HumanEval/53", "    return x - y\n", "wrong"),
        Sample("HumanEval/53", "    return x + y\n", "right"),
        Sample("HumanEval/0", "    while True:\n        pass\n", "loops"),
    ]
    rows = evaluate(problems, samples, out_dir=tmp_path, timeout_s=0.5)
    assert [(r["task_id"], r["sample_id"], r["status"]) for r in rows] == [
        ("HumanEval/53", "wrong", "failed"),
        ("HumanEval/53", "right", "passed"),
        ("HumanEval/0", "loops", "timeout"),
    ]
    assert (tmp_path / "results.jsonl").is_file()


def test_repeated_calls_see_new_samples(problems) -> None:
    # The default folder is reused per problem set: the second batch must not see the first.
    first = evaluate(problems, [Sample("HumanEval/53", "    return x + y\n", "0")])
    second = evaluate(
        problems,
        [
            Sample("HumanEval/53", "    return 0\n", "0"),
            Sample("HumanEval/53", "    return y + x\n", "1"),
        ],
    )
    assert [r["status"] for r in first] == ["passed"]
    assert [r["status"] for r in second] == ["failed", "passed"]


def test_missing_and_repeated_sample_ids_are_numbered(problems) -> None:
    rows = evaluate(
        problems,
        [
            Sample("HumanEval/53", "    return x + y\n", ""),
            Sample("HumanEval/53", "    return x + y\n", ""),
        ],
    )
    assert [r["sample_id"] for r in rows] == ["0", "1"]


def test_unknown_task_is_a_clear_error(problems) -> None:
    with pytest.raises(ValueError, match="HumanEval/999"):
        evaluate(problems, [Sample("HumanEval/999", "x", "0")])


TIMINGS = {"duration_s", "max_rss_kb", *RESOURCE_KEYS}  # measured: differ per run


def _without_timings(value):
    """A row with every measured time left out (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_in_process_path_and_pytest_session_give_the_same_rows(tmp_path) -> None:
    problems = [
        p
        for p in load_suite("humaneval")
        if p.task_id in {"HumanEval/0", "HumanEval/44", "HumanEval/53"}
    ]
    samples = [
        Sample("HumanEval/53", "    return x + y\n", "right"),
        Sample("HumanEval/53", "    return x - y\n", "wrong"),
        Sample("HumanEval/53", "    print('hi')\n    return [x + y]\n", "list"),
        Sample("HumanEval/53", "    import sys\n    sys.exit(0)\n", "exits"),
        Sample("HumanEval/53", "    return x +\n", "syntax"),
        Sample("HumanEval/0", "    while True:\n        pass\n", "loops"),
        Sample("HumanEval/0", "    return 1 / 0\n", "raises"),
        Sample("HumanEval/44", "    return str(x)\n", "half"),
    ]
    here = evaluate(problems, samples, out_dir=tmp_path / "here", timeout_s=0.5, reward="binary")
    session = evaluate(
        problems,
        samples,
        out_dir=tmp_path / "session",
        timeout_s=0.5,
        reward="binary",
        pytest_session=True,
    )
    assert [r["status"] for r in here] == [
        "passed", "failed", "failed", "failed", "failed", "timeout", "failed", "failed"
    ]  # fmt: skip
    assert _without_timings(here) == _without_timings(session)
    assert (tmp_path / "here" / "results.jsonl").is_file()
