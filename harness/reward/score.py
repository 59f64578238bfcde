"""score_rows: result rows + problems + a reward config -> rows with analyzers and reward.

Each row gets ``analyzers`` ({name: report}), ``reward`` (``None`` for infrastructure and data
errors: a trainer masks those, never scores them 0), ``reward_parts`` (``sum(parts) + shift ==
reward``), ``reward_range`` ([lo, hi] after the shift) and ``feedback`` (the text a model would
see next turn, in the config's mode).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness.analyzers import Subject, run_analyzers
from harness.analyzers.base import program_of
from harness.analyzers.cache import AnalyzerCache
from harness.language_hooks import hooks_for
from harness.records import Problem
from harness.reward.config import RewardConfig, load_reward_config
from harness.reward.feedback import feedback_analyzers, render_feedback
from harness.reward.missing import drop_unmeasured, leave_out
from harness.reward.presets import LOWEST, PRESET_FUNCTIONS

UNSCORED_KINDS = ("infra", "data")  # not the model's doing: masked, never 0


def score_rows(
    rows: Sequence[dict[str, Any]],
    problems: Mapping[str, Problem],
    config: RewardConfig | str,
    cache: AnalyzerCache | None = None,
    timings: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """New rows (same order) with ``analyzers``, ``reward``, ``reward_parts``,
    ``reward_range`` and ``feedback``."""
    config = load_reward_config(config)
    subjects = [Subject(dict(row), problems.get(str(row.get("task_id"))), "") for row in rows]
    for subject in subjects:
        subject.program = program_of(subject.row, subject.problem)
    reports = run_analyzers(subjects, analyzers_read(config), cache, timings)
    scored = []
    for subject, found in zip(subjects, reports, strict=True):
        row = subject.row
        # The row lists the config's analyzers; the feedback's own (cached like any report)
        # only feed its text.
        analyzers = {name: found[name] for name in config.analyzers}
        language = None if subject.problem is None else hooks_for(subject.problem)
        if language is not None:  # JS, C++, Java, Rust: syntax = compiles; no Python tools
            assert subject.problem is not None
            analyzers = language.reports(row, subject.problem, analyzers)
        row["analyzers"] = analyzers
        row.update(reward_fields(row, subject.problem, analyzers, config))
        row["feedback"] = render_feedback(  # with the analyzers' tree: parsed once at most
            {**row, "analyzers": {**found, **analyzers}},
            subject.problem,
            config.feedback,
            config.sandbox_slice,
            tree=subject.parsed_tree,
        )
        scored.append(row)
    return scored


def analyzers_read(config: RewardConfig) -> tuple[str, ...]:
    """Every analyzer :func:`score_rows` runs for ``config``: its own, then those its
    feedback's text reads. A judging worker may make the per-program ones ahead
    (:func:`harness.analyzers.analyze_ahead`)."""
    return tuple(dict.fromkeys((*config.analyzers, *feedback_analyzers(config.feedback))))


def reward_fields(
    row: Mapping[str, Any],
    problem: Problem | None,
    analyzers: Mapping[str, Any],
    config: RewardConfig,
) -> dict[str, Any]:
    """``reward``, ``reward_parts`` and ``reward_range`` of one row."""
    if row.get("status") == "error" and row.get("error_kind") in UNSCORED_KINDS:
        return {"reward": None, "reward_parts": {}, "reward_range": None}
    if problem is None:
        return {"reward": None, "reward_parts": {}, "reward_range": None}
    if config.aggregator is not None:
        parts, bounds = _custom(row, problem, analyzers, config)
    else:
        parts, bounds = PRESET_FUNCTIONS[config.preset](row, problem, analyzers, config.params)
    missing: dict[str, str] = {}
    preset = "custom" if config.aggregator is not None else config.preset
    language = hooks_for(problem)
    if language is not None:  # parts no analyzer gives in this language: left out, named
        missing = language.missing_parts(preset, parts)
        parts, bounds, missing = leave_out(parts, bounds, missing, config.params)
    # Parts an analyzer could not measure here (efficiency without a yardstick): named, not 0.
    parts, bounds, unmeasured = drop_unmeasured(preset, parts, bounds, analyzers, config.params)
    missing.update(unmeasured)
    if language is not None and not parts:  # nothing this preset measures exists: masked
        return {"reward": None, "reward_parts": {}, "reward_range": None, "reward_missing": missing}
    parts = {k: round(float(v), 10) for k, v in parts.items()}
    reward = round(sum(parts.values()) + config.shift, 10)
    reward_range = None if bounds is None else [bounds[0] + config.shift, bounds[1] + config.shift]
    fields = {"reward": reward, "reward_parts": parts, "reward_range": reward_range}
    if missing:
        fields["reward_missing"] = missing  # named, not scored as 0
    return fields


def least_reward(config: RewardConfig | str) -> float | None:
    """The lowest reward ``config`` gives (its range's low end, shifted): what a sample gets
    that the model made unjudgeable by its own doing (a response past the size limit). None
    for a custom aggregator that declares no ``reward_range``."""
    config = load_reward_config(config)
    if config.aggregator is not None:
        bounds = config.params.get("reward_range")
        return None if bounds is None else float(bounds[0]) + config.shift
    return LOWEST[config.preset] + config.shift


def _custom(
    row: Mapping[str, Any], problem: Problem, analyzers: Mapping[str, Any], config: RewardConfig
) -> tuple[dict[str, float], tuple[float, float] | None]:
    assert config.aggregator is not None
    value = config.aggregator(row, problem, analyzers, config.params)
    if isinstance(value, Mapping):
        parts = {str(k): float(v) for k, v in value.items()}
    else:
        parts = {"custom": float(value)}
    if not all(math.isfinite(v) for v in parts.values()):
        raise ValueError(f"{config.source}: aggregator {config.aggregator_path} gave {parts}")
    bounds = config.params.get("reward_range")
    return parts, None if bounds is None else (float(bounds[0]), float(bounds[1]))
