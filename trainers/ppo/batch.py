"""What a PPO update learns from: each agent's rollout batch (old log-probs, KL, advantages)
and the central critic's joint states with their targets. Computed once, without gradients."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from trainers.common.policy import AgentPolicy
from trainers.common.sampling import encode_prompts
from trainers.ppo import core
from trainers.ppo.config import PPOSettings
from trainers.ppo.model import ValueHead, logps_and_values, state_values


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


@torch.no_grad()
def prepare(
    agent: AgentPolicy,
    head: ValueHead | None,
    gens: list[Any],
    scores: torch.Tensor,
    p: PPOSettings,
    joint_advantages: torch.Tensor | None = None,
) -> Rollout:
    """Old log-probs, KL and advantages of one agent's batch: token-level GAE from its own
    value head, or (central critic) its joint state's advantage on every token."""
    agent.activate()
    pad = agent.tokenizer.pad_token_id or 0
    prompts = [g.prompt_ids for g in gens]
    comps = [g.completion_ids for g in gens]
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
        advantages = core.agent_token_advantages(joint_advantages.to(mask.device), kl, mask, p.beta)
        values = returns = torch.zeros_like(logps)  # the critic keeps its own targets
    if p.whiten_advantages:
        advantages = core.whiten(advantages, mask)
    return Rollout(prompts, comps, logps, values, advantages, returns, mask, kl)


@torch.no_grad()
def prepare_critic(
    critic: AgentPolicy,
    head: ValueHead,
    states: list[str],
    scores: torch.Tensor,
    p: PPOSettings,
    max_tokens: int,
) -> CriticRollout:
    """The central values of the joint ``states`` (texts) and their targets (one turn: GAE
    over one step, ``A = r - V``, target ``r``)."""
    critic.activate()
    tok = critic.tokenizer
    state_ids = encode_prompts(tok, states, max_tokens)
    values = state_values(critic.model, head, state_ids, tok.pad_token_id or 0).cpu()
    ones = torch.ones(len(state_ids), 1)
    advantages, returns = core.turn_gae(
        scores[:, None].float(), values[:, None], ones, p.gamma, p.lam
    )
    return CriticRollout(state_ids, values, advantages[:, 0], returns[:, 0])
