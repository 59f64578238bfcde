"""Evaluation configs: a YAML file per Coder configuration.

```yaml
# configs/coder/feedback_bt.yaml
dataset: null            # DATASET folder (default: the offline pairs in the cache)
levels: [0, 1, 2, 3]     # which level_N folders (default: all)
limit: 10                # pairs per level (default: all)
coder:                   # any CoderSettings field
  analyzers: [mypy, signature, hallucination, tests]
  model_first: smollm2-135m
  max_iter: 5
  backtracking: true
scores: [levenshtein_distance_score, bleu_score, all_analyzers_passed_score]
```

The config's name is its file name without ``.yaml``. A wrong field is a :class:`ConfigError`
that names the file and the field.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.coder.settings import CoderSettings, setting_names

TOP_LEVEL = ("name", "dataset", "levels", "limit", "coder", "scores", "judge_model")


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class EvalConfig:
    name: str
    path: Path | None
    coder: CoderSettings
    dataset: Path | None = None
    levels: tuple[int, ...] | None = None
    limit: int | None = None
    scores: tuple[str, ...] = ()
    judge_model: str = ""

    def dataset_dir(self) -> Path:
        from harness.coder.pairs import default_dataset

        return self.dataset or default_dataset()


def load_config(path: str | Path) -> EvalConfig:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of fields, got {type(data).__name__}")
    return config_from_dict(data, path)


def config_from_dict(data: dict[str, Any], path: Path | None = None) -> EvalConfig:
    where = str(path) if path else "<config>"
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(TOP_LEVEL)})")
    coder_data = data.get("coder") or {}
    if not isinstance(coder_data, dict):
        raise ConfigError(f"{where}: field 'coder' must be a mapping of Coder settings")
    settings = _coder_settings(coder_data, where)
    name = data.get("name") or (path.stem if path else "config")
    levels, limit = _levels(data, where), _limit(data, where)
    scores, dataset = _scores(data, where), _dataset(data, where)
    base = path.parent if path else Path.cwd()
    return EvalConfig(
        name=str(name),
        path=path,
        coder=settings,
        dataset=(base / Path(dataset).expanduser()) if dataset else None,
        levels=tuple(levels) if levels is not None else None,
        limit=limit,
        scores=tuple(scores),
        judge_model=str(data.get("judge_model") or settings.judge_model or ""),
    )


def _levels(data: dict[str, Any], where: str) -> list[int] | None:
    levels = data.get("levels")
    if levels is not None and (
        not isinstance(levels, list) or not all(isinstance(x, int) and x >= 0 for x in levels)
    ):
        raise ConfigError(
            f"{where}: field 'levels' must be a list of level numbers, e.g. [0, 1, 2]"
        )
    return levels


def _limit(data: dict[str, Any], where: str) -> int | None:
    limit = data.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ConfigError(f"{where}: field 'limit' must be a positive number of pairs per level")
    return limit


def _scores(data: dict[str, Any], where: str) -> list[str]:
    from harness.coder.metrics import METRICS

    scores = data.get("scores") or []
    if not isinstance(scores, list):
        raise ConfigError(f"{where}: field 'scores' must be a list of metric names")
    for score in scores:
        if score not in METRICS:
            raise ConfigError(
                f"{where}: field 'scores': unknown metric {score!r} (known: {', '.join(METRICS)})"
            )
    return scores


def _dataset(data: dict[str, Any], where: str) -> str | None:
    dataset = data.get("dataset")
    if dataset is not None and not isinstance(dataset, str):
        raise ConfigError(f"{where}: field 'dataset' must be a folder path")
    return dataset


def _coder_settings(data: dict[str, Any], where: str) -> CoderSettings:
    known = setting_names()
    hints = typing.get_type_hints(CoderSettings)
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(
                f"{where}: field coder.{key}: unknown setting (known: {', '.join(known)})"
            )
        values[key] = _typed(value, hints[key], f"{where}: field coder.{key}")
    try:
        return CoderSettings(**values)
    except ValueError as exc:
        name = str(exc).split("coder setting ", 1)[-1].split("=", 1)[0]
        raise ConfigError(f"{where}: field coder.{name}: {exc}") from exc


def _typed(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against a settings field's type (ints are fine where floats are)."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of names, got {value!r}")
        return tuple(value)
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif hint is str:
        ok = isinstance(value, str)
    else:  # pragma: no cover - every settings field has one of the types above
        ok = True
    if not ok:
        expected = getattr(hint, "__name__", str(hint))
        raise ConfigError(f"{where}: expected {expected}, got {value!r}")
    return value
