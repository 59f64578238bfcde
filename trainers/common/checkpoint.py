"""Checkpoints that resume to the same state: trained parameters, optimizers, RNGs and step.

A checkpoint is a folder ``checkpoint-<step>/`` with ``state.pt`` (trained parameters per
agent, optimizer state dicts, the RNG states of Python, NumPy and torch, and the trainer's own
counters) and ``config.yaml``; ``<output.dir>/latest`` names the newest one. A run in several processes adds
``rng-rank<r>.pt`` for every rank but 0 (rank 0's RNG states are in ``state.pt``): each rank
samples from its own random stream, and a resumed rank continues that stream.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

STATE_FILE = "state.pt"


def rng_state() -> dict[str, Any]:
    """The RNG states a training step consumes."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def rank_rng_file(folder: str | Path, rank: int) -> Path:
    return Path(folder) / f"rng-rank{rank}.pt"


def save_rank_rng(folder: str | Path, rank: int) -> Path:
    """Write this rank's RNG states into checkpoint ``folder`` (ranks other than 0)."""
    path = rank_rng_file(folder, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(rng_state(), tmp)
    os.replace(tmp, path)
    return path


def load_rank_rng(folder: str | Path, rank: int) -> bool:
    """Restore this rank's RNG states from ``folder``; False when it holds none for ``rank``."""
    path = rank_rng_file(folder, rank)
    if not path.exists():
        return False
    set_rng_state(torch.load(path, map_location="cpu", weights_only=False))
    return True


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def save_checkpoint(
    output_dir: str | Path,
    step: int,
    params: Mapping[str, Mapping[str, torch.Tensor]],
    optimizers: Mapping[str, torch.optim.Optimizer],
    trainer_state: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<output_dir>/checkpoint-<step>`` and point ``latest`` at it."""
    folder = Path(output_dir) / f"checkpoint-{step}"
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "step": step,
        "params": {
            a: {n: t.detach().cpu().clone() for n, t in p.items()} for a, p in params.items()
        },
        "optimizers": {a: opt.state_dict() for a, opt in optimizers.items()},
        "rng": rng_state(),
        "trainer_state": dict(trainer_state),
    }
    tmp = folder / (STATE_FILE + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, folder / STATE_FILE)  # a crash mid-write never leaves a half checkpoint
    if config is not None:
        (folder / "config.yaml").write_text(yaml.safe_dump(dict(config), sort_keys=False))
    (Path(output_dir) / "latest").write_text(folder.name + "\n")
    return folder


def resolve_checkpoint(path: str | Path, output_dir: str | Path | None = None) -> Path:
    """A checkpoint folder from a path, or ``latest`` (read from ``output_dir``)."""
    if str(path) == "latest":
        if output_dir is None:
            raise FileNotFoundError("resume_from=latest needs output.dir")
        marker = Path(output_dir) / "latest"
        if not marker.exists():
            raise FileNotFoundError(f"{marker}: no checkpoint to resume from")
        return Path(output_dir) / marker.read_text().strip()
    folder = Path(path)
    if (folder / "latest").exists() and not (folder / STATE_FILE).exists():
        folder = folder / (folder / "latest").read_text().strip()
    if not (folder / STATE_FILE).exists():
        raise FileNotFoundError(f"{folder}: not a checkpoint (no {STATE_FILE})")
    return folder


def load_checkpoint(
    path: str | Path,
    params: Mapping[str, Mapping[str, torch.nn.Parameter]],
    optimizers: Mapping[str, torch.optim.Optimizer],
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Copy saved parameters and optimizer states in place; returns step and trainer state."""
    folder = resolve_checkpoint(path)
    payload = torch.load(folder / STATE_FILE, map_location="cpu", weights_only=False)
    for agent, targets in params.items():
        saved = payload["params"].get(agent)
        if saved is None:
            raise KeyError(f"{folder}: checkpoint has no parameters for agent {agent!r}")
        missing = set(targets) - set(saved)
        if missing:
            raise KeyError(f"{folder}: agent {agent!r} lacks {sorted(missing)[:3]}...")
        with torch.no_grad():
            for name, param in targets.items():
                param.copy_(saved[name].to(param.device, param.dtype))
    for agent, opt in optimizers.items():
        opt.load_state_dict(payload["optimizers"][agent])
    if restore_rng:
        set_rng_state(payload["rng"])
    return {"step": payload["step"], "trainer_state": payload["trainer_state"]}
