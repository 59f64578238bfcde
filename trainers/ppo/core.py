"""PPO's pure pieces: GAE, the clipped policy loss, the value loss and the k3 KL estimator,
and the central critic's targets (GAE over turns, one value per joint state and turn).

All work on ``(batch, tokens)`` tensors with a 0/1 ``mask`` for padding, so each can be tested
alone against hand-computed numbers.
"""

from __future__ import annotations

import torch


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the positions where ``mask`` is 1 (0 when there are none)."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def k3_kl(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi || ref): ``exp(r) - r - 1`` with ``r = ref - logp`` (>= 0)."""
    log_ratio = ref_logps - logps
    return torch.exp(log_ratio) - log_ratio - 1.0


def token_rewards(
    scores: torch.Tensor, kl: torch.Tensor, mask: torch.Tensor, beta: float
) -> torch.Tensor:
    """Per-token rewards: ``-beta * kl`` on every token, plus the sequence score on the last."""
    rewards = -beta * kl * mask
    last = (mask.sum(dim=1).long() - 1).clamp(min=0)
    rows = torch.arange(mask.shape[0], device=mask.device)
    rewards[rows, last] += scores * (mask.sum(dim=1) > 0)
    return rewards


def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over each row's tokens; returns (advantages, returns).

    ``delta_t = r_t + gamma * V_{t+1} - V_t`` (``V`` after the last real token is 0) and
    ``A_t = delta_t + gamma * lam * A_{t+1}``; ``returns = A + V``. Padding gives 0.
    """
    steps = rewards.shape[1]
    advantages = torch.zeros_like(rewards)
    next_value = torch.zeros(rewards.shape[0], dtype=rewards.dtype, device=rewards.device)
    next_adv = torch.zeros_like(next_value)
    for t in reversed(range(steps)):
        live = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        adv = delta + gamma * lam * next_adv
        advantages[:, t] = adv * live
        # Padding after a row's end passes "nothing" back to its last real token.
        next_value = values[:, t] * live
        next_adv = adv * live
    return advantages, (advantages + values) * mask


def turn_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    turn_mask: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The central critic's advantages and value targets, ``(joint states, turns)`` each.

    The same recursion as :func:`gae`, taken over turns instead of tokens: ``V`` is the central
    value of the joint state at each turn and ``rewards`` the joint reward of the turn, so
    ``delta_t = r_t + gamma * V_{t+1} - V_t`` (0 after the last turn). With one turn it is
    ``A = r - V`` and the target is ``r``.
    """
    return gae(rewards, values, turn_mask, gamma, lam)


def agent_token_advantages(
    joint_advantages: torch.Tensor, kl: torch.Tensor, mask: torch.Tensor, beta: float
) -> torch.Tensor:
    """One agent's per-token advantages under the central critic: its joint state's advantage
    less its own KL penalty (``beta`` times the sum of its per-token KL, the amount the token
    rewards charge), on every token of its completion."""
    penalty = beta * (kl * mask).sum(dim=1)
    return (joint_advantages.to(mask.dtype) - penalty)[:, None] * mask


def whiten(values: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Zero mean, unit variance over the masked positions (advantage normalisation)."""
    mean = masked_mean(values, mask)
    var = masked_mean((values - mean) ** 2, mask)
    return (values - mean) * torch.rsqrt(var + eps) * mask


def clipped_policy_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate ``-min(ratio * A, clip(ratio, 1-e, 1+e) * A)``; (loss, clip frac)."""
    ratio = torch.exp(logps - old_logps)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantages
    loss = masked_mean(-torch.minimum(unclipped, clipped), mask)
    clip_frac = masked_mean((clipped < unclipped).float(), mask)
    return loss, clip_frac


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip: float | None,
) -> torch.Tensor:
    """``0.5 * (V - R)^2``, with PPO's value clipping around the old values when ``clip``."""
    loss = (values - returns) ** 2
    if clip is not None:
        clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        loss = torch.maximum(loss, (clipped - returns) ** 2)
    return 0.5 * masked_mean(loss, mask)
