"""Offline data for Q-learning: (problem, completion text, reward) episodes.

From an evaluation's ``results.jsonl`` (rows carry the completion and, with ``--llm-reward``,
the reward; the prompt is the problem's, looked up by task id), or from the run history
(schema version 2 stores each sample's prompt and completion text). Only problems of the
training split are kept, so the problems a benchmark holds out never leak into training, and
infrastructure errors (status ``error``) are left out rather than scored. Every problem with a
file names the file, the line and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.history import History
from harness.jsonlines import read_objects
from harness.records import Problem
from trainers.common.config import ConfigError
from trainers.common.reward import harness_failed


class DataError(ConfigError):
    """The offline data is missing or malformed; the message says where and what."""

    kind = "data error"


@dataclass(frozen=True)
class Episode:
    """One recorded completion of one problem and the harness's reward for it."""

    task_id: str
    prompt: str  # the problem's prompt (the trainer adds its instruction and chat template)
    completion: str  # the model's text, as it was generated when the row has it (``raw``)
    reward: float


def _completion(row: Mapping[str, Any]) -> str | None:
    # The model's own tokens are the actions: its raw output where the row keeps one.
    for key in ("raw", "completion", "solution"):
        value = row.get(key)
        if isinstance(value, str):
            return value
    return None


def from_rows(
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    problems: Mapping[str, Problem],
    source: str,
) -> tuple[list[Episode], dict[str, int]]:
    """Episodes from ``(where, row)`` pairs (``where``: "file:line" for messages); returns them
    and the counts of rows left out, by reason."""
    episodes: list[Episode] = []
    skipped = {"not_in_training_split": 0, "infrastructure_error": 0}
    for where, row in rows:
        task = row.get("task_id")
        if not isinstance(task, str):
            raise DataError(f"{where}: field 'task_id' is missing or not a string")
        if task not in problems:
            skipped["not_in_training_split"] += 1
            continue
        if harness_failed(row):
            skipped["infrastructure_error"] += 1
            continue
        reward = row.get("reward")
        if reward is None:
            raise DataError(
                f"{where}: field 'reward' is missing; evaluate with a reward "
                f"(pytest --llm-reward code_levels ...) to learn from {source}"
            )
        if (
            isinstance(reward, bool)
            or not isinstance(reward, int | float)
            or not math.isfinite(reward)
        ):
            raise DataError(f"{where}: field 'reward' must be a finite number, got {reward!r}")
        text = _completion(row)
        if text is None:
            raise DataError(f"{where}: field 'completion' is missing (no completion text)")
        prompt = row.get("prompt")
        prompt = prompt if isinstance(prompt, str) and prompt else problems[task].prompt
        episodes.append(Episode(task, prompt, text, float(reward)))
    return episodes, skipped


def from_results(path: Path | str, problems: Mapping[str, Problem]) -> tuple[list[Episode], dict]:
    """Episodes of a ``results.jsonl``."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file (dqn.data names the offline results.jsonl)")
    rows: list[tuple[str, Mapping[str, Any]]] = [
        (f"{path}:{lineno}", row) for lineno, row in read_objects(path, DataError)
    ]
    return from_rows(rows, problems, str(path))


def from_history(
    history: History, problems: Mapping[str, Problem], run_id: int | None = None
) -> tuple[list[Episode], dict]:
    """Episodes of one recorded run: ``run_id``, or the newest run that stored text."""
    if not history.path.exists():
        raise DataError(f"{history.path}: no run history yet (dqn.data=history)")
    ids = [run_id] if run_id is not None else [r.id for r in history.runs()]
    for rid in ids:
        if history.get(rid) is None:
            raise DataError(f"{history.path}: no run with id {rid} (dqn.data=history:{rid})")
        rows = history.rows(rid)
        with_text = [r for r in rows if isinstance(r.get("completion"), str)]
        if not with_text:
            if run_id is not None:
                raise DataError(
                    f"{history.path}: run {rid} stored no completion text (recorded before "
                    "history schema version 2); evaluate again to record it"
                )
            continue
        where = f"{history.path}#run {rid}"
        return from_rows(
            [(f"{where} sample {i}", r) for i, r in enumerate(with_text)], problems, where
        )
    raise DataError(
        f"{history.path}: no recorded run has completion text (runs recorded before history "
        "schema version 2 have none); evaluate with --llm-reward to record one"
    )
