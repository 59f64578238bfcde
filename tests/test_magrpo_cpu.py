"""CPU runs of MAGRPO with the packaged SmolLM2-135M (LoRA), scored by the real harness.

Two agents / one turn and two agents / two turns with ``level_feedback``: finite losses, the
LoRA parameters changed and the base did not, metrics written, and a checkpoint that resumes
to identical parameters and optimizer state. Kept small (G=2, 32 new tokens, 1 problem).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from harness.models.vllm_backend import vllm_status, vllm_usable
from trainers.common.config import load_config
from trainers.common.logger import read_metrics
from trainers.common.policy import frozen_state, trainable_state
from trainers.magrpo.config import MAGRPOConfig
from trainers.magrpo.trainer import MAGRPOTrainer

REPO = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


SMALL = [
    "magrpo.max_new_tokens=32",
    "magrpo.num_generations=2",
    "dataset.train_split=test[:1]",
    "magrpo.num_epochs=2",
    "magrpo.max_steps=2",
    "logging.progress_bar=false",
    "output.save_final_model=false",
    # 32 tokens rarely finish a function, so every sample may score alike (zero group-relative
    # advantage, no update). Raw advantages of a shifted reward always move the adapters; the
    # advantage modes themselves are checked against hand-computed numbers elsewhere.
    "magrpo.advantage_mode=raw",
    "reward.shift=-0.5",
]


def _config(name: str, out: Path, extra: list[str] = ()) -> MAGRPOConfig:  # type: ignore[assignment]
    return load_config(MAGRPOConfig, REPO / "configs" / name, [*SMALL, f"output.dir={out}", *extra])


def _check_run(trainer: MAGRPOTrainer, out: Path) -> None:
    before = {a.name: trainable_state(a) for a in trainer.agents}
    frozen = frozen_state(trainer.agents[0])
    records = trainer.train()
    assert [r["step"] for r in records] == [1, 2]
    for record in records:
        for agent in trainer.agents:
            assert math.isfinite(record[agent.name]["loss"])
    assert read_metrics(out) == records
    changed = 0
    for agent in trainer.agents:
        after = trainable_state(agent)
        changed += any(not torch.equal(before[agent.name][k], after[k]) for k in after)
    # an agent whose completions all scored alike has zero advantages: at least one moves
    assert changed >= 1
    now = frozen_state(trainer.agents[0])
    assert all(torch.equal(frozen[k], now[k]) for k in frozen)

    cfg = trainer.config
    output = dataclasses.replace(cfg.output, resume_from="latest")
    resumed = MAGRPOTrainer(dataclasses.replace(cfg, output=output))
    assert resumed.step == 2 and (resumed.epoch, resumed.position) == (1, 1)
    for old, new in zip(trainer.agents, resumed.agents, strict=True):
        a, b = trainable_state(old), trainable_state(new)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        s1 = trainer.optimizers[old.name].state_dict()
        s2 = resumed.optimizers[new.name].state_dict()
        assert s1["param_groups"] == s2["param_groups"]
        for key, slots in s1["state"].items():
            assert all(torch.equal(v, s2["state"][key][n]) for n, v in slots.items())


@pytest.mark.slow
def test_two_agents_one_turn(tmp_path: Path) -> None:
    trainer = MAGRPOTrainer(_config("magrpo_he_cpu.yaml", tmp_path, ["magrpo.eval_interval=0"]))
    assert [a.name for a in trainer.agents] == ["helper", "main"]
    _check_run(trainer, tmp_path)


@pytest.mark.slow
def test_two_agents_two_turns_level_feedback(tmp_path: Path) -> None:
    # 24 new tokens: turn 2 samples G per branch with long prompts (code + feedback)
    extra = ["magrpo.eval_interval=0", "magrpo.max_new_tokens=24"]
    cfg = _config("mt_magrpo_he_cpu.yaml", tmp_path, extra)
    assert cfg.external.mode == "level_feedback" and cfg.magrpo.num_turns == 2
    trainer = MAGRPOTrainer(cfg)
    _check_run(trainer, tmp_path)
    records = read_metrics(tmp_path)
    assert records[0]["turn_2"]["joint_actions"] >= 1


@pytest.mark.slow
@pytest.mark.skipif(not vllm_usable(), reason=vllm_status().reason or "vLLM runs")
def test_two_agents_with_vllm_rollouts(tmp_path: Path) -> None:
    extra = ["magrpo.eval_interval=0", "model.rollout_backend=vllm"]
    trainer = MAGRPOTrainer(_config("magrpo_he_cpu.yaml", tmp_path, extra))
    before = {a.name: trainable_state(a) for a in trainer.agents}
    records = trainer.train()  # closes its vLLM engine at the end
    assert [r["step"] for r in records] == [1, 2]
    for record in records:
        assert record["rollout_s"] > 0 and record["sync_s"] >= 0
        for agent in trainer.agents:
            assert math.isfinite(record[agent.name]["loss"])
            assert record[agent.name]["completion_tokens_mean"] > 0
    moved = [
        any(not torch.equal(before[a.name][k], v) for k, v in trainable_state(a).items())
        for a in trainer.agents
    ]
    assert any(moved)
