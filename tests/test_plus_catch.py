"""``--llm-plus`` judged by HumanEval+ itself: ``evalplus`` 0.3.1's own evaluator, offline, on a
small version of ``benchmarks/plus_catch.py``'s program set (every 8th task)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_llm_plus_fails_wrong_programs_and_never_a_right_one(
    shared_data: Path, tmp_path: Path
) -> None:
    pytest.importorskip("evalplus", reason="evalplus (a peer, installed by make setup)")
    out = tmp_path / "counts.json"
    env = {
        **os.environ,
        "CODEEVAL_DATA_DIR": str(shared_data),
        "CODEEVAL_CACHE": str(tmp_path / "cache"),  # generation and evalplus's verdicts, fresh
        "HUMANEVAL_OVERRIDE_PATH": str(shared_data / "evalplus/HumanEvalPlus-v0.1.10.jsonl.gz"),
    }
    command = [sys.executable, "-m", "benchmarks.plus_catch", "--tasks", "::8", "--per-task", "4"]
    result = subprocess.run(
        [*command, "--json", str(out)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    counts = json.loads(out.read_text())
    assert counts["errors"] == 0, result.stdout
    assert counts["wrong"] >= 8 and counts["plus_passing"] >= 40, counts
    assert counts["caught"] >= 0.8 * counts["wrong"], result.stdout
    # A false fail is allowed only where HumanEval+'s own evaluator, with its own reference's
    # answer, fails the program on an input HumanEval+'s contract allows.
    assert counts["false_fails"] == counts["humaneval_plus_misses"], result.stdout
