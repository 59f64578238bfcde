"""PPO's optimisation: epochs of minibatch updates of one agent (clipped policy loss, and with
an independent critic its value loss) or of the central critic (clipped value loss).

Under several processes every rank joins every all-reduce: a rank without data of its own
(``roll is None`` or an empty slice) still steps with the others' averaged gradients.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from trainers.common import distributed as dist
from trainers.common.policy import AgentPolicy
from trainers.ppo import core
from trainers.ppo.batch import CriticRollout, Rollout
from trainers.ppo.config import PPOSettings
from trainers.ppo.model import ValueHead, logps_and_values, state_values


def make_optimizers(
    learners: list[AgentPolicy],
    critic: AgentPolicy | None,
    heads: dict[str, ValueHead],
    p: PPOSettings,
) -> dict[str, torch.optim.Optimizer]:
    """One AdamW per learner: its adapter at the policy's rate (the central critic's at the
    value rate) and its value head, if it has one, at the value rate."""
    value_lr = p.value_learning_rate or p.learning_rate
    optimizers: dict[str, torch.optim.Optimizer] = {}
    for a in learners:
        lr = value_lr if a is critic else p.learning_rate
        groups = [{"params": a.parameters(), "lr": lr}]
        if a.name in heads:
            groups.append({"params": list(heads[a.name].parameters()), "lr": value_lr})
        optimizers[a.name] = torch.optim.AdamW(groups, weight_decay=p.weight_decay)
    return optimizers


def minibatches(size: int, minibatch_size: int, place: Any) -> list[slice]:
    """The minibatch slices of one PPO epoch. Several processes: as many as the rank with the
    most (slices past this rank's data are empty), so every rank joins each all-reduce."""
    mb = minibatch_size or size
    count = math.ceil(size / mb) if size else 0
    if place.enabled:
        count = dist.max_int(count)
    return [slice(i * mb, (i + 1) * mb) if mb else slice(0, 0) for i in range(count)]


def optimizer_step(params: list[Any], opt: torch.optim.Optimizer, max_grad_norm: float) -> None:
    """Average the gradients over the processes, clip them (0: no clip), step."""
    dist.all_reduce_gradients(params)
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    opt.step()


def agent_losses(
    agent: AgentPolicy, head: ValueHead | None, roll: Rollout, sl: slice, p: PPOSettings
) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss of one minibatch ``sl`` of ``roll`` and its numbers (policy loss, clip
    fraction, and the value loss with an independent critic)."""
    pad = agent.tokenizer.pad_token_id or 0
    logps, values, mask = logps_and_values(
        agent.model, head, roll.prompt_ids[sl], roll.completion_ids[sl], pad
    )
    width = mask.shape[1]
    pg, frac = core.clipped_policy_loss(
        logps, roll.old_logps[sl, :width], roll.advantages[sl, :width], mask, p.clip_range
    )
    stats = {"policy_loss": pg.item(), "clip_frac": frac.item()}
    if head is None or values is None:
        return pg, stats
    vl = core.value_loss(  # independent: its own critic
        values, roll.old_values[sl, :width], roll.returns[sl, :width], mask, p.value_clip_range
    )
    stats["value_loss"] = vl.item()
    return pg + p.vf_coef * vl, stats


def update_agent(
    agent: AgentPolicy,
    head: ValueHead | None,
    opt: torch.optim.Optimizer,
    roll: Rollout | None,
    p: PPOSettings,
    place: Any,
) -> dict[str, float]:
    """PPO epochs on ``roll`` (``None``: this rank kept no samples this step but joins the
    other ranks' averaged updates); the mean of each number over the minibatches."""
    agent.activate()
    size = len(roll.prompt_ids) if roll is not None else 0
    params = agent.parameters() + (list(head.parameters()) if head else [])
    stats: dict[str, list[float]] = {}
    agent.model.train()
    for _ in range(p.ppo_epochs):
        for sl in minibatches(size, p.minibatch_size, place):
            opt.zero_grad(set_to_none=True)
            if roll is not None and roll.prompt_ids[sl]:
                loss, numbers = agent_losses(agent, head, roll, sl, p)
                loss.backward()
                for name, value in numbers.items():
                    stats.setdefault(name, []).append(value)
            optimizer_step(params, opt, p.max_grad_norm)  # nothing of its own: the others' mean
    agent.model.eval()
    return {k: sum(v) / len(v) for k, v in stats.items() if v}


def update_critic(
    critic: AgentPolicy,
    head: ValueHead,
    opt: torch.optim.Optimizer,
    roll: CriticRollout | None,
    p: PPOSettings,
    place: Any,
) -> dict[str, float]:
    """PPO epochs of the central critic's clipped value loss on its joint states (``None``:
    this rank has no states this step but joins the other ranks' averaged updates)."""
    critic.activate()
    pad = critic.tokenizer.pad_token_id or 0
    size = len(roll.state_ids) if roll is not None else 0
    params = critic.parameters() + list(head.parameters())
    losses = []
    critic.model.train()
    for _ in range(p.ppo_epochs):
        for sl in minibatches(size, p.minibatch_size, place):
            opt.zero_grad(set_to_none=True)
            if roll is not None and roll.state_ids[sl]:
                values = state_values(critic.model, head, roll.state_ids[sl], pad)
                old = roll.old_values[sl].to(values.device)
                target = roll.returns[sl].to(values.device)
                ones = torch.ones_like(values)
                loss = core.value_loss(values, old, target, ones, p.value_clip_range)
                (p.vf_coef * loss).backward()
                losses.append(loss.item())
            optimizer_step(params, opt, p.max_grad_norm)
    critic.model.eval()
    if roll is None:
        return {}
    return {
        "value_loss": sum(losses) / len(losses),
        "value_mean": roll.old_values.mean().item(),
        "advantage_mean": roll.advantages.mean().item(),
    }
