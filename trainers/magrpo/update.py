"""One agent's optimizer updates on its targets: minibatches, PPO epochs, clipped ratios.

With one update per rollout buffer (``ppo_epochs == 1`` and no minibatches) the policy that
sampled is the one being differentiated, so the loss is ``A * log pi`` summed as configured:
exactly MAGRPO's original loss under ``loss_aggregation=sum``. With several updates, the
sampling policy's token log-probs are computed once up front and each update uses the ratio
to them, clipped to ``[1 - epsilon_low, 1 + epsilon_high]`` (DAPO's clip-higher): later
updates then stay near the data they learn from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from trainers.common import distributed as dist
from trainers.common.policy import AgentPolicy
from trainers.common.sampling import token_logprobs
from trainers.magrpo.config import MAGRPOSettings
from trainers.magrpo.loss import turn_weights_for
from trainers.magrpo.recipe import recipe_loss
from trainers.magrpo.targets import Target


def _logprobs(
    agent: AgentPolicy, micro: Sequence[Target], pad: int
) -> tuple[torch.Tensor, torch.Tensor]:
    return token_logprobs(
        agent.model,
        [t.completion.prompt_ids for t in micro],
        [t.completion.completion_ids for t in micro],
        pad,
    )


def old_logprobs(
    agent: AgentPolicy, targets: Sequence[Target], pad: int, micro_batch: int
) -> dict[int, torch.Tensor]:
    """The sampling policy's token log-probs per target (by ``id``), before any update."""
    out: dict[int, torch.Tensor] = {}
    with torch.no_grad():
        for start in range(0, len(targets), micro_batch):
            micro = targets[start : start + micro_batch]
            logp, _ = _logprobs(agent, micro, pad)
            for row, t in enumerate(micro):
                out[id(t)] = logp[row].detach()
    return out


def update_agent(
    agent: AgentPolicy,
    optimizer: torch.optim.Optimizer,
    targets: list[Target],
    settings: MAGRPOSettings,
    world: int,
    micro_batch: int,
    sync: Callable[[AgentPolicy], None],
) -> dict[str, float]:
    """Minibatch updates of ``agent`` over ``ppo_epochs`` passes; loss, grad norm, clip share."""
    weights = settings.turn_weights()
    size = settings.minibatch_size or len(targets)
    per_epoch = math.ceil(len(targets) / size) if targets else 0
    # Every rank must join the same number of gradient all-reduces: the largest count.
    per_epoch = dist.max_int(per_epoch) if world > 1 else per_epoch
    count = settings.ppo_epochs * per_epoch
    agent.activate()
    pad = agent.tokenizer.pad_token_id or 0
    live_all = [t for t in targets if t.advantage != 0.0]  # zero advantage: zero gradient
    old = old_logprobs(agent, live_all, pad, micro_batch) if count > 1 else None
    losses, norms, clipped = [], [], []
    for index in range(count):
        start = (index % per_epoch) * size
        batch = targets[start : start + size]  # empty past this rank's end
        optimizer.zero_grad(set_to_none=True)
        tokens = float(sum(len(t.completion.completion_ids) for t in batch)) or 1.0
        total, shares = 0.0, []
        live = [t for t in batch if t.advantage != 0.0]
        for m in range(0, len(live), micro_batch):
            micro = live[m : m + micro_batch]
            logp, mask = _logprobs(agent, micro, pad)
            old_logp = None
            if old is not None:
                old_logp = torch.zeros_like(logp)
                for row, t in enumerate(micro):
                    n = len(t.completion.completion_ids)
                    old_logp[row, :n] = old[id(t)][:n].to(logp.device)
            loss, share = recipe_loss(
                logp,
                mask,
                torch.tensor([t.advantage for t in micro]),
                turn_weights_for([t.completion.turn for t in micro], weights),
                settings.loss_aggregation,
                old_logp,
                settings.epsilon_low,
                settings.epsilon_high,
                num_sequences=len(batch),
                num_tokens=tokens,
            )
            loss.backward()
            total += loss.item()
            shares.append(share)
        sync(agent)
        params = agent.parameters()
        if settings.max_grad_norm > 0 and any(p.grad is not None for p in params):
            norm = torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
            norms.append(float(norm))
        optimizer.step()
        losses.append(total)
        clipped.extend(shares)
    return {
        "loss": sum(losses) / max(1, len(losses)),
        "grad_norm": sum(norms) / len(norms) if norms else 0.0,
        "clip_fraction": sum(clipped) / len(clipped) if clipped else 0.0,
    }
