"""MAGRPO steps with the recipe on, on a tiny random model (no download): two agents, one and
two turns, with dynamic sampling, clip-higher over two PPO epochs in minibatches, token-level
aggregation and the soft overlong penalty."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from harness.models import tiny_model
from harness.records import Problem, Sample
from suites import load_suite
from trainers.common.config import load_config
from trainers.common.policy import trainable_state, wrap_agents
from trainers.magrpo.config import MAGRPOConfig
from trainers.magrpo.trainer import MAGRPOTrainer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RECIPE = [
    "magrpo.dynamic_sampling=true",
    "magrpo.dynamic_sampling_rounds=2",
    "magrpo.ppo_epochs=2",
    "magrpo.minibatch_size=2",
    "magrpo.loss_aggregation=token",
    "magrpo.overlong=soft",
    "magrpo.epsilon_high=0.28",
]


def by_length(problems: list[Problem], samples: list[Sample]) -> list[dict[str, Any]]:
    """A reward that varies within a group (the answer's length), so groups carry gradient;
    problem 0 always scores 0, so dynamic sampling has a group to drop."""
    first = problems[0].task_id
    return [
        {
            "task_id": s.task_id,
            "sample_id": s.sample_id,
            "reward": 0.0 if s.task_id == first else (len(s.completion) % 7) / 7,
            "passed": False,
        }
        for s in samples
    ]


def _trainer(out: Path, extra: list[str]) -> MAGRPOTrainer:
    cfg = load_config(
        MAGRPOConfig,
        None,
        [
            f"output.dir={out}",
            "magrpo.max_steps=1",
            "magrpo.num_generations=3",
            "magrpo.max_new_tokens=8",
            "magrpo.learning_rate=1e-2",
            "magrpo.rollout_buffer_size=2",
            "dataset.shuffle=false",
            "logging.progress_bar=false",
            "output.save_final_model=false",
            *RECIPE,
            *extra,
        ],
    )
    model, tok = tiny_model(0)
    torch.manual_seed(cfg.seed)
    agents = wrap_agents(model, tok, ["helper", "main"], cfg.model, with_reference=False)
    problems = load_suite("humaneval", "test[:3]", None)
    return MAGRPOTrainer(cfg, agents=agents, scorer=by_length, train_problems=problems)


# Two turns (a second rollout with feedback): 23 s, in the slow tier.
@pytest.mark.parametrize("turns", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_recipe_step_trains_and_reports(tmp_path: Path, turns: int) -> None:
    extra = ["external.mode=plain", f"magrpo.num_turns={turns}"] if turns > 1 else []
    trainer = _trainer(tmp_path, extra)
    trainer.feedback = (lambda row, problem: "try again") if turns > 1 else None
    before = {a.name: trainable_state(a) for a in trainer.agents}
    (record,) = trainer.train()
    dyn = record["dynamic"]
    # the first prompt's groups all scored 0: measured, dropped, and refilled
    assert dyn["zero_gradient_share"] > 0
    assert dyn["trained_zero_gradient_share"] == 0.0
    assert dyn["refill_rounds"] >= 1 and dyn["episodes_trained"] >= 1
    for agent in trainer.agents:
        stats = record[agent.name]
        assert math.isfinite(stats["loss"]) and 0.0 <= stats["clip_fraction"] <= 1.0
        after = trainable_state(agent)
        assert any(not torch.equal(before[agent.name][k], after[k]) for k in after)


def test_one_update_per_buffer_ignores_the_clip_ranges(tmp_path: Path) -> None:
    """Recipe options off: the parameters after a step equal those of the loss before the
    recipe (``A * sum log pi`` over sequences); with sum aggregation the clipped path at
    ratio 1 agrees too."""
    plain = _trainer(tmp_path / "a", ["magrpo.dynamic_sampling=false", "magrpo.ppo_epochs=1",
                                      "magrpo.minibatch_size=0", "magrpo.loss_aggregation=sum",
                                      "magrpo.overlong=none"])  # fmt: skip
    plain.train()
    clipped = _trainer(tmp_path / "b", ["magrpo.dynamic_sampling=false", "magrpo.ppo_epochs=1",
                                        "magrpo.minibatch_size=0", "magrpo.loss_aggregation=sum",
                                        "magrpo.overlong=none", "magrpo.epsilon_high=0.01",
                                        "magrpo.epsilon_low=0.01"])  # fmt: skip
    clipped.train()
    for a, b in zip(plain.agents, clipped.agents, strict=True):
        x, y = trainable_state(a), trainable_state(b)
        # one update: no ratio, so the clip ranges cannot matter
        assert all(torch.equal(x[k], y[k]) for k in x)
