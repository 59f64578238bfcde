"""The held-out learning benchmark: its statistics, and one real (tiny) run end to end."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.gate import bootstrap_interval

ROOT = Path(__file__).resolve().parents[1]


def _heldout_module():
    spec = importlib.util.spec_from_file_location("heldout", ROOT / "benchmarks" / "heldout.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


finite = st.floats(min_value=-10, max_value=10, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=40), finite)
def test_bootstrap_interval_brackets_the_mean_and_shifts_with_the_data(diffs, shift):
    low, high = bootstrap_interval(diffs, resamples=2000)
    mean = sum(diffs) / len(diffs)
    assert min(diffs) - 1e-9 <= low <= mean + 1e-9
    assert mean - 1e-9 <= high <= max(diffs) + 1e-9
    shifted = bootstrap_interval([d + shift for d in diffs], resamples=2000)
    assert shifted[0] == pytest.approx(low + shift, abs=1e-6)
    assert shifted[1] == pytest.approx(high + shift, abs=1e-6)


def test_bootstrap_interval_excludes_zero_only_for_a_clear_change():
    assert bootstrap_interval([0.5] * 30) == (0.5, 0.5)
    assert bootstrap_interval([1.0] * 20 + [-0.2] * 4)[0] > 0
    low, high = bootstrap_interval([1.0, -1.0] * 20)
    assert low < 0 < high
    assert bootstrap_interval([]) == (0.0, 0.0)


def test_paired_change_compares_only_problems_scored_both_times():
    heldout = _heldout_module()
    score = heldout.HeldoutScore
    before = {"a": score(0.0, False), "b": score(1.0, True), "c": score(0.5, False)}
    after = {"a": score(1.0, True), "b": score(1.0, True), "d": score(3.0, True)}
    change = heldout.paired_change(before, after)
    assert change["problems"] == 2  # c was not scored after, d not before
    assert change["reward"]["before"] == 0.5 and change["reward"]["after"] == 1.0
    assert change["reward"]["change"] == 0.5
    assert change["pass@1"]["improved"] == 1 and change["pass@1"]["regressed"] == 0


@pytest.mark.slow
def test_heldout_benchmark_runs_end_to_end(tmp_path):
    """A real MAGRPO run (SmolLM2, 2 agents, harness reward) on MBPP train, scored on test."""
    out = tmp_path / "heldout.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.setdefault("CODEEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    if not (Path(env["CODEEVAL_DATA_DIR"]) / "mbpp.jsonl").exists():
        pytest.skip("no offline MBPP mirror (CODEEVAL_DATA_DIR)")
    args = ["--steps", "1", "--buffer", "1", "--generations", "2", "--max-new-tokens", "24"]
    args += ["--eval-problems", "2", "--rollout-backend", "transformers", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "learning.py"), "--heldout", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "held-out problems scored before and after: 2" in done.stdout
    result = json.loads(out.read_text())["heldout"]
    assert result["steps"] == 1 and result["train_problems_seen"] == 1
    for name in ("reward", "pass@1"):
        low, high = result[name]["interval_95"]
        assert low <= result[name]["change"] <= high
