"""PPO on CPU: SmolLM2-135M with LoRA adapters, 2 steps, single- and multi-agent."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from trainers.common.config import ConfigError  # noqa: E402
from trainers.common.logger import read_metrics  # noqa: E402
from trainers.common.policy import frozen_state  # noqa: E402
from trainers.ppo.config import parse_args  # noqa: E402
from trainers.ppo.trainer import PPOTrainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CPU_CONFIG = ROOT / "configs" / "ppo_he_cpu.yaml"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def distinct_chars(task_ids, texts_per_agent) -> list[float | None]:
    """A deterministic joint reward that differs between samples; None masks sample 0 of 3+."""
    merged = ["".join(parts) for parts in zip(*texts_per_agent, strict=True)]
    return [float(len(set(t))) / 10 for t in merged]


def config_for(out: Path, *extra: str):
    return parse_args(["--config", str(CPU_CONFIG), "--override", f"output.dir={out}", *extra])


def snapshot(trainer: PPOTrainer) -> dict[str, dict[str, torch.Tensor]]:
    return {
        agent: {n: t.detach().clone() for n, t in params.items()}
        for agent, params in trainer.trained_params().items()
    }


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("ppo")
    trainer = PPOTrainer(config_for(out), joint_reward=distinct_chars)
    before, frozen = snapshot(trainer), frozen_state(trainer.agents[0])
    history = trainer.train()
    return {"out": out, "trainer": trainer, "before": before, "frozen": frozen, "history": history}


def test_config_rejects_impossible_settings(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"ppo.clip_range: must be in \(0, 1\)"):
        config_for(tmp_path, "ppo.clip_range=1.5")
    with pytest.raises(ConfigError, match=r"ppo.minibatch_size: 5 is larger"):
        config_for(tmp_path, "ppo.minibatch_size=5")
    with pytest.raises(ConfigError, match=r"--override ppo.lam=2: ppo.lam: must be in \[0, 1\]"):
        parse_args(["--config", str(CPU_CONFIG), "--lam", "2"])
    with pytest.raises(ConfigError, match=r"external.mode: PPO is single-turn.*trainers.magrpo"):
        config_for(tmp_path, "external.mode=plain")


def test_single_agent_trains_adapter_and_value_head(single) -> None:
    trainer, before = single["trainer"], single["before"]
    after = snapshot(trainer)["policy"]
    assert any("value_head" in n for n in after) and any("lora_" in n for n in after)
    changed = [n for n in after if not torch.equal(before["policy"][n], after[n])]
    assert any("lora_" in n for n in changed) and any("value_head" in n for n in changed)
    frozen_now = frozen_state(trainer.agents[0])
    assert all(torch.equal(single["frozen"][n], frozen_now[n]) for n in single["frozen"])


def test_losses_finite_and_metrics_written(single) -> None:
    rows = read_metrics(single["out"])
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        stats = row["agents"]["policy"]
        assert math.isfinite(stats["policy_loss"]) and math.isfinite(stats["value_loss"])
        assert stats["kl"] >= 0 and row["infra_errors"] == 0 and row["reward"] > 0


def test_resume_gives_identical_parameters_and_optimizer(single, tmp_path) -> None:
    out = single["out"]
    resumed = PPOTrainer(
        config_for(tmp_path, f"output.resume_from={out / 'checkpoint-1'}"),
        joint_reward=distinct_chars,
    )
    resumed.train()
    a, b = snapshot(single["trainer"]), snapshot(resumed)
    assert all(torch.equal(a["policy"][n], b["policy"][n]) for n in a["policy"])
    sa = single["trainer"].optimizers["policy"].state_dict()["state"]
    sb = resumed.optimizers["policy"].state_dict()["state"]
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k]["exp_avg_sq"], sb[k]["exp_avg_sq"]) for k in sa)


@pytest.mark.slow  # two agents' PPO steps end to end: 35 s
def test_multi_agent_independent_learners_and_masked_rewards(tmp_path) -> None:
    seen = []

    def joint(task_ids, texts_per_agent):
        seen.append(len(texts_per_agent))
        rewards = distinct_chars(task_ids, texts_per_agent)
        return [None, *rewards[1:]]  # an infrastructure error on the first sample

    config = config_for(tmp_path, "ppo.num_agents=2", "ppo.max_steps=1", "ppo.samples_per_prompt=3")
    trainer = PPOTrainer(config, joint_reward=joint)
    before = snapshot(trainer)
    [row] = trainer.train()
    after = snapshot(trainer)
    assert seen == [2] and row["infra_errors"] == 1
    assert sorted(row["agents"]) == ["agent0", "agent1"]
    for agent in ("agent0", "agent1"):
        assert any(not torch.equal(before[agent][n], after[agent][n]) for n in after[agent])
        assert all(".agent" + agent[-1] + "." in n or "value_head" in n for n in after[agent])


def central_trainer(out: Path, *extra: str) -> PPOTrainer:
    """Two agents and a central critic as adapters of one tiny random model (fast)."""
    from harness.models import tiny_model
    from trainers.common.policy import wrap_agents

    config = config_for(out, "ppo.num_agents=2", "ppo.critic=central", *extra)
    model, tok = tiny_model(0)
    torch.manual_seed(config.seed)
    *agents, critic = wrap_agents(
        model, tok, ["agent0", "agent1", "critic"], config.model, with_reference=True
    )
    return PPOTrainer(config, joint_reward=distinct_chars, agents=agents, critic=critic)


def test_central_critic_gives_every_agent_r_minus_v(tmp_path) -> None:
    """ppo.critic=central: one critic adapter + value head reads both agents' prompts; each
    agent's advantage is its joint sample's r - V (no KL: beta 0, no whitening) on every token
    it wrote; the agents have no value heads; the critic trains toward r."""
    extra = ["ppo.max_steps=1", "ppo.beta=0", "ppo.whiten_advantages=false"]
    trainer = central_trainer(tmp_path, *extra, "ppo.value_clip_range=null")
    assert trainer.critic is not None and sorted(trainer.heads) == ["critic"]
    assert sorted(trainer.optimizers) == ["agent0", "agent1", "critic"]
    problems = trainer.batch_problems(0)
    state = trainer.joint_state(problems[0])
    assert all(trainer.prompt_for(a, problems[0]) in state for a in range(2))
    per_agent = [trainer.rollout(i, problems) for i in range(2)]
    task_ids = [q.task_id for q in problems for _ in range(trainer.config.ppo.samples_per_prompt)]
    scores = torch.tensor(trainer.joint_reward(task_ids, [t for _, t in per_agent]))
    critic_roll = trainer.prepare_critic([problems[0]] * len(scores), scores)
    values = critic_roll.old_values
    assert torch.allclose(critic_roll.advantages, scores - values)
    assert torch.allclose(critic_roll.returns, scores)
    for agent, (gens, _) in zip(trainer.agents, per_agent, strict=True):
        roll = trainer.prepare(agent, gens, scores, critic_roll.advantages)
        expected = (scores - values)[:, None] * roll.mask
        assert torch.allclose(roll.advantages, expected, atol=1e-6)
    before = snapshot(trainer)
    [row] = trainer.train()
    after = snapshot(trainer)
    assert sorted(after) == ["agent0", "agent1", "critic"]
    assert not any("value_head" in n for a in ("agent0", "agent1") for n in after[a])
    for name in after:
        assert any(not torch.equal(before[name][n], after[name][n]) for n in after[name]), name
    assert all(".critic." in n or n.startswith("value_head") for n in after["critic"])
    assert math.isfinite(row["critic"]["value_loss"])
    for agent in ("agent0", "agent1"):
        assert math.isfinite(row["agents"][agent]["policy_loss"])
        assert "value_loss" not in row["agents"][agent]
    # the critic is checkpointed with the agents: a resumed run restores it
    resumed = central_trainer(tmp_path / "resumed", *extra)
    resumed.resume(tmp_path / "checkpoint-1")
    again = snapshot(resumed)
    assert all(torch.equal(after["critic"][n], again["critic"][n]) for n in after["critic"])
    sa = trainer.optimizers["critic"].state_dict()["state"]
    sb = resumed.optimizers["critic"].state_dict()["state"]
    assert all(torch.equal(sa[k]["exp_avg"], sb[k]["exp_avg"]) for k in sa)


@pytest.mark.slow
def test_central_critic_cpu_run(tmp_path) -> None:
    """The issue's command on CPU (SmolLM2-135M): finite losses for both agents and the critic."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "trainers.ppo", "--config", str(CPU_CONFIG), "--override",
         "ppo.num_agents=2", "ppo.critic=central", f"output.dir={tmp_path}"],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = read_metrics(tmp_path)
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert math.isfinite(row["critic"]["value_loss"])
        assert all(math.isfinite(row["agents"][a]["policy_loss"]) for a in ("agent0", "agent1"))


def test_critic_setting_is_checked(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"ppo.critic"):
        config_for(tmp_path, "ppo.critic=shared")
