"""TRL's training dataset: each problem's prompt (``trainers.common.problems``) as chat messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.records import Problem
from trainers.common.problems import prompt_text


def conversation(problem: Problem, system: str | None = None) -> list[dict[str, str]]:
    """The prompt as chat messages (TRL applies the model's chat template)."""
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": prompt_text(problem)})
    return messages


def make_dataset(problems: Sequence[Problem], system: str | None = None) -> Any:
    """A ``datasets.Dataset`` with ``prompt`` (chat messages) and ``task_id`` columns."""
    from datasets import Dataset

    return Dataset.from_list(
        [{"prompt": conversation(p, system), "task_id": p.task_id} for p in problems]
    )
