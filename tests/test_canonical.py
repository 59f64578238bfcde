"""Self-check of the suites: every reference solution passes through the whole plugin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def run_canonical(
    pytester: pytest.Pytester, suite: str, *extra: str
) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out"
    result = pytester.runpytest(
        "--llm-eval", suite, "--llm-samples", "canonical", "--llm-out", str(out),
        "-n", "2", "-q", "-p", "no:codeeval_gate", *extra,
    )  # fmt: skip
    return result, json.loads((out / "summary.json").read_text())


@pytest.mark.slow  # all 164 references in a real session
def test_humaneval_references_all_pass(pytester: pytest.Pytester) -> None:
    result, summary = run_canonical(pytester, "humaneval")
    entry = summary["suites"]["humaneval"]
    assert (entry["samples"], entry["passed"], entry["pass@1"]) == (164, 164, 1.0)
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.slow  # 427 references in a real session: 26 s
def test_sanitized_mbpp_references_pass_except_listed_data_defects(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    everything = "prompt+train+validation+test"
    result, summary = run_canonical(
        pytester, "mbpp-sanitized", "--llm-data-dir", str(shared_data), "--llm-split", everything
    )
    entry = summary["suites"]["mbpp-sanitized"]
    assert entry["samples"] == 427
    assert entry["passed"] + entry["data_errors"] == 427, summary["data_errors"]
    assert entry["failed"] == entry["timeout"] == entry["errors"] == 0
    assert result.ret == pytest.ExitCode.OK
