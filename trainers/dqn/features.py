"""The frozen policy's view of the offline data: hidden states before each completion token.

The policy is never trained, so the states are computed once (:func:`featurize`) and the Q
heads train on them (:class:`Features`); :func:`policy_pass` is the forward pass that decoding
(:mod:`trainers.dqn.decode`) shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


@dataclass
class Features:
    """The frozen policy's view of the offline data: per episode, the hidden state before
    each completion token ``(T_i, hidden)`` and the tokens taken ``(T_i,)``."""

    hidden: list[torch.Tensor]
    actions: list[torch.Tensor]
    rewards: torch.Tensor  # (N,)

    def batch(self, index: Sequence[int]) -> tuple[torch.Tensor, ...]:
        """``(hidden (B, T, d), actions (B, T), mask (B, T), rewards (B,))``, right-padded."""
        width = max(1, max(len(self.actions[i]) for i in index))
        dim = self.hidden[0].shape[-1]
        hidden = torch.zeros(len(index), width, dim)
        actions = torch.zeros(len(index), width, dtype=torch.long)
        mask = torch.zeros(len(index), width)
        for row, i in enumerate(index):
            n = len(self.actions[i])
            hidden[row, :n], actions[row, :n], mask[row, :n] = self.hidden[i], self.actions[i], 1
        return hidden, actions, mask, self.rewards[list(index)]


def policy_pass(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention: torch.Tensor,
    positions: torch.Tensor,
    past: Any = None,
) -> tuple[torch.Tensor, Any]:
    """The policy's last (normalised) hidden states ``(B, L, d)`` and its key/value cache."""
    device = next(model.parameters()).device
    base: Any = model.base_model  # the transformer without its vocabulary projection
    out = base(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        position_ids=positions.to(device),
        past_key_values=past,
        use_cache=True,
    )
    return out.last_hidden_state, out.past_key_values


@torch.no_grad()
def featurize(
    model: nn.Module,
    prompt_ids: Sequence[list[int]],
    completion_ids: Sequence[list[int]],
    pad: int,
    batch_size: int = 8,
) -> list[torch.Tensor]:
    """Hidden states before each completion token, ``(len(completion), d)`` per sequence.

    Completions of one prompt share one pass over it (the prompt is most of the tokens): its
    key/value cache is repeated for the completions, which are right-padded after it. The state
    before completion token 0 is the prompt's last; before token ``k`` it is completion token
    ``k - 1``'s."""
    out: list[torch.Tensor | None] = [None] * len(prompt_ids)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, ids in enumerate(prompt_ids):
        groups.setdefault(tuple(ids), []).append(i)
    for prompt, members in groups.items():
        for start in range(0, len(members), batch_size):
            chunk = members[start : start + batch_size]
            whole = torch.tensor([prompt], dtype=torch.long)
            ones = torch.ones_like(whole)
            hidden, past = policy_pass(model, whole, ones, torch.arange(len(prompt))[None])
            last = hidden[0, -1].float().cpu()
            width = max(len(completion_ids[i]) for i in chunk)
            if width > 1:  # token k > 0 is read after completion token k - 1
                past.batch_repeat_interleave(len(chunk))
                comp = torch.full((len(chunk), width - 1), pad, dtype=torch.long)
                attention = torch.zeros(len(chunk), len(prompt) + width - 1, dtype=torch.long)
                attention[:, : len(prompt)] = 1
                for row, i in enumerate(chunk):
                    c = completion_ids[i][:-1]
                    comp[row, : len(c)] = torch.tensor(c, dtype=torch.long)
                    attention[row, len(prompt) : len(prompt) + len(c)] = 1
                positions = torch.arange(len(prompt), len(prompt) + width - 1).expand(
                    len(chunk), -1
                )
                after, _ = policy_pass(model, comp, attention, positions, past)
                after = after.float().cpu()
            for row, i in enumerate(chunk):
                n = len(completion_ids[i])
                states = [last[None]] + ([after[row, : n - 1]] if n > 1 else [])
                out[i] = torch.cat(states)
    return [t for t in out if t is not None]
