"""Training in several processes (``accelerate launch`` or ``torchrun``): ranks, shards, gradients.

Both launchers start one Python process per rank and tell it who it is through environment
variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``). Without
them (plain ``python -m trainers.X``) :func:`init_distributed` touches nothing and every helper
here is a no-op, so a single-process run is exactly what it was before.

With them, the process group is created through accelerate's ``PartialState`` (TRL's own path:
its ``Accelerator`` sits on the same state), with gloo on CPU and NCCL on GPUs. The project's
own trainers (MAGRPO, PPO) are data-parallel by hand, like DDP: every rank holds the full policy,
samples its own share of each step's prompts (:func:`rank_share`), scores it in its own sandbox,
and averages gradients with one all-reduce per optimizer step (:func:`all_reduce_gradients`), so
all ranks apply the same update and their parameters stay bit-identical; :func:`params_digest`
lets a run verify that after every step.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

T = TypeVar("T")


@dataclass(frozen=True)
class Distributed:
    """Where this process stands: its rank, the number of ranks, its rank on this machine."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0 alone logs, evaluates and saves."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def env_world() -> Distributed:
    """Rank and world size from the launcher's environment (1 process when none is set)."""

    def number(name: str, default: int) -> int:
        raw = os.environ.get(name, "")
        try:
            return int(raw) if raw else default
        except ValueError:
            raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None

    world = number("WORLD_SIZE", 1)
    rank = number("RANK", 0)
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"RANK={rank} WORLD_SIZE={world}: need 0 <= RANK < WORLD_SIZE")
    return Distributed(rank, world, number("LOCAL_RANK", rank))


def init_distributed() -> Distributed:
    """Join the process group the launcher set up (idempotent); one process: do nothing."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return current()
    info = env_world()
    if not info.enabled:
        if "ACCELERATE_USE_CPU" in os.environ and not torch.cuda.is_available():
            # accelerate's plain launcher starts ONE process on a machine without GPUs,
            # whatever --num_processes says; its torchrun-based launcher needs --multi_gpu.
            warnings.warn(
                "accelerate launch started a single process; on CPU use "
                "`accelerate launch --multi_gpu --num_processes N` (or torchrun) for several",
                stacklevel=2,
            )
        return info
    from accelerate import PartialState

    # cpu=True without CUDA: accelerate then says MULTI_CPU with gloo. Without the flag it
    # creates the group but reports one process (and TRL's Accelerator would believe it).
    state = PartialState(cpu=not torch.cuda.is_available())
    if not torch.distributed.is_initialized():  # e.g. an accelerate that left it to us
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend=backend)
    if state.num_processes != info.world_size:
        raise RuntimeError(
            f"accelerate sees {state.num_processes} processes but WORLD_SIZE={info.world_size}"
        )
    return current()


def current() -> Distributed:
    """This process's place in an initialized process group (rank 0 of 1 otherwise)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        rank = torch.distributed.get_rank()
        return Distributed(rank, torch.distributed.get_world_size(), env_world().local_rank)
    return Distributed()


# ------------------------------------------------------------------ sharding


def rank_share(chunk: Sequence[T], rank: int, world: int, filler: Sequence[T]) -> list[T]:
    """Rank ``rank``'s part of one step's global chunk of prompts.

    The chunk is dealt round-robin (``chunk[rank::world]``). A short chunk (the last of an
    epoch) is first padded from ``filler`` (the epoch's order, cyclically) to a multiple of
    ``world``, as torch's ``DistributedSampler`` pads: every rank rolls out the same number of
    prompts, so every rank takes part in the same number of gradient all-reduces.
    """
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} of {world} processes: need 0 <= rank < world")
    items = list(chunk)
    short = -len(items) % world
    if short:
        if not filler:
            raise ValueError("a short chunk needs filler items to pad it")
        items += [filler[i % len(filler)] for i in range(short)]
    return items[rank::world]


# ------------------------------------------------------------------ collectives


def _world() -> int:
    return current().world_size


def all_reduce_gradients(params: Sequence[torch.nn.Parameter]) -> None:
    """Average ``params``' gradients over all ranks (one flat all-reduce, as DDP's buckets do).

    A rank whose minibatch had no gradient (all advantages zero, or an empty share) counts as
    zeros; when no rank has a gradient the grads stay ``None`` everywhere, so the optimizer
    skips those parameters on every rank exactly as a single process would.
    """
    world = _world()
    if world == 1 or not params:
        return
    device = params[0].device
    parts = [
        (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float() for p in params
    ]
    has = torch.tensor([float(any(p.grad is not None for p in params))], device=device)
    flat = torch.cat([*[x.to(device) for x in parts], has])
    torch.distributed.all_reduce(flat)
    if flat[-1].item() == 0:
        for p in params:
            p.grad = None
        return
    flat /= world
    offset = 0
    for p in params:
        n = p.numel()
        p.grad = flat[offset : offset + n].view_as(p).to(p.dtype).clone()
        offset += n


def broadcast_parameters(params: Iterable[torch.Tensor]) -> None:
    """Copy rank 0's values into every rank's ``params`` (a common start, as DDP does)."""
    if _world() == 1:
        return
    with torch.no_grad():
        for p in params:
            torch.distributed.broadcast(p.data, src=0)


def max_int(value: int) -> int:
    """The largest ``value`` over all ranks (how many minibatches every rank must step)."""
    if _world() == 1:
        return value
    t = torch.tensor([value], dtype=torch.long)
    if torch.distributed.get_backend() == "nccl":
        t = t.cuda()
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return int(t.item())


def gather(obj: T) -> list[T]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` on one process."""
    if _world() == 1:
        return [obj]
    out: list[Any] = [None] * _world()
    torch.distributed.all_gather_object(out, obj)
    return out


def barrier() -> None:
    if _world() > 1:
        torch.distributed.barrier()


# ------------------------------------------------------------------ checks


def params_digest(params: Iterable[tuple[str, torch.Tensor]]) -> str:
    """SHA-256 over the names and exact bytes of ``params``: equal iff bit-identical."""
    h = hashlib.sha256()
    for name, p in params:
        h.update(name.encode())
        h.update(p.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def check_in_sync(digest: str, step: int) -> list[str]:
    """Every rank's digest; raises when any rank's parameters differ from rank 0's."""
    digests = gather(digest)
    if len(set(digests)) > 1:
        raise RuntimeError(
            f"step {step}: parameters diverged across ranks (sha256 per rank: {digests})"
        )
    return digests


def record_step(
    output: str | Path,
    place: Distributed,
    step: int,
    task_ids: Sequence[str],
    named_params: Iterable[tuple[str, torch.Tensor]],
) -> dict[str, Any]:
    """After a step of a run in several processes: check every rank holds the same parameters
    (raises otherwise) and append this rank's prompts and digest to ``ranks/rank-<r>.jsonl``
    (what each rank trained on, for debugging and for the tests). Returns the logged summary."""
    digest = params_digest(named_params)
    check_in_sync(digest, step)
    folder = Path(output) / "ranks"
    folder.mkdir(parents=True, exist_ok=True)
    line = {"step": step, "task_ids": list(task_ids), "params": digest}
    with (folder / f"rank-{place.rank}.jsonl").open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    return {"processes": place.world_size, "params_sha256": digest}


def mean_numbers(records: Sequence[Any]) -> Any:
    """The element-wise mean of equally shaped nested dicts of numbers (per-rank metrics)."""
    first = records[0]
    if isinstance(first, dict):
        return {k: mean_numbers([r[k] for r in records if k in r]) for k in first}
    if isinstance(first, bool) or not isinstance(first, int | float):
        return first
    return sum(records) / len(records)


def shutdown() -> None:
    """Leave the process group at the end of a run (torch warns about a group left open)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
