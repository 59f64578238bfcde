"""The code-RL recipe's pieces (DAPO, Dr. GRPO, DeepCoder's GRPO+), as small pure functions.

* :func:`token_objective`: the per-token surrogate. With ``old_logp`` (several optimizer
  updates per rollout buffer) it is PPO's clipped ratio with separate lower and upper ranges
  (DAPO's clip-higher: ``1 - eps_low <= ratio <= 1 + eps_high``); without it (one update per
  buffer, ratio == 1) it is ``A * log pi``, which has the same gradient.
* :func:`aggregate`: how token terms become one loss: ``sum`` (each sequence's sum, mean over
  sequences: Dr. GRPO's constant normalizer, MAGRPO's original loss), ``token`` (mean over every
  token of the update: DAPO) or ``sequence`` (each sequence's token mean, then mean: GRPO).
* :func:`is_truncated` / :func:`overlong_penalty`: DAPO's overlong filtering (truncated
  completions masked) and soft overlong punishment (a penalty ramping over the last
  ``buffer`` tokens before the limit).
* :func:`zero_variance` / :func:`informative_targets`: dynamic sampling's test, a sibling group
  whose completions all have the same value carries no group-relative gradient.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, Protocol, TypeVar

import torch

Aggregation = Literal["sum", "token", "sequence"]
AGGREGATIONS: tuple[str, ...] = ("sum", "token", "sequence")


def token_objective(
    logp: torch.Tensor,
    advantages: torch.Tensor,
    old_logp: torch.Tensor | None = None,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token objective to maximise (``(batch, tokens)``) and where the ratio was clipped.

    ``advantages`` has one value per sequence. The clipped tokens are those where the clip
    took the gradient away (the pessimistic ``min`` picked the clipped term).
    """
    adv = advantages.to(logp.device, logp.dtype)[:, None]
    if old_logp is None:
        return adv * logp, torch.zeros_like(logp, dtype=torch.bool)
    ratio = torch.exp(logp - old_logp.to(logp.device, logp.dtype))
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    plain, bounded = ratio * adv, clipped * adv
    return torch.minimum(plain, bounded), bounded < plain


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    num_sequences: int | None = None,
    num_tokens: float | None = None,
) -> torch.Tensor:
    """One scalar from per-token terms (masked tokens count for nothing).

    The denominators (``num_sequences`` for ``sum``/``sequence``, ``num_tokens`` for
    ``token``) are those of the whole update, so micro-batches that are summed give the same
    gradient as one batch; they default to this batch's own.
    """
    masked = per_token * mask
    if mode == "sum":
        return masked.sum() / float(num_sequences or per_token.shape[0])
    if mode == "token":
        return masked.sum() / float(num_tokens or mask.sum().clamp(min=1.0))
    if mode == "sequence":
        lengths = mask.sum(dim=1).clamp(min=1.0)
        return (masked.sum(dim=1) / lengths).sum() / float(num_sequences or per_token.shape[0])
    raise ValueError(f"loss_aggregation {mode!r}: expected one of {', '.join(AGGREGATIONS)}")


def recipe_loss(
    logp: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    mode: str,
    old_logp: torch.Tensor | None = None,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    num_sequences: int | None = None,
    num_tokens: float | None = None,
) -> tuple[torch.Tensor, float]:
    """The policy loss (to minimise) and the share of this batch's tokens that were clipped."""
    objective, clipped = token_objective(logp, advantages, old_logp, eps_low, eps_high)
    w = weights.to(logp.device, logp.dtype)[:, None]
    loss = -aggregate(w * objective, mask, mode, num_sequences, num_tokens)
    live = mask.sum().item()
    share = float((clipped.float() * mask).sum().item() / live) if live else 0.0
    return loss, share


def is_truncated(completion_ids: Sequence[int], max_new_tokens: int, stops: Iterable[int]) -> bool:
    """Whether generation stopped at the token limit rather than at an end token."""
    if len(completion_ids) < max_new_tokens:
        return False
    return not completion_ids or completion_ids[-1] not in set(stops)


def overlong_penalty(length: int, max_new_tokens: int, buffer: int, factor: float = 1.0) -> float:
    """DAPO's soft overlong punishment (eq. 13), as a penalty >= 0 to subtract from the reward.

    0 up to ``max_new_tokens - buffer`` tokens, then rising linearly to ``factor`` at the limit
    (``factor`` past it). ``buffer == 0``: no penalty.
    """
    if buffer <= 0:
        return 0.0
    start = max_new_tokens - buffer
    if length <= start:
        return 0.0
    return factor * min(1.0, (length - start) / buffer)


def zero_variance(values: Sequence[float | None], tol: float = 1e-9) -> bool:
    """A group whose (unmasked) values are all equal: group-relative advantages are all 0."""
    valid = [v for v in values if v is not None]
    return len(valid) < 2 or max(valid) - min(valid) <= tol


class GroupedTarget(Protocol):
    agent: int
    group: int
    value: float


T = TypeVar("T", bound=GroupedTarget)


def informative_targets(targets: Sequence[T]) -> tuple[list[T], int, int]:
    """Targets of one episode without its zero-variance groups (per agent and sibling group).

    Returns the kept targets, the number of groups and the number of zero-variance ones.
    """
    groups: dict[tuple[int, int], list[T]] = {}
    for t in targets:
        groups.setdefault((t.agent, t.group), []).append(t)
    kept: list[T] = []
    zero = 0
    for members in groups.values():
        if zero_variance([t.value for t in members]):
            zero += 1
        else:
            kept.extend(members)
    return kept, len(groups), zero
