"""Sampling completions and computing their per-token log-probabilities.

Generation pads prompts on the left, samples ``n`` completions per prompt, and cuts each one
after its first end-of-sequence token. Log-probs are recomputed by a forward pass over
``prompt + completion`` (with gradients for the loss, without for the reference/KL), so they
are exact for the parameters the loss differentiates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Generation:
    """One sampled completion: its prompt and completion token ids and decoded text."""

    prompt_ids: list[int]
    completion_ids: list[int]
    text: str


def render_prompt(tokenizer: Any, text: str, system: str | None = None) -> str:
    """The model's chat template around ``text`` when it has one, else ``text`` itself."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": text})
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return f"{system}\n\n{text}" if system else text


def encode_prompts(tokenizer: Any, prompts: Sequence[str], max_tokens: int) -> list[list[int]]:
    """Token ids of rendered prompts, cut from the left to ``max_tokens``."""
    ids = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    return [list(x[-max_tokens:]) for x in ids]


def stop_ids(tokenizer: Any, model: nn.Module) -> set[int]:
    """The end tokens that finish a completion (the tokenizer's and the model's own)."""
    stops = {tokenizer.eos_token_id}
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    stops.update(eos if isinstance(eos, list) else [eos])
    stops.discard(None)
    return stops  # type: ignore[return-value]


@torch.no_grad()
def generate(
    model: nn.Module,
    tokenizer: Any,
    prompt_ids: Sequence[list[int]],
    num_samples: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> list[list[Generation]]:
    """``num_samples`` completions for each prompt; ``temperature == 0`` is greedy."""
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    width = max(len(p) for p in prompt_ids)
    input_ids = torch.full((len(prompt_ids), width), pad, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for i, ids in enumerate(prompt_ids):  # left padding: completions start at the same column
        input_ids[i, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
        mask[i, width - len(ids) :] = 1
    sampling: dict[str, Any] = (
        {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0}
        if temperature > 0
        else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    )
    out = model.generate(
        input_ids=input_ids.to(device),
        attention_mask=mask.to(device),
        max_new_tokens=max_new_tokens,
        num_return_sequences=num_samples if temperature > 0 else 1,
        pad_token_id=pad,
        **sampling,
    )
    stops = stop_ids(tokenizer, model)
    results: list[list[Generation]] = []
    for i, ids in enumerate(prompt_ids):
        group = []
        for j in range(num_samples):
            # greedy decoding ran once per prompt: its n samples are copies of one answer
            row = (out[i * num_samples + j] if temperature > 0 else out[i])[width:].tolist()
            cut = next((k + 1 for k, t in enumerate(row) if t in stops), len(row))
            completion = row[:cut]
            text = tokenizer.decode(completion, skip_special_tokens=True)
            group.append(Generation(list(ids), completion, text))
        results.append(group)
    return results


def token_logprobs(
    model: nn.Module,
    prompt_ids: Sequence[list[int]],
    completion_ids: Sequence[list[int]],
    pad_id: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log pi(completion token | prefix) for a batch, and its mask.

    Returns ``(logprobs, mask)`` of shape ``(batch, longest completion)``; gradients flow when
    the caller has them enabled. Prompts are left-padded and completions right-padded, so every
    completion starts at the same column and only those columns' logits are computed
    (``logits_to_keep``): the vocabulary projection is most of the cost for small models.
    """
    device = next(model.parameters()).device
    p_width = max(len(p) for p in prompt_ids)
    c_width = max(1, max(len(c) for c in completion_ids))
    batch = len(prompt_ids)
    input_ids = torch.full((batch, p_width + c_width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    mask = torch.zeros((batch, c_width), dtype=torch.float32)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        input_ids[i, p_width - len(p) : p_width] = torch.tensor(p, dtype=torch.long)
        input_ids[i, p_width : p_width + len(c)] = torch.tensor(c, dtype=torch.long)
        attention[i, p_width - len(p) : p_width + len(c)] = 1
        mask[i, : len(c)] = 1.0
    # Positions as generate() counts them (from the first real token), so values match sampling.
    positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
    logits = model(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        position_ids=positions.to(device),
        logits_to_keep=c_width + 1,
    ).logits[:, :-1]
    targets = input_ids[:, p_width:].to(logits.device)
    logps = F.log_softmax(logits.float(), dim=-1).gather(2, targets[..., None]).squeeze(-1)
    mask = mask.to(logps.device)
    return logps * mask, mask
