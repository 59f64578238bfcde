"""PPO's forward passes: the value head, per-token log-probs and values, joint-state values."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


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


def hidden_size(model: nn.Module) -> int:
    """The width of ``model``'s hidden states (what a value head reads)."""
    if hasattr(model, "config"):
        return int(model.config.hidden_size)
    return int(model.get_input_embeddings().embedding_dim)  # type: ignore[operator]
