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
import math
import random
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from trainers.common.rollout_engine import close_engine, make_rollout_engine
from trainers.common.sampling import encode_prompts, render_prompt
from trainers.ppo import core
from trainers.ppo.config import PPORunConfig

# joint reward: (task ids, one list of texts per agent) -> one reward (or None) per task id
JointReward = Callable[[Sequence[str], Sequence[Sequence[str]]], list[float | None]]
ROLE_HINTS = ("Write only the helper function `aux` it can use.", "Write the main function.")


class ValueHead(nn.Module):
    """A scalar value per position from the policy's last hidden state."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.summary = nn.Linear(hidden_size, 1)
        nn.init.normal_(self.summary.weight, std=1.0 / (hidden_size + 1))
        nn.init.zeros_(self.summary.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.summary(hidden.float()).squeeze(-1)


def logps_and_values(
    model: nn.Module,
    head: ValueHead | None,
    prompt_ids: Sequence[list[int]],
    completion_ids: Sequence[list[int]],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Per completion token: log pi(token), V(state before it), and the mask (batch, tokens)."""
    device = next(model.parameters()).device
    lengths = [len(p) + len(c) for p, c in zip(prompt_ids, completion_ids, strict=True)]
    width, steps = max(lengths), max(1, max(len(c) for c in completion_ids))
    ids = torch.full((len(lengths), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        ids[i, : lengths[i]] = torch.tensor(p + c, dtype=torch.long)
        attention[i, : lengths[i]] = 1
    out = model(
        input_ids=ids.to(device),
        attention_mask=attention.to(device),
        output_hidden_states=head is not None,
    )
    # Position t predicts token t+1, so completion token k is read at len(prompt) - 1 + k.
    index = torch.zeros((len(lengths), steps), dtype=torch.long)
    mask = torch.zeros((len(lengths), steps))
    targets = torch.zeros((len(lengths), steps), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        index[i, : len(c)] = torch.arange(len(p) - 1, len(p) - 1 + len(c))
        targets[i, : len(c)] = torch.tensor(c, dtype=torch.long)
        mask[i, : len(c)] = 1.0
    index, targets, mask = index.to(device), targets.to(device), mask.to(device)
    logits = torch.gather(
        out.logits, 1, index[..., None].expand(-1, -1, out.logits.shape[-1])
    ).float()
    logps = torch.log_softmax(logits, dim=-1).gather(2, targets[..., None]).squeeze(-1)
    values = None
    if head is not None:
        hidden = out.hidden_states[-1]
        picked = torch.gather(hidden, 1, index[..., None].expand(-1, -1, hidden.shape[-1]))
        values = head(picked)
    return logps * mask, None if values is None else values * mask, mask


@dataclass
class Rollout:
    """One agent's sampled batch with everything the update needs (no gradients)."""

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    old_logps: torch.Tensor
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    mask: torch.Tensor
    kl: torch.Tensor


@dataclass
class CriticRollout:
    """The central critic's batch: one joint state per joint sample (one turn)."""

    state_ids: list[list[int]]
    old_values: torch.Tensor  # (states,)
    advantages: torch.Tensor  # (states,) GAE over turns, before any agent's KL penalty
    returns: torch.Tensor  # (states,)


def state_values(
    model: nn.Module, head: ValueHead, state_ids: Sequence[list[int]], pad_id: int
) -> torch.Tensor:
    """The value of each joint state: the value head on the hidden state of its last token."""
    device = next(model.parameters()).device
    lengths = [len(x) for x in state_ids]
    ids = torch.full((len(lengths), max(lengths)), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, x in enumerate(state_ids):
        ids[i, : len(x)] = torch.tensor(x, dtype=torch.long)
        attention[i, : len(x)] = 1
    out = model(
        input_ids=ids.to(device),
        attention_mask=attention.to(device),
        output_hidden_states=True,
        logits_to_keep=1,  # only the hidden states are read: skip the vocabulary projection
    )
    hidden = out.hidden_states[-1]
    last = torch.tensor(lengths, device=hidden.device) - 1
    return head(hidden[torch.arange(len(lengths), device=hidden.device), last])


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
        # The critic never samples: only the agents' adapters go to the rollout engine.
        self.engine = make_rollout_engine(
            config.model.rollout_backend,
            config.model.name,
            self.agents,
            config.seed,
            config.model.vllm_sync,
        )
        first = self.agents[0].model
        hidden = (
            first.config.hidden_size
            if hasattr(first, "config")
            else first.get_input_embeddings().embedding_dim
        )
        learners = [self.critic] if self.critic is not None else self.agents
        self.heads = {a.name: ValueHead(hidden).to(a.device) for a in learners}
        value_lr = p.value_learning_rate or p.learning_rate
        self.optimizers = {}
        for a in [*self.agents, *([self.critic] if self.critic is not None else [])]:
            lr = value_lr if a is self.critic else p.learning_rate
            groups = [{"params": a.parameters(), "lr": lr}]
            if a.name in self.heads:
                groups.append({"params": list(self.heads[a.name].parameters()), "lr": value_lr})
            self.optimizers[a.name] = torch.optim.AdamW(groups, weight_decay=p.weight_decay)
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

    @torch.no_grad()
    def prepare(
        self,
        agent: AgentPolicy,
        gens: list,
        scores: torch.Tensor,
        joint_advantages: torch.Tensor | None = None,
    ) -> Rollout:
        """Old log-probs, KL and advantages of one agent's batch: token-level GAE from its
        own value head, or (central critic) its joint state's advantage on every token."""
        p = self.config.ppo
        agent.activate()
        pad = agent.tokenizer.pad_token_id or 0
        prompts = [g.prompt_ids for g in gens]
        comps = [g.completion_ids for g in gens]
        head = self.heads.get(agent.name)
        logps, values, mask = logps_and_values(agent.model, head, prompts, comps, pad)
        kl = torch.zeros_like(logps)
        if p.beta > 0:
            with agent.reference() as ref:
                ref_logps, _, _ = logps_and_values(ref, None, prompts, comps, pad)
            kl = core.k3_kl(logps, ref_logps) * mask
        if joint_advantages is None:
            assert values is not None
            rewards = core.token_rewards(scores.to(mask.device), kl, mask, p.beta)
            advantages, returns = core.gae(rewards, values, mask, p.gamma, p.lam)
        else:
            advantages = core.agent_token_advantages(
                joint_advantages.to(mask.device), kl, mask, p.beta
            )
            values = returns = torch.zeros_like(logps)  # the critic keeps its own targets
        if p.whiten_advantages:
            advantages = core.whiten(advantages, mask)
        return Rollout(prompts, comps, logps, values, advantages, returns, mask, kl)

    @torch.no_grad()
    def prepare_critic(self, problems: Sequence[Problem], scores: torch.Tensor) -> CriticRollout:
        """The central values of the joint states and their targets (one turn: GAE over one
        step, ``A = r - V``, target ``r``)."""
        p, critic = self.config.ppo, self.critic
        assert critic is not None
        critic.activate()
        tok = critic.tokenizer
        limit = p.max_prompt_tokens * len(self.agents)
        states = encode_prompts(tok, [self.joint_state(q) for q in problems], limit)
        pad = tok.pad_token_id or 0
        values = state_values(critic.model, self.heads[critic.name], states, pad).cpu()
        ones = torch.ones(len(states), 1)
        advantages, returns = core.turn_gae(
            scores[:, None].float(), values[:, None], ones, p.gamma, p.lam
        )
        return CriticRollout(states, values, advantages[:, 0], returns[:, 0])

    def _minibatches(self, size: int) -> list[slice]:
        """The minibatch slices of one PPO epoch. Several processes: as many as the rank with
        the most (slices past this rank's data are empty), so every rank joins each all-reduce."""
        mb = self.config.ppo.minibatch_size or size
        count = math.ceil(size / mb) if size else 0
        if self.place.enabled:
            count = dist.max_int(count)
        return [slice(i * mb, (i + 1) * mb) if mb else slice(0, 0) for i in range(count)]

    def update_critic(self, roll: CriticRollout | None) -> dict[str, float]:
        """PPO epochs of the central critic's clipped value loss on its joint states (``None``:
        this rank has no states this step but joins the other ranks' averaged updates)."""
        p, critic = self.config.ppo, self.critic
        assert critic is not None
        critic.activate()
        head, opt = self.heads[critic.name], self.optimizers[critic.name]
        pad = critic.tokenizer.pad_token_id or 0
        size = len(roll.state_ids) if roll is not None else 0
        params = critic.parameters() + list(head.parameters())
        losses = []
        critic.model.train()
        for _ in range(p.ppo_epochs):
            for sl in self._minibatches(size):
                opt.zero_grad(set_to_none=True)
                if roll is not None and roll.state_ids[sl]:
                    values = state_values(critic.model, head, roll.state_ids[sl], pad)
                    old = roll.old_values[sl].to(values.device)
                    target = roll.returns[sl].to(values.device)
                    ones = torch.ones_like(values)
                    loss = core.value_loss(values, old, target, ones, p.value_clip_range)
                    (p.vf_coef * loss).backward()
                    losses.append(loss.item())
                dist.all_reduce_gradients(params)
                if p.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, p.max_grad_norm)
                opt.step()
        critic.model.eval()
        if roll is None:
            return {}
        return {
            "value_loss": sum(losses) / len(losses),
            "value_mean": roll.old_values.mean().item(),
            "advantage_mean": roll.advantages.mean().item(),
        }

    def update(self, agent: AgentPolicy, roll: Rollout | None) -> dict[str, float]:
        """PPO epochs on ``roll`` (``None``: this rank kept no samples this step but joins the
        other ranks' averaged updates)."""
        p = self.config.ppo
        agent.activate()
        head, opt = self.heads.get(agent.name), self.optimizers[agent.name]
        pad = agent.tokenizer.pad_token_id or 0
        size = len(roll.prompt_ids) if roll is not None else 0
        params = agent.parameters() + (list(head.parameters()) if head else [])
        stats: dict[str, list[float]] = {"policy_loss": [], "clip_frac": []}
        if head is not None:
            stats["value_loss"] = []
        agent.model.train()
        for _ in range(p.ppo_epochs):
            for sl in self._minibatches(size):
                opt.zero_grad(set_to_none=True)
                if roll is None or not roll.prompt_ids[sl]:
                    dist.all_reduce_gradients(params)  # nothing of its own: the others' mean
                    if p.max_grad_norm > 0:
                        torch.nn.utils.clip_grad_norm_(params, p.max_grad_norm)
                    opt.step()
                    continue
                logps, values, mask = logps_and_values(
                    agent.model, head, roll.prompt_ids[sl], roll.completion_ids[sl], pad
                )
                width = mask.shape[1]
                pg, frac = core.clipped_policy_loss(
                    logps,
                    roll.old_logps[sl, :width],
                    roll.advantages[sl, :width],
                    mask,
                    p.clip_range,
                )
                loss = pg
                if head is not None and values is not None:  # independent: its own critic
                    vl = core.value_loss(
                        values,
                        roll.old_values[sl, :width],
                        roll.returns[sl, :width],
                        mask,
                        p.value_clip_range,
                    )
                    loss = pg + p.vf_coef * vl
                    stats["value_loss"].append(vl.item())
                loss.backward()
                dist.all_reduce_gradients(params)
                if p.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, p.max_grad_norm)
                opt.step()
                stats["policy_loss"].append(pg.item())
                stats["clip_frac"].append(frac.item())
        agent.model.eval()
        return {k: sum(v) / len(v) for k, v in stats.items() if v}

    def train_step(self) -> dict[str, Any]:
        """One rollout batch and the PPO updates of every agent; returns the step's metrics."""
        problems = self.batch_problems(self.step)
        started = time.perf_counter()
        per_agent = [self.rollout(i, problems) for i in range(len(self.agents))]
        rollout_s = time.perf_counter() - started
        task_ids = [q.task_id for q in problems for _ in range(self.config.ppo.samples_per_prompt)]
        raw = self.joint_reward(task_ids, [texts for _, texts in per_agent])
        keep = kept_indices(raw)  # infrastructure errors: masked
        metrics: dict[str, Any] = {
            "reward": sum(raw[i] for i in keep) / len(keep) if keep else None,  # type: ignore[misc]
            "infra_errors": len(raw) - len(keep),
            "agents": {},
        }
        if keep:
            scores = torch.tensor([raw[i] for i in keep], dtype=torch.float32)
            joint_advantages, critic_roll = None, None
            if self.critic is not None:  # old values before any update
                flat = [q for q in problems for _ in range(self.config.ppo.samples_per_prompt)]
                critic_roll = self.prepare_critic([flat[i] for i in keep], scores)
                joint_advantages = critic_roll.advantages
            for agent, (gens, _) in zip(self.agents, per_agent, strict=True):
                roll = self.prepare(agent, [gens[i] for i in keep], scores, joint_advantages)
                stats = self.update(agent, roll)
                stats["kl"] = core.masked_mean(roll.kl, roll.mask).item()
                stats["completion_length"] = roll.mask.sum(dim=1).mean().item()
                metrics["agents"][agent.name] = stats
            if critic_roll is not None:
                metrics["critic"] = self.update_critic(critic_roll)
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
            metrics.update(self._gather_metrics(metrics, [raw[i] for i in keep]))
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
        for a in [*self.agents, *([self.critic] if self.critic is not None else [])]:
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
            for a in [*self.agents, *([self.critic] if self.critic is not None else [])]:
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
