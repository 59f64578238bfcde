"""Decoding with the learned advantages: the policy's logits shifted by ``beta`` times the
Q heads' advantages, token by token, over one cached pass per prompt."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
from torch import nn

from trainers.dqn import core
from trainers.dqn.features import policy_pass

QFunction = Callable[[torch.Tensor], torch.Tensor]


@torch.no_grad()
def decode(
    model: nn.Module,
    q_values: QFunction | None,
    prompt_ids: Sequence[list[int]],
    num_samples: int,
    max_new_tokens: int,
    beta: float,
    temperature: float,
    stops: set[int],
    pad: int,
    seed: int = 0,
) -> list[list[list[int]]]:
    """``num_samples`` completions per prompt, each token drawn from the shifted logits
    (``core.shifted_logits``; ``beta = 0`` or no ``q_values``: the policy itself). A seeded
    generator of its own makes two decodings of the same prompts share their random draws, so
    a comparison of two ``beta`` values is paired token by token."""
    width = max(len(p) for p in prompt_ids)
    ids = torch.full((len(prompt_ids), width), pad, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, p in enumerate(prompt_ids):  # left padding: every row's next token at one column
        ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        attention[i, width - len(p) :] = 1
    positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
    # One pass per prompt (the prompt is most of the tokens); its cache serves every sample.
    hidden, past = policy_pass(model, ids, attention, positions)
    if num_samples > 1:
        past.batch_repeat_interleave(num_samples)
    rows = [p for p in prompt_ids for _ in range(num_samples)]
    attention = attention.repeat_interleave(num_samples, dim=0)
    state = hidden[:, -1].repeat_interleave(num_samples, dim=0)
    step_pos = positions[:, -1:].repeat_interleave(num_samples, dim=0) + 1
    head: Any = cast(Any, model).get_output_embeddings()  # a PreTrainedModel
    generator = torch.Generator().manual_seed(seed)
    done = torch.zeros(len(rows), dtype=torch.bool)
    out: list[list[int]] = [[] for _ in rows]
    for _ in range(max_new_tokens):
        logits = head(state).float().cpu()
        if q_values is not None and beta:
            logits = core.shifted_logits(logits, q_values(state).cpu(), beta)
        if temperature > 0:
            probs = torch.softmax(logits / temperature, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        else:
            token = logits.argmax(dim=-1)
        token = torch.where(done, torch.full_like(token, pad), token)
        for i, t in enumerate(token.tolist()):
            if not done[i]:
                out[i].append(t)
                done[i] = t in stops
        if bool(done.all()):
            break
        attention = torch.cat([attention, torch.ones(len(rows), 1, dtype=attention.dtype)], 1)
        hidden, past = policy_pass(model, token[:, None], attention, step_pos, past)
        state = hidden[:, -1]
        step_pos = step_pos + 1
    return [out[i * num_samples : (i + 1) * num_samples] for i in range(len(prompt_ids))]
