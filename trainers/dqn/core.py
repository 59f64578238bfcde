"""Token-level Q-learning for language models: the heads, targets, losses and decoding.

Each completion token is an action; the state before token ``t`` is the policy's last hidden
state at the position that predicts it, ``h_t``. The harness's reward arrives once, after the
last token (sparse, at sequence end). Notation for a batch: ``B`` sequences, ``T`` completion
positions (right-padded, ``mask`` marks real tokens), ``V`` the vocabulary, ``H`` twin heads.

- :class:`QHead`: ``Q(s, a) = E[a] . g(h_s) + b[a]``: a small trainable MLP ``g`` on the frozen
  policy's hidden state, read out through the policy's own (frozen) output embedding ``E``, so a
  head is a few hundred thousand parameters instead of a hidden-by-vocabulary matrix.
- :func:`double_q_targets`: ``y_t = r_t + gamma * (1 - done_t) * min_h Q'_h(s_{t+1}, a*)`` with
  ``a* = argmax_a mean_h Q_h(s_{t+1}, a)``: the online heads choose the next action and the
  slowly updated target heads value it (double DQN), the smaller of the twins (clipped double
  Q) so that one head's overestimate is not bootstrapped.
- :func:`td_loss`: squared error of every head's ``Q(s_t, a_t)`` against ``y_t``.
- :func:`cql_penalty`: ``logsumexp_a Q(s_t, a) - Q(s_t, a_t)`` (CQL(H)): pushes down the values
  of tokens the data never took, so the argmax above cannot run off to them.
- :func:`shifted_logits`: decoding as in implicit language Q-learning, the policy's logits plus
  ``beta`` times the advantage ``Q(s, a) - V(s)``, ``V(s) = sum_a pi(a|s) Q(s, a)``.
- :func:`polyak_update`: ``target <- (1 - tau) target + tau online``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import nn


class QHead(nn.Module):
    """Q-values over the vocabulary from hidden states, through a frozen output embedding."""

    def __init__(self, embedding: torch.Tensor, inner: int = 0) -> None:
        super().__init__()
        vocab, hidden = embedding.shape
        inner = inner or hidden
        # Not a parameter: the policy's output embedding stays the policy's (and frozen).
        self.register_buffer("embedding", embedding.detach().float(), persistent=False)
        last = nn.Linear(inner, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, inner), nn.GELU(), last)
        self.bias = nn.Parameter(torch.zeros(vocab))
        # Q starts near 0: a fresh head neither shifts decoding nor bootstraps noise.
        nn.init.normal_(last.weight, std=1e-3)
        nn.init.zeros_(last.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """``(..., hidden)`` -> ``(..., V)``."""
        return self.mlp(hidden.float()) @ self.embedding.T + self.bias


class TwinQ(nn.Module):
    """``H`` independent Q heads; ``forward`` stacks them: ``(H, ..., V)``."""

    def __init__(self, embedding: torch.Tensor, heads: int = 2, inner: int = 0) -> None:
        super().__init__()
        # Each head draws its own initial weights: identical twins would make min() a no-op.
        self.heads = nn.ModuleList(QHead(embedding, inner) for _ in range(heads))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.stack([head(hidden) for head in self.heads])


def terminal_rewards(rewards: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B,)`` sequence rewards -> ``(B, T)``: each at its sequence's last real token, else 0."""
    last = last_index(mask)
    out = torch.zeros_like(mask, dtype=torch.float32)
    has = mask.sum(dim=1) > 0
    out[has, last[has]] = rewards[has].float()
    return out


def last_index(mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last real token (0 for an empty row)."""
    positions = torch.arange(mask.shape[1], device=mask.device)
    return (positions * (mask > 0)).amax(dim=1)


def done_flags(mask: torch.Tensor) -> torch.Tensor:
    """``(B, T)``: 1 at each sequence's last real token (no next state to bootstrap from)."""
    done = torch.zeros_like(mask, dtype=torch.float32)
    has = mask.sum(dim=1) > 0
    done[has, last_index(mask)[has]] = 1.0
    return done


def double_q_targets(
    rewards: torch.Tensor,
    mask: torch.Tensor,
    online: torch.Tensor,
    target: torch.Tensor,
    gamma: float,
) -> torch.Tensor:
    """``y_t`` for every position ``(B, T)``, without gradient.

    ``rewards``: ``(B,)`` sequence rewards. ``online`` and ``target``: ``(H, B, T, V)`` Q-values
    of the online and target heads at the states ``s_0 .. s_{T-1}`` (the next state of position
    ``t`` is position ``t + 1``). Padding positions get 0.
    """
    with torch.no_grad():
        next_online = online[:, :, 1:].mean(dim=0)  # (B, T-1, V)
        choice = next_online.argmax(dim=-1, keepdim=True)  # a*: chosen by the online heads
        valued = target[:, :, 1:].gather(-1, choice.expand(target.shape[0], -1, -1, -1))
        bootstrap = valued.squeeze(-1).amin(dim=0)  # (B, T-1): the smaller twin
        bootstrap = F.pad(bootstrap, (0, 1))  # the last position has no next state
        done = done_flags(mask)
        y = terminal_rewards(rewards, mask) + gamma * (1.0 - done) * bootstrap
        return y * (mask > 0)


def taken(q: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``Q(s_t, a_t)`` of each head: ``(H, B, T, V)`` and ``(B, T)`` -> ``(H, B, T)``."""
    index = actions.clamp(min=0)[None, ..., None].expand(q.shape[0], -1, -1, 1)
    return q.gather(-1, index).squeeze(-1)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` (``(H, B, T)`` or ``(B, T)``) over real tokens (and heads)."""
    weights = mask.float().expand_as(values)
    return (values * weights).sum() / weights.sum().clamp(min=1.0)


def td_loss(q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over heads and real tokens of ``(Q_h(s_t, a_t) - y_t)^2``."""
    return masked_mean((q_taken - targets.detach()[None]) ** 2, mask)


def cql_penalty(q: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over heads and real tokens of ``logsumexp_a Q_h(s_t, a) - Q_h(s_t, a_t)`` (>= 0)."""
    return masked_mean(torch.logsumexp(q, dim=-1) - taken(q, actions), mask)


def advantages(logits: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``A(s, a) = Q(s, a) - V(s)`` with ``V(s) = sum_a pi(a|s) Q(s, a)``, ``pi`` the policy's
    softmax of ``logits``; both ``(..., V)``."""
    policy = torch.softmax(logits.float(), dim=-1)
    value = (policy * q).sum(dim=-1, keepdim=True)
    return q - value


def shifted_logits(logits: torch.Tensor, q: torch.Tensor, beta: float) -> torch.Tensor:
    """The decoding logits: the policy's ``logits + beta * A(s, .)``; ``beta = 0`` is the policy
    (the data's policy, when the data was sampled from it)."""
    if beta == 0:
        return logits.float()
    return logits.float() + beta * advantages(logits, q)


@torch.no_grad()
def polyak_update(
    target: Iterable[nn.Parameter], online: Iterable[nn.Parameter], tau: float
) -> None:
    """``target <- (1 - tau) * target + tau * online``, parameter by parameter."""
    for t, o in zip(target, online, strict=True):
        t.mul_(1.0 - tau).add_(o.detach(), alpha=tau)
