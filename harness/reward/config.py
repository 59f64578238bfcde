"""Reward configs: a preset name or a YAML file -> :class:`RewardConfig`.

A YAML file names a ``preset`` (``weighted``, ``binary``, ``code_levels``, ``class_levels``) or
an ``aggregator`` given by dotted path (``pkg.mod:func``), plus its parameters::

    preset: weighted            # or: aggregator: mypkg.rewards:my_reward
    evaluation: {...}           # weighted only (see configs/rewards/weighted.yaml)
    shift: 0.0                  # added to the sum of the parts
    feedback: level_feedback    # none, plain, passed, level_passed, level_feedback,
                                # token_report, group_feedback (ROW_FEEDBACK_MODES)
    sandbox_slice: 1            # failed cases feedback may show: N first, -N last, "all", 0 none
    analyzers: [radon]          # extra analyzers to run (added to the preset's own)
    params: {...}               # free-form, handed to a user aggregator
    dependencies:               # third-party modules every Python program of the run may
      bs4: beautifulsoup4==4.12.3   # import, pinned (or the path of an allow-list file);
                                # fetched by `codeeval deps fetch SUITE --reward THIS.yaml`

A bare name (``weighted``) loads ``configs/rewards/<name>.yaml`` when the project's configs
folder is there, else the same preset's built-in defaults, so an installed package works too.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from harness.analyzers import ANALYZERS, DEFAULT_ON
from harness.paths import bundled
from harness.reward.feedback import FEEDBACK_MODES, ROW_FEEDBACK_MODES

PRESETS: tuple[str, ...] = ("weighted", "binary", "code_levels", "class_levels")
CONFIG_DIR = bundled("rewards")  # package data: found wherever the package is installed

# Analyzers each preset reads; a config's ``analyzers`` list adds to these.
PRESET_ANALYZERS: dict[str, tuple[str, ...]] = {
    "weighted": DEFAULT_ON,
    "binary": ("syntax", "tests"),
    "code_levels": ("syntax", "structure", "tests"),
    "class_levels": ("syntax", "structure", "tests"),
    "custom": DEFAULT_ON,
}

WEIGHTED_DEFAULTS: dict[str, Any] = {
    "syntax_weight": 0.2,
    "execution_weight": 0.3,
    "test_case_weight": 0.3,
    "quality_weight": 0.1,
    "efficiency_weight": 0.1,
    "test_timeout": 5,
    "memory_limit": 512,
    "code_quality": {"enable_pep8": True, "max_complexity": 10, "security_checks": True},
}
BUILTIN: dict[str, dict[str, Any]] = {
    "weighted": {"preset": "weighted", "evaluation": WEIGHTED_DEFAULTS, "shift": 0.0},
    "binary": {
        "preset": "binary",
        "shift": 0.0,
        "feedback": "passed",
        "sandbox_slice": 0,
        "every_case": False,
    },
    "code_levels": {"preset": "code_levels", "helper": True, "helper_name": "aux", "shift": -4.0},
    "code_levels_single": {"preset": "code_levels", "helper": False, "shift": -2.1},
    "class_levels": {"preset": "class_levels", "shift": -6.0},
}

# A user aggregator: (row, problem, analyzer reports, params) -> float or {part: float}.
Aggregator = Callable[..., Any]
AGGREGATOR_ARGS = ("row", "problem", "analyzers", "params")


class RewardConfigError(ValueError):
    """A reward config that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class RewardConfig:
    """A loaded reward: which aggregator, its parameters, the analyzers it needs, feedback."""

    name: str
    preset: str  # one of PRESETS, or "custom" for a user aggregator
    shift: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    analyzers: tuple[str, ...] = ()
    feedback: str = "level_feedback"
    sandbox_slice: int | str = 1
    source: str = "<builtin>"
    aggregator: Aggregator | None = None
    aggregator_path: str | None = None
    # Import name -> pinned distribution, added to every Python problem's own allow-list
    # (harness.deps.resolve); errors name this config's file, line and entry.
    dependencies: dict[str, str] = field(default_factory=dict)
    # Judge every case even after one failed: a reward that reads per-case results (partial
    # credit) needs them all. A reward of the verdict alone (binary, stdio_all_pass) says
    # false, and problems that can stop at their first failed case then do (EvalPlus's
    # inputs, stdio tests).
    every_case: bool = True

    @property
    def needs_coverage(self) -> bool:
        """Whether the sandbox must measure coverage for this reward."""
        return "coverage" in self.analyzers

    @property
    def test_timeout(self) -> float | None:
        value = self.params.get("evaluation", {}).get("test_timeout")
        return None if value is None else float(value)

    @property
    def memory_limit(self) -> int | None:
        value = self.params.get("evaluation", {}).get("memory_limit")
        return None if value is None else int(value)


def load_reward_config(spec: str | os.PathLike[str] | RewardConfig) -> RewardConfig:
    """A preset name (``weighted``), a preset YAML path, or a config as it is."""
    if isinstance(spec, RewardConfig):
        return spec
    return _load(str(spec))


@lru_cache(maxsize=64)
def _load(spec: str) -> RewardConfig:
    path = Path(spec)
    if spec.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise RewardConfigError(f"{spec}: reward config file not found")
        return from_mapping(_read_yaml(path), str(path))
    bundled = CONFIG_DIR / f"{spec}.yaml"
    if bundled.is_file():
        return from_mapping(_read_yaml(bundled), str(bundled), name=spec)
    if spec in BUILTIN:
        return from_mapping(BUILTIN[spec], f"<builtin {spec}>", name=spec)
    known = ", ".join(sorted(BUILTIN))
    raise RewardConfigError(f"reward {spec!r}: not a preset ({known}) nor a YAML file")


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise RewardConfigError(f"{path}{where}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise RewardConfigError(f"{path}: expected a mapping at the top level")
    return data


def _preset_or_aggregator(data: Mapping[str, Any], source: str) -> tuple[str, Any]:
    """The preset's name, and the custom aggregator when ``aggregator:`` names one."""
    path = data.get("aggregator")
    if path is not None:
        return "custom", resolve_aggregator(str(path), source)
    preset = str(data.get("preset", ""))
    if preset not in PRESETS:
        raise RewardConfigError(
            f"{source}: preset {preset!r} is not one of {', '.join(PRESETS)} "
            "(or give aggregator: pkg.mod:func)"
        )
    return preset, None


def _number(data: Mapping[str, Any], key: str, source: str) -> float:
    try:
        return float(data.get(key, 0.0))
    except (TypeError, ValueError):
        raise RewardConfigError(f"{source}: {key} must be a number, got {data[key]!r}") from None


def _feedback_mode(data: Mapping[str, Any], source: str) -> str:
    feedback = str(data.get("feedback", "level_feedback"))
    if feedback not in ROW_FEEDBACK_MODES:
        why = " (a personal mode is per agent: a trainer's external.mode)"
        raise RewardConfigError(
            f"{source}: feedback {feedback!r} is not one of {', '.join(ROW_FEEDBACK_MODES)}"
            + (why if feedback in FEEDBACK_MODES else "")
        )
    return feedback


def _dependencies(data: Mapping[str, Any], source: str) -> dict[str, str]:
    """The config's pinned third-party allow-list (harness.deps)."""
    if data.get("dependencies") is None:
        return {}
    from harness.deps.pins import PinError
    from harness.deps.sources import reward_allowlist

    try:
        return reward_allowlist(data["dependencies"], source)
    except PinError as exc:
        raise RewardConfigError(str(exc)) from None


def from_mapping(data: Mapping[str, Any], source: str, name: str | None = None) -> RewardConfig:
    """Validate a config mapping (from YAML or code); errors name ``source`` and the field."""
    data = dict(data)
    known_keys = {
        "preset", "aggregator", "evaluation", "shift", "feedback", "sandbox_slice",
        "analyzers", "params", "helper", "helper_name", "name", "dependencies", "every_case",
    }  # fmt: skip
    unknown = sorted(set(data) - known_keys)
    if unknown:
        raise RewardConfigError(f"{source}: unknown key(s) {unknown}; known: {sorted(known_keys)}")
    path = data.get("aggregator")
    preset, aggregator = _preset_or_aggregator(data, source)
    shift = _number(data, "shift", source)
    feedback = _feedback_mode(data, source)
    extra = data.get("analyzers") or []
    if not isinstance(extra, list) or any(a not in ANALYZERS for a in extra):
        raise RewardConfigError(
            f"{source}: analyzers must be a list of {', '.join(sorted(ANALYZERS))}, got {extra!r}"
        )
    params: dict[str, Any] = dict(data.get("params") or {})
    if preset == "weighted":
        params["evaluation"] = _weighted_params(data.get("evaluation") or {}, source)
    for key in ("helper", "helper_name"):
        if key in data:
            params[key] = data[key]
    dependencies = _dependencies(data, source)
    every_case = data.get("every_case", True)
    if not isinstance(every_case, bool):
        raise RewardConfigError(f"{source}: every_case must be true or false, got {every_case!r}")
    return RewardConfig(
        name=str(data.get("name") or name or Path(source).stem),
        preset=preset,
        shift=shift,
        params=params,
        analyzers=tuple(dict.fromkeys([*PRESET_ANALYZERS[preset], *extra])),
        feedback=feedback,
        sandbox_slice=check_slice(data.get("sandbox_slice", 1), source),
        source=source,
        aggregator=aggregator,
        aggregator_path=None if path is None else str(path),
        dependencies=dependencies,
        every_case=every_case,
    )


def _weighted_params(evaluation: Mapping[str, Any], source: str) -> dict[str, Any]:
    merged = {**WEIGHTED_DEFAULTS, **evaluation}
    merged["code_quality"] = {
        **WEIGHTED_DEFAULTS["code_quality"],
        **(evaluation.get("code_quality") or {}),
    }
    unknown = sorted(set(merged) - set(WEIGHTED_DEFAULTS) - {"security_weight"})
    if unknown:
        raise RewardConfigError(f"{source}: evaluation: unknown key(s) {unknown}")
    for key, value in merged.items():
        if key == "code_quality":
            continue
        if not isinstance(value, int | float) or value < 0:
            raise RewardConfigError(f"{source}: evaluation.{key} must be a number >= 0")
    return merged


def check_slice(value: Any, source: str = "sandbox_slice") -> int | str:
    """``sandbox_slice``: an int (N first, -N last, 0 none), ``all``, ``first:N`` or ``last:N``."""
    if value == "all" or value is None:
        return "all"
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        side, _, count = value.partition(":")
        if side in ("first", "last") and count.isdigit():
            return value
    raise RewardConfigError(
        f"{source}: sandbox_slice must be an integer, 'all', 'first:N' or 'last:N', got {value!r}"
    )


def resolve_aggregator(path: str, source: str) -> Aggregator:
    """Import ``pkg.mod:func`` (or ``pkg.mod.func``) and check it takes the aggregator's args."""
    import importlib

    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    try:
        func = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise RewardConfigError(f"{source}: aggregator {path!r} cannot be imported: {exc}") from exc
    if not callable(func):
        raise RewardConfigError(f"{source}: aggregator {path!r} is not callable")
    try:
        inspect.signature(func).bind(*AGGREGATOR_ARGS)
    except TypeError as exc:
        raise RewardConfigError(
            f"{source}: aggregator {path!r} must accept ({', '.join(AGGREGATOR_ARGS)}) "
            f"and return a float or a {{part: float}} mapping: {exc}"
        ) from None
    except ValueError:
        pass  # builtins without a signature: checked when called
    return func
