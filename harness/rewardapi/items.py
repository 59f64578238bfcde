"""The items a reward call scores, checked before anything is judged.

An item is one completion and the problem it answers:

- ``{"completion": str, "task_id": str, "suite": str}``: a registered suite's problem
  (``suite`` defaults to ``humaneval``);
- ``{"completion": str, "problem": {...}}``: an inline problem (:mod:`harness.rewardapi.inline`).

A bad item raises :class:`RewardInputError` naming the field (``items[3].problem.tests``), so a
caller (a trainer's dataset, the reward service's 4xx) can say exactly what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_SUITE = "humaneval"
ITEM_FIELDS = ("completion", "task_id", "suite", "problem")
PROBLEM_FIELDS = ("prompt", "tests", "entry_point", "language", "reference")
REQUIRED_PROBLEM_FIELDS = ("prompt", "tests", "entry_point")


class RewardInputError(ValueError):
    """An item that cannot be scored; ``field`` names it (``items[2].task_id``)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class RewardSetupError(ValueError):
    """A setting that cannot work (the batched verl function under verl's reward loop, an
    unknown reward preset): the message says what to set instead. Never a data problem: those
    mask their row."""


@dataclass(frozen=True)
class InlineSpec:
    """The fields of an inline problem, as given (checked for types, not yet compiled)."""

    prompt: str
    tests: str
    entry_point: str
    language: str = "python"
    reference: str = ""


@dataclass(frozen=True)
class Item:
    """One checked item: a completion and either a suite's task or an inline problem."""

    completion: str
    suite: str = DEFAULT_SUITE
    task_id: str | None = None
    inline: InlineSpec | None = None


def check_items(items: Any) -> list[Item]:
    """``items`` as :class:`Item` records; raises :class:`RewardInputError` on the first bad one."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise RewardInputError("items", f"expected a list of items, got {type(items).__name__}")
    return [check_item(item, f"items[{i}]") for i, item in enumerate(items)]


def check_item(item: Any, where: str) -> Item:
    if not isinstance(item, Mapping):
        raise RewardInputError(where, f"expected an object, got {type(item).__name__}")
    unknown = sorted(str(k) for k in item if k not in ITEM_FIELDS)
    if unknown:
        raise RewardInputError(
            field_path(where, unknown[0]), f"unknown field (known: {', '.join(ITEM_FIELDS)})"
        )
    completion = _string(item, "completion", where, required=True)
    problem = item.get("problem")
    task_id = item.get("task_id")
    if problem is not None and task_id is not None:
        raise RewardInputError(f"{where}.problem", "give either task_id or problem, not both")
    if problem is not None:
        if item.get("suite") is not None:
            raise RewardInputError(f"{where}.suite", "an inline problem belongs to no suite")
        return Item(completion, inline=check_inline(problem, f"{where}.problem"))
    if task_id is None:
        raise RewardInputError(f"{where}.task_id", "missing (or give an inline problem)")
    task_id = _string(item, "task_id", where, required=True, nonempty=True)
    suite = _string(item, "suite", where, required=False, nonempty=True) or DEFAULT_SUITE
    return Item(completion, suite=suite, task_id=task_id)


def check_inline(problem: Any, where: str) -> InlineSpec:
    if not isinstance(problem, Mapping):
        raise RewardInputError(where, f"expected an object, got {type(problem).__name__}")
    unknown = sorted(str(k) for k in problem if k not in PROBLEM_FIELDS)
    if unknown:
        raise RewardInputError(
            field_path(where, unknown[0]), f"unknown field (known: {', '.join(PROBLEM_FIELDS)})"
        )
    values = {
        name: _string(problem, name, where, required=name in REQUIRED_PROBLEM_FIELDS)
        for name in PROBLEM_FIELDS
    }
    if not values["tests"].strip():
        raise RewardInputError(f"{where}.tests", "empty")
    if not values["entry_point"].isidentifier():
        raise RewardInputError(
            f"{where}.entry_point", f"{values['entry_point']!r} is not a function name"
        )
    return InlineSpec(
        prompt=values["prompt"],
        tests=values["tests"],
        entry_point=values["entry_point"],
        language=values["language"] or "python",
        reference=values["reference"],
    )


def field_path(where: str, key: str) -> str:
    """``where.key``, or ``where['key']`` for a key that is not a plain name (as sent)."""
    return f"{where}.{key}" if key.isidentifier() else f"{where}[{key!r}]"


def _string(
    record: Mapping[str, Any], name: str, where: str, *, required: bool, nonempty: bool = False
) -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise RewardInputError(f"{where}.{name}", "missing")
        return ""
    if not isinstance(value, str):
        raise RewardInputError(f"{where}.{name}", f"expected a string, got {type(value).__name__}")
    if nonempty and not value.strip():
        raise RewardInputError(f"{where}.{name}", "empty")
    return value
