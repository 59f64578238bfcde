"""The stdio trainer configs: what they load (fast), and one real CPU step of MAGRPO (slow)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from harness.reward import load_reward_config
from harness.stdio.problem import is_stdio, stdio_spec
from trainers.common.config import load_config
from trainers.common.logger import read_metrics
from trainers.common.problems import prompt_text, train_problems
from trainers.grpo.config import GRPORunConfig
from trainers.magrpo.config import MAGRPOConfig
from trainers.magrpo.roles import Roles

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "grpo": ROOT / "configs/grpo_stdio_cpu.yaml",
    "magrpo": ROOT / "configs/magrpo_stdio_cpu.yaml",
}


@pytest.mark.parametrize("algorithm", sorted(CONFIGS))
def test_configs_train_on_stdio_problems_with_every_test(algorithm: str, shared_data: Path) -> None:
    kind = GRPORunConfig if algorithm == "grpo" else MAGRPOConfig
    config = load_config(kind, str(CONFIGS[algorithm]), [f"dataset.data_dir={shared_data}"])
    problems = train_problems(config.dataset, config.model.name, seed=0)
    assert len(problems) == 2 and all(is_stdio(p) and not p.defects for p in problems)
    for problem in problems:
        spec = stdio_spec(problem)
        assert not spec.stop_at_first_failure and len(spec.tests) <= 15
        assert prompt_text(problem).startswith("Solve the following problem with a complete")
    assert load_reward_config(config.reward.preset).aggregator_path.startswith("harness.stdio")
    if algorithm == "magrpo":
        roles = Roles.for_suite(config.dataset.suite, config.magrpo.num_agents, "round_robin")
        assert "standard input" in roles.prompt(problems[0], 1)


@pytest.mark.slow
def test_one_magrpo_cpu_step_on_stdio_problems(tmp_path: Path, shared_data: Path) -> None:
    """The MAGRPO config trains one step (~3 min on 2 busy cores; GRPO's config runs the same
    way, `python -m trainers.grpo --config configs/grpo_stdio_cpu.yaml`, and shares its problem
    loading, prompt and reward with the fast test above)."""
    done = subprocess.run(
        [sys.executable, "-m", "trainers.magrpo", "--config", str(CONFIGS["magrpo"]),
         "--override", f"output.dir={tmp_path}", f"dataset.data_dir={shared_data}",
         "magrpo.max_new_tokens=24"],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = [r for r in read_metrics(tmp_path) if "loss" in r]
    assert row["step"] == 1 and math.isfinite(row["loss"])
    assert set(row["turn_1"]["reward_parts"]) == {"compiles", "runs", "public", "hidden"}
