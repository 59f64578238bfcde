"""PPO on the harness's rewards: rollouts, a value head, GAE, the clipped update, checkpoints.

Single agent (``ppo.num_agents: 1``): sample, score each completion with the harness, train.
Multi-agent (``N > 1``): every agent writes its part for the same prompt; the parts are joined
into one program and scored once (the joint reward); each agent then runs its own PPO update
(its own adapter and optimizer) on that shared reward.

The critic (``ppo.critic``): ``independent`` gives each agent a value head on its own hidden
states and token-level GAE over its completion. ``central`` is one critic for the team (MAAC,
MAPPO): its own adapter and value head read every agent's prompt of a turn, the joint state,
and give one value per joint state and turn; every agent's advantage is that turn's GAE over
turns (with one turn, ``r - V``) less its own KL penalty, on each token it wrote. The critic
reads the turn's prompts and not the turn's completions: a value that saw the joint action it
is the baseline for would learn ``r`` itself and cancel the action's credit (from turn 2 on
the prompts carry the earlier turns' completions, so the joint state holds them).

Under ``accelerate launch``/``torchrun`` (``trainers.common.distributed``) each process rolls out
``prompts_per_step`` prompts of its own, gradients are averaged over the processes before every
optimizer step (policies, value heads and the central critic alike), and rank 0 alone logs and
saves; every rank records its prompts and parameter digest in ``<output.dir>/ranks/``.
"""

from __future__ import annotations

import json
import random
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from harness.records import Problem
from trainers.common import checkpoint as ckpt
from trainers.common import distributed as dist
from trainers.common.config import to_dict
from trainers.common.logger import run_logger
from trainers.common.policy import AgentPolicy, create_policies
from trainers.common.problems import prompt_text, train_problems
from trainers.common.reward import harness_reward, kept_indices
from trainers.common.rollout_engine import close_engine, engine_for_model
from trainers.common.sampling import encode_prompts, render_prompt
from trainers.ppo import batch, core
from trainers.ppo.batch import CriticRollout, Rollout
from trainers.ppo.config import PPORunConfig
from trainers.ppo.model import ValueHead, hidden_size
from trainers.ppo.update import make_optimizers, update_agent, update_critic

# joint reward: (task ids, one list of texts per agent) -> one reward (or None) per task id
JointReward = Callable[[Sequence[str], Sequence[Sequence[str]]], list[float | None]]
ROLE_HINTS = ("Write only the helper function `aux` it can use.", "Write the main function.")


class PPOTrainer:
    """Independent PPO learners (one per agent) on one shared reward."""

    def __init__(
        self,
        config: PPORunConfig,
        problems: Sequence[Problem] | None = None,
        joint_reward: JointReward | None = None,
        agents: list[AgentPolicy] | None = None,
        critic: AgentPolicy | None = None,
    ) -> None:
        self.config = config
        p = config.ppo
        ckpt.seed_everything(config.seed)
        self.place = dist.init_distributed()  # one process without launcher variables: no-op
        if problems is None:
            problems = train_problems(config.dataset, config.model.name, config.seed)
        if not problems:
            raise ValueError("dataset: no usable training problems; widen dataset.train_split")
        self.problems = list(problems)
        self.by_id = {q.task_id: q for q in self.problems}
        self.joint_reward = joint_reward or self._harness_joint_reward()
        names = [f"agent{i}" for i in range(p.num_agents)] if p.num_agents > 1 else ["policy"]
        self.central = p.critic == "central"
        if agents is None:  # the central critic is one more adapter on the shared base
            policies = create_policies(
                config.model, names + ["critic"] * self.central, with_reference=p.beta > 0
            )
            agents, critic = policies[: len(names)], (policies[-1] if self.central else None)
        if self.central and critic is None:
            raise ValueError("ppo.critic=central: pass the critic's policy with the agents")
        self.agents = agents
        self.critic = critic if self.central else None
        self.learners = [*self.agents, *([self.critic] if self.critic is not None else [])]
        # The critic never samples: only the agents' adapters go to the rollout engine.
        self.engine = engine_for_model(config.model, self.agents, config.seed)
        hidden = hidden_size(self.agents[0].model)
        # A value head per learner with values: the central critic, else every agent.
        valued = [self.critic] if self.critic is not None else self.agents
        self.heads = {a.name: ValueHead(hidden).to(a.device) for a in valued}
        self.optimizers = make_optimizers(self.learners, self.critic, self.heads, p)
        self.step = 0
        self.logger = run_logger(config, config.output.dir, enabled=self.place.is_main)
        if self.place.enabled:  # one start on every rank, then a random stream per rank
            dist.broadcast_parameters(
                t for ps in self.trained_params().values() for t in ps.values()
            )
            ckpt.seed_everything(config.seed + self.place.rank)

    # ------------------------------------------------------------ data and reward

    def _harness_joint_reward(self) -> JointReward:
        reward = harness_reward(self.config.reward, self.problems)

        def joint(task_ids: Sequence[str], texts: Sequence[Sequence[str]]) -> list[float | None]:
            merged = ["\n\n".join(parts) for parts in zip(*texts, strict=True)]
            return reward.score(task_ids, merged)

        return joint

    def batch_problems(self, step: int) -> list[Problem]:
        """This rank's prompts of rollout ``step``: a seeded permutation per epoch (the same on
        every rank, so resumes agree), ``prompts_per_step`` per process dealt round-robin."""
        n, k = len(self.problems), self.config.ppo.prompts_per_step * self.place.world_size
        chosen = []
        for j in range(step * k + self.place.rank, step * k + k, self.place.world_size):
            epoch, index = divmod(j, n)
            order = list(range(n))
            if self.config.dataset.shuffles():
                random.Random(self.config.seed * 1000 + epoch).shuffle(order)
            chosen.append(self.problems[order[index]])
        return chosen

    def prompt_for(self, agent_index: int, problem: Problem) -> str:
        text = prompt_text(problem)
        if len(self.agents) > 1:
            hint = ROLE_HINTS[agent_index] if agent_index < len(ROLE_HINTS) else ""
            text = f"You are agent {agent_index + 1} of {len(self.agents)}. {hint}\n\n{text}"
        return text

    def joint_state(self, problem: Problem) -> str:
        """What the central critic reads: every agent's prompt of the turn."""
        return "\n\n".join(
            f"[Agent {a + 1} of {len(self.agents)}]\n{self.prompt_for(a, problem)}"
            for a in range(len(self.agents))
        )

    # ------------------------------------------------------------ one step

    def rollout(self, agent_index: int, problems: Sequence[Problem]) -> tuple[list, list[str]]:
        agent, p = self.agents[agent_index], self.config.ppo
        agent.activate()
        rendered = [
            render_prompt(agent.tokenizer, self.prompt_for(agent_index, q)) for q in problems
        ]
        ids = encode_prompts(agent.tokenizer, rendered, p.max_prompt_tokens)
        groups = self.engine.sample(
            agent, ids, p.samples_per_prompt, p.max_new_tokens, p.temperature, p.top_p
        )
        flat = [g for group in groups for g in group]
        return flat, [g.text for g in flat]

    def learn(
        self, problems: Sequence[Problem], gens: Sequence[list[Any]], rewards: list[float]
    ) -> dict[str, Any]:
        """The PPO updates of every agent (and the central critic) on the kept samples:
        ``problems`` and each agent's ``gens`` aligned with their ``rewards``."""
        scores = torch.tensor(rewards, dtype=torch.float32)
        joint_advantages, critic_roll = None, None
        if self.critic is not None:  # old values before any update
            critic_roll = self.prepare_critic(problems, scores)
            joint_advantages = critic_roll.advantages
        out: dict[str, Any] = {"agents": {}}
        for agent, mine in zip(self.agents, gens, strict=True):
            roll = self.prepare(agent, list(mine), scores, joint_advantages)
            stats = self.update(agent, roll)
            stats["kl"] = core.masked_mean(roll.kl, roll.mask).item()
            stats["completion_length"] = roll.mask.sum(dim=1).mean().item()
            out["agents"][agent.name] = stats
        if critic_roll is not None:
            out["critic"] = self.update_critic(critic_roll)
        return out

    def prepare(
        self,
        agent: AgentPolicy,
        gens: list[Any],
        scores: torch.Tensor,
        joint_advantages: torch.Tensor | None = None,
    ) -> Rollout:
        """One agent's batch for its update (:func:`trainers.ppo.batch.prepare`)."""
        head = self.heads.get(agent.name)
        return batch.prepare(agent, head, gens, scores, self.config.ppo, joint_advantages)

    def prepare_critic(self, problems: Sequence[Problem], scores: torch.Tensor) -> CriticRollout:
        """The central critic's joint states of ``problems`` and their targets."""
        critic, p = self.critic, self.config.ppo
        assert critic is not None
        states = [self.joint_state(q) for q in problems]
        limit = p.max_prompt_tokens * len(self.agents)
        return batch.prepare_critic(critic, self.heads[critic.name], states, scores, p, limit)

    def update(self, agent: AgentPolicy, roll: Rollout | None) -> dict[str, float]:
        """PPO epochs of ``agent`` on ``roll`` (``None``: join the other ranks' updates)."""
        head, opt = self.heads.get(agent.name), self.optimizers[agent.name]
        return update_agent(agent, head, opt, roll, self.config.ppo, self.place)

    def update_critic(self, roll: CriticRollout | None) -> dict[str, float]:
        """PPO epochs of the central critic on ``roll`` (``None``: join the others' updates)."""
        critic = self.critic
        assert critic is not None
        head, opt = self.heads[critic.name], self.optimizers[critic.name]
        return update_critic(critic, head, opt, roll, self.config.ppo, self.place)

    def train_step(self) -> dict[str, Any]:
        """One rollout batch and the PPO updates of every agent; returns the step's metrics."""
        problems = self.batch_problems(self.step)
        started = time.perf_counter()
        per_agent = [self.rollout(i, problems) for i in range(len(self.agents))]
        rollout_s = time.perf_counter() - started
        flat = [q for q in problems for _ in range(self.config.ppo.samples_per_prompt)]
        raw = self.joint_reward([q.task_id for q in flat], [texts for _, texts in per_agent])
        keep = kept_indices(raw)  # infrastructure errors: masked
        kept = [raw[i] for i in keep]
        metrics: dict[str, Any] = {
            "reward": sum(kept) / len(kept) if kept else None,  # type: ignore[arg-type]
            "infra_errors": len(raw) - len(keep),
            "agents": {},
        }
        if keep:
            gens = [[g[i] for i in keep] for g, _ in per_agent]
            metrics.update(self.learn([flat[i] for i in keep], gens, kept))  # type: ignore[arg-type]
        elif self.place.enabled:  # every sample masked here: still join the others' updates
            for agent in self.agents:
                self.update(agent, None)
            if self.critic is not None:
                self.update_critic(None)
        if keep or self.place.enabled:
            synced = time.perf_counter()
            self.engine.sync(self.agents)  # the next rollouts sample from the updated adapters
            metrics["sync_s"] = time.perf_counter() - synced
        metrics["rollout_s"] = rollout_s
        metrics["step_s"] = time.perf_counter() - started
        if self.place.enabled:
            metrics.update(self._gather_metrics(metrics, kept))  # type: ignore[arg-type]
        self.step += 1
        return metrics

    def _gather_metrics(self, metrics: dict[str, Any], kept: list[float]) -> dict[str, Any]:
        """The step's metrics over every rank (rank 0 logs them): the reward over all kept
        samples, infrastructure errors summed, per-agent and critic numbers averaged."""
        parts = dist.gather(
            (kept, metrics["infra_errors"], metrics["agents"], metrics.get("critic") or {})
        )
        rewards = [r for part in parts for r in part[0]]
        agents = [part[2] for part in parts if part[2]]
        critics = [part[3] for part in parts if part[3]]
        out: dict[str, Any] = {
            "reward": sum(rewards) / len(rewards) if rewards else None,
            "infra_errors": sum(part[1] for part in parts),
            "agents": dist.mean_numbers(agents) if agents else {},
        }
        if critics:
            out["critic"] = dist.mean_numbers(critics)
        return out

    # ------------------------------------------------------------ loop and checkpoints

    def total_steps(self) -> int:
        p = self.config.ppo
        per_epoch = -(-len(self.problems) // (p.prompts_per_step * self.place.world_size))
        return p.max_steps or per_epoch * p.num_epochs

    def trained_params(self) -> dict[str, dict[str, nn.Parameter]]:
        params = {}
        for a in self.learners:
            mine = dict(a.named_trainable())
            if a.name in self.heads:
                head = self.heads[a.name].named_parameters()
                mine.update({f"value_head.{n}": t for n, t in head})
            params[a.name] = mine
        return params

    def save(self) -> Path | None:
        """Rank 0 writes the checkpoint; other ranks first add their RNG states to it."""
        out, rank = self.config.output.dir, self.place.rank
        if self.place.enabled:
            if rank:
                ckpt.save_rank_rng(Path(out) / f"checkpoint-{self.step}", rank)
            dist.barrier()  # `latest` names a checkpoint only once every rank's part is in
        path = None
        if self.place.is_main:
            path = ckpt.save_checkpoint(
                out,
                self.step,
                self.trained_params(),
                self.optimizers,
                {"step": self.step},
                to_dict(self.config),
            )
        dist.barrier()
        return path

    def resume(self, path: str | Path) -> None:
        folder = ckpt.resolve_checkpoint(path, self.config.output.dir)
        state = ckpt.load_checkpoint(folder, self.trained_params(), self.optimizers)
        rank = self.place.rank
        if rank and not ckpt.load_rank_rng(folder, rank):
            warnings.warn(
                f"{folder}: no RNG states for rank {rank}; seeding it afresh", stacklevel=2
            )
            ckpt.seed_everything(self.config.seed + rank + 7919 * int(state["step"]))
        self.step = int(state["step"])
        self.engine.sync(self.agents)  # resumed adapters, not the fresh ones, sample next

    def train(self) -> list[dict[str, Any]]:
        out = self.config.output
        if out.resume_from:
            self.resume(out.resume_from)
        history = []
        while self.step < self.total_steps():
            problems = self.batch_problems(self.step)
            metrics = self.train_step()
            if self.place.enabled:
                named = [
                    (f"{a}.{n}", t)
                    for a, ps in self.trained_params().items()
                    for n, t in ps.items()
                ]
                ids = [q.task_id for q in problems]
                metrics["distributed"] = dist.record_step(
                    out.dir, self.place, self.step, ids, named
                )
            history.append(self.logger.log(self.step, metrics))
            if out.save_interval and self.step % out.save_interval == 0:
                self.save()
        if out.save_final_model and self.place.is_main:
            final = Path(out.dir) / "final"
            for a in self.learners:
                a.model.save_pretrained(str(final / a.name))
                if a.name in self.heads:
                    torch.save(self.heads[a.name].state_dict(), final / a.name / "value_head.pt")
        self.logger.close()
        close_engine(self.engine)
        return history


def run(config: PPORunConfig) -> str:
    """``python -m trainers.ppo``: train; the summary line names the output and the steps."""
    history = PPOTrainer(config).train()
    return json.dumps({"output_dir": config.output.dir, "steps": len(history)})
