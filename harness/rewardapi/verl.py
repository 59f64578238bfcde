"""verl: ``compute_score`` for ``custom_reward_function``, and its batched form.

verl's reward managers call (verl/workers/reward_manager/naive.py and batch.py)::

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)
    compute_score(data_sources=..., solution_strs=..., ground_truths=..., extra_infos=..., **reward_kwargs)

with ``data_source`` and ``ground_truth`` from the dataset's ``data_source`` and
``reward_model.ground_truth`` fields, and ``reward_kwargs`` from
``custom_reward_function.reward_kwargs`` (here: ``reward``, ``workers``). A sample is either

- a registered suite's task: ``data_source`` is the suite (``humaneval``, ``mbpp``,
  ``humaneval-js`` ...) and ``ground_truth`` the task id; or
- an inline problem: ``ground_truth`` is an object (or its JSON text) with ``prompt``,
  ``tests``, ``entry_point`` and optionally ``language`` and ``reference``
  (:mod:`harness.rewardapi.inline`).

Each call returns ``{"score": float, "passed": 0/1, "unscored": 0/1}`` per sample (verl keeps
the extra keys as ``reward_extra_info``). verl's reward tensor has no "missing" value, so a
sample the harness could not judge is never scored 0: it gets a neutral score, the mean
score of the judged samples of the same problem in the batch (no advantage of its own in a
GRPO group), else of the whole batch, and ``unscored: 1``. The one-sample form sees no batch:
it uses the running mean of the problem's judged samples in this process (else of all
judged samples; 0.0 before any). Use the batched form (``reward_model.reward_manager=batch``) where that matters.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from harness.rewardapi.engine import RewardEngine
from harness.rewardapi.items import RewardInputError

_engines: dict[tuple[str | None, int], RewardEngine] = {}
_engines_lock = threading.Lock()
_running: dict[str, tuple[float, int]] = {}  # problem key -> (sum, count) of judged scores


def engine_for(reward: str | None = None, workers: int = 2) -> RewardEngine:
    """One engine per reward and worker count in this process (verl calls per batch)."""
    with _engines_lock:
        engine = _engines.get((reward, workers))
        if engine is None:
            engine = _engines[(reward, workers)] = RewardEngine(reward=reward, workers=workers)
        return engine


def item_for(data_source: Any, solution_str: Any, ground_truth: Any, where: str) -> dict[str, Any]:
    """The engine's item for one verl sample."""
    truth = ground_truth
    if isinstance(truth, str) and truth.lstrip().startswith("{"):
        try:
            truth = json.loads(truth)
        except json.JSONDecodeError as exc:
            raise RewardInputError(f"{where}.ground_truth", f"not valid JSON: {exc}") from None
    if isinstance(truth, Mapping):
        problem = {str(k): v for k, v in truth.items() if v is not None}
        return {"completion": str(solution_str), "problem": problem}
    if truth is None or not str(truth).strip():
        raise RewardInputError(
            f"{where}.ground_truth", "missing: a task id, or an inline problem object"
        )
    return {"completion": str(solution_str), "task_id": str(truth), "suite": str(data_source)}


def compute_score(
    data_source: Any,
    solution_str: Any,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    reward: str | None = None,
    workers: int = 2,
    **_: Any,
) -> dict[str, float]:
    """One sample's score (verl's ``custom_reward_function``, naive reward manager)."""
    item = item_for(data_source, solution_str, ground_truth, "sample")
    row = engine_for(reward, workers).score([item])[0]
    keys = (problem_key(row), "")  # the problem's running mean, and every problem's
    with _engines_lock:
        if row["reward"] is not None:
            for key in keys:
                total, count = _running.get(key, (0.0, 0))
                _running[key] = (total + row["reward"], count + 1)
            return result(row, row["reward"])
        means = [t / n for t, n in (_running.get(k, (0.0, 0)) for k in keys) if n]
    return result(row, means[0] if means else 0.0)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    reward: str | None = None,
    workers: int = 2,
    **_: Any,
) -> list[dict[str, float]]:
    """Every sample's score in one engine call (verl's batch reward manager)."""
    items = [
        item_for(source, solution, truth, f"samples[{i}]")
        for i, (source, solution, truth) in enumerate(
            zip(data_sources, solution_strs, ground_truths, strict=True)
        )
    ]
    rows = engine_for(reward, workers).score(items)
    fills = neutral_scores(rows)
    return [
        result(row, row["reward"] if row["reward"] is not None else fills[i])
        for i, row in enumerate(rows)
    ]


def neutral_scores(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """For each row, the mean judged reward of its problem in the batch, else of the batch,
    else 0.0 (nothing judged: any constant gives a group no advantage)."""
    by_problem: dict[str, list[float]] = {}
    for row in rows:
        if row["reward"] is not None:
            by_problem.setdefault(problem_key(row), []).append(float(row["reward"]))
    judged = [r for rewards in by_problem.values() for r in rewards]
    overall = sum(judged) / len(judged) if judged else 0.0
    fills = []
    for row in rows:
        own = by_problem.get(problem_key(row))
        fills.append(sum(own) / len(own) if own else overall)
    return fills


def problem_key(row: Mapping[str, Any]) -> str:
    return f"{row['suite']}\0{row['task_id']}"


def result(row: Mapping[str, Any], score: float) -> dict[str, float]:
    return {
        "score": float(score),
        "passed": float(bool(row.get("passed"))),
        "unscored": float(row["reward"] is None),
    }
