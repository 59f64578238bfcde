"""Items to problems: a registered suite's task by id, or an inline problem from the cache."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from harness.records import Problem
from harness.rewardapi.inline import InlineCache
from harness.rewardapi.items import Item, RewardInputError
from suites.errors import SuiteError
from suites.registry import JSONL_PREFIX, default_data_dir, load_splits


class ProblemResolver:
    """The problem of each item. Suites are loaded once (every split: a task id names one
    problem whatever its split) and indexed by task id."""

    def __init__(self, data_dir: Path | None = None, *, allow_inline: bool = True):
        self.allow_inline = allow_inline
        self.data_dir = default_data_dir(data_dir)  # else $CODEEVAL_DATA_DIR
        self.inline = InlineCache()
        self._suites: dict[str, dict[str, Problem]] = {}
        self._lock = threading.Lock()

    def needs_building(self, items: Sequence[Item]) -> bool:
        """Whether resolving ``items`` may build something (an inline problem, a suite not
        loaded yet): that parses Python, which takes turns across threads
        (:meth:`harness.rewardapi.engine.RewardEngine.exclusive`). Known task ids are lookups."""
        with self._lock:
            loaded = set(self._suites)
        return any(item.inline is not None or item.suite not in loaded for item in items)

    def resolve(self, items: Sequence[Item]) -> list[Problem]:
        """One problem per item, in order; raises :class:`RewardInputError` naming the item."""
        return [self.problem(item, f"items[{i}]") for i, item in enumerate(items)]

    def problem(self, item: Item, where: str) -> Problem:
        if item.inline is not None:
            if not self.allow_inline:
                raise RewardInputError(
                    f"{where}.problem",
                    "inline problems are turned off here (their tests run as trusted code): "
                    "name a registered suite's task_id",
                )
            return self.inline.get(item.inline, f"{where}.problem")
        tasks = self.suite(item.suite, f"{where}.suite")
        problem = tasks.get(str(item.task_id))
        if problem is None:
            raise RewardInputError(
                f"{where}.task_id", f"unknown task id {item.task_id!r} in suite {item.suite!r}"
            )
        return problem

    def suite(self, name: str, where: str) -> dict[str, Problem]:
        with self._lock:
            tasks = self._suites.get(name)
        if tasks is not None:
            return tasks
        if name.startswith(JSONL_PREFIX):  # a request must not name files on the scoring host
            raise RewardInputError(
                where,
                "a file suite (jsonl:PATH) cannot be named here: register it, or send inline problems",
            )
        try:
            splits = load_splits(name, self.data_dir)
        except SuiteError as exc:
            raise RewardInputError(where, str(exc)) from None
        tasks = {p.task_id: p for problems in splits.values() for p in problems}
        with self._lock:
            self._suites[name] = tasks
        return tasks
