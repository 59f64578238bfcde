"""Metrics logging: ``<output.dir>/metrics.jsonl`` always, TensorBoard / W&B when asked.

One JSON object per step. Optional sinks are used only when requested and importable; when
one is requested but missing, the logger says so once and carries on with the JSONL file.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _plain(value: Any) -> Any:
    """JSON-safe values: tensors/numpy become Python numbers, non-finite floats become null."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a/b": 1}`` (TensorBoard / W&B scalar names)."""
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            flat.update(flatten(value, name))
        else:
            flat[name] = value
    return flat


def run_logger(config: Any, output: str | Path, enabled: bool = True) -> MetricsLogger:
    """The metrics logger a trainer's config asks for (its ``logging`` section)."""
    from trainers.common.config import to_dict

    return MetricsLogger(
        output,
        tensorboard=config.logging.tensorboard,
        wandb=config.logging.wandb,
        run_name=config.logging.run_name,
        project=config.logging.wandb_project,
        config=to_dict(config),
        enabled=enabled,
    )


class MetricsLogger:
    """Appends one JSON object per step to ``metrics.jsonl`` and mirrors scalars elsewhere."""

    def __init__(
        self,
        output_dir: str | Path,
        tensorboard: bool = False,
        wandb: bool = False,
        run_name: str | None = None,
        project: str = "codeeval-rl",
        config: Mapping[str, Any] | None = None,
        enabled: bool = True,
    ) -> None:
        self.path = Path(output_dir) / "metrics.jsonl"
        self.enabled = enabled  # False on non-main processes of a distributed run
        self._tb: Any = None
        self._wandb: Any = None
        if not enabled:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(Path(output_dir) / "tensorboard"))
            except ImportError:
                warnings.warn(
                    "logging.tensorboard: tensorboard is not installed; skipping it", stacklevel=2
                )
        if wandb:
            try:
                import wandb as wandb_module

                self._wandb = wandb_module.init(
                    project=project, name=run_name, config=dict(config or {})
                )
            except ImportError:
                warnings.warn("logging.wandb: wandb is not installed; skipping it", stacklevel=2)

    def log(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Write one step's metrics; returns the object written."""
        record = {"step": step, **_plain(dict(metrics))}
        if not self.enabled:
            return record
        with self.path.open("a") as handle:
            handle.write(json.dumps(record, sort_keys=False) + "\n")
        scalars = {
            k: v
            for k, v in flatten(record).items()
            if isinstance(v, int | float) and not isinstance(v, bool) and k != "step"
        }
        if self._tb is not None:
            for key, value in scalars.items():
                self._tb.add_scalar(key, value, step)
        if self._wandb is not None:
            self._wandb.log(scalars, step=step)
        return record

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``<output_dir>/metrics.jsonl``."""
    path = Path(output_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
