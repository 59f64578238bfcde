"""The public reward engine: items in, one ``results.jsonl`` row with a reward per item out.

    engine = RewardEngine(reward="weighted", workers=2)
    rows = engine.score([{"completion": code, "task_id": "HumanEval/0"}])
    rows[0]["reward"]  # a float, or None where the harness could not judge the sample

Every batch goes through :func:`harness.evaluate.evaluate` (the one pipeline: prepare and
calibrate, the warm worker pool, judging in the trusted process, the reward config), so a
row is exactly ``evaluate()``'s row for the same sample. The TRL and verl adapters and the
reward service (``codeeval serve``) are built on this class.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.evaluate import evaluate
from harness.records import Problem, Sample
from harness.rewardapi.items import Item, RewardInputError, check_item, check_items
from harness.rewardapi.problems import ProblemResolver

DEFAULT_REWARD = "binary"  # 1.0 when every case passes, else 0.0

# evaluate()'s default results folder is one per process, and the warm pool serves one batch
# at a time: batches from every engine in the process take turns. Building problems takes its
# turn too: it parses Python source, and CPython 3.11's ast is not safe to use from two threads
# at once (gh-106905: "AST constructor recursion depth mismatch", seen here when verl's reward
# loop resolved samples in its executor threads while another batch was judged).
_SCORING = threading.Lock()


class RewardEngine:
    """Scores items (see :mod:`harness.rewardapi.items`) through the one pipeline.

    ``reward``: a preset (``binary``, ``weighted``, ``code_levels``, ``class_levels``) or a
    reward YAML path; None means ``binary``. ``workers``: warm judging processes (0 judges in
    this process). ``data_dir``: the suites' data folder (default ``$CODEEVAL_DATA_DIR``).
    ``executor``: ``local`` or ``ray`` (as :func:`harness.evaluate.evaluate`).
    ``allow_inline``: accept inline problems. Their tests are trusted code (they run in this
    process, as a suite's tests do; only completions are sandboxed): turn them off where the
    callers are not trusted with that.
    Thread-safe: concurrent calls take turns on the pool.
    """

    def __init__(
        self,
        *,
        reward: str | None = None,
        workers: int = 2,
        data_dir: Path | None = None,
        executor: str = "local",
        allow_inline: bool = True,
    ) -> None:
        if workers < 0:
            raise ValueError(f"workers must be 0 or more, got {workers}")
        self.reward = reward or DEFAULT_REWARD
        self.workers = workers
        self.executor = executor
        self.data_dir = data_dir
        self.problems = ProblemResolver(data_dir, allow_inline=allow_inline)
        self._closed = False

    def __getstate__(self) -> dict[str, Any]:
        """Only the settings: a trainer that spawns its reward process (TRL's async GRPO)
        pickles the reward function, and the copy starts its own caches and workers."""
        return {
            "reward": self.reward,
            "workers": self.workers,
            "data_dir": self.data_dir,
            "executor": self.executor,
            "allow_inline": self.problems.allow_inline,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def score(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One row per item, in order. An item is ``{"completion", "task_id", "suite"
        (optional, default humaneval)}`` or ``{"completion", "problem": {"prompt", "tests",
        "entry_point", "language", "reference"}}`` (inline problems, built once and cached by
        content hash). A row is the ``results.jsonl`` row plus ``reward`` (a float, or None
        for a sample the harness could not judge: its status is ``error``). Raises
        :class:`RewardInputError` (naming the field) for a bad item before judging anything."""
        self._check_open()
        checked = check_items(items)
        with self.exclusive(self.problems.needs_building(checked)):
            problems = self.problems.resolve(checked)
        return self.score_problems(problems, [item.completion for item in checked])

    @contextlib.contextmanager
    def exclusive(self, needed: bool = True) -> Iterator[None]:
        """Take the process's turn (when ``needed``): for work that builds problems (it parses
        Python source, which must not run in two threads at once) beside the batches being
        judged. Looking up a loaded suite's task id needs no turn."""
        if not needed:
            yield
            return
        with _SCORING:
            yield

    def score_problems(
        self, problems: Sequence[Problem], completions: Sequence[str]
    ) -> list[dict[str, Any]]:
        """One row per (problem, completion) pair, in order, for problems already built
        (:meth:`resolve_each`, or an adapter's own: verl's code data)."""
        self._check_open()
        rows: list[dict[str, Any] | None] = [None] * len(problems)
        for positions in separate_runs(problems):
            batch = [(i, completions[i], problems[i]) for i in positions]
            for i, row in zip(positions, self._run(batch), strict=True):
                rows[i] = row
        return [with_reward(row) for row in rows if row is not None]

    def resolve_each(self, items: Sequence[Any]) -> list[tuple[Problem, str] | RewardInputError]:
        """For each item, its (problem, completion), or the :class:`RewardInputError` that says
        why it cannot be judged: the adapters mask such a row and judge the rest."""
        checked: list[Item | RewardInputError] = []
        for i, item in enumerate(items):
            try:
                checked.append(check_item(item, f"items[{i}]"))
            except RewardInputError as exc:
                checked.append(exc)
        valid = [c for c in checked if isinstance(c, Item)]
        out: list[tuple[Problem, str] | RewardInputError] = []
        with self.exclusive(self.problems.needs_building(valid)):
            for i, item in enumerate(checked):
                if isinstance(item, RewardInputError):
                    out.append(item)
                    continue
                try:
                    out.append((self.problems.problem(item, f"items[{i}]"), item.completion))
                except RewardInputError as exc:
                    out.append(exc)
        return out

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this RewardEngine is closed")

    def _run(self, batch: Sequence[tuple[int, str, Problem]]) -> list[dict[str, Any]]:
        problems = list({id(p): p for _, _, p in batch}.values())
        samples = [Sample(p.task_id, completion, str(i)) for i, completion, p in batch]
        with _SCORING:
            return evaluate(
                problems,
                samples,
                reward=self.reward,
                workers=self.workers,
                executor=self.executor,
            )

    def close(self) -> None:
        """Stop this engine's judging workers (a later engine starts fresh ones)."""
        self._closed = True
        if self.workers and self.executor == "local":
            from harness.pipeline.pool import shared_pool

            with _SCORING:
                shared_pool(self.workers).close()

    def __enter__(self) -> RewardEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def separate_runs(problems: Sequence[Problem]) -> list[list[int]]:
    """Positions of ``problems`` in as few runs as possible where a task id names one problem
    (``HumanEval/0`` of ``humaneval`` and of ``humaneval-plus`` cannot share a run)."""
    runs: list[tuple[dict[str, Problem], list[int]]] = []
    for position, problem in enumerate(problems):
        for owners, positions in runs:
            if owners.setdefault(problem.task_id, problem) is problem:
                positions.append(position)
                break
        else:
            runs.append(({problem.task_id: problem}, [position]))
    return [positions for _, positions in runs]


def with_reward(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its ``reward``: None where the harness could not judge the sample (status
    ``error``: infrastructure or data) or the reward is not a finite number, never 0."""
    value: Any = row.get("reward")
    if row.get("status") == "error" or not is_finite_number(value):
        return {**row, "reward": None}
    return {**row, "reward": float(value)}


def masked_row(suite: str, task_id: str, completion: str, reason: str) -> dict[str, Any]:
    """The row of a sample that cannot be judged because of its data (an unknown task id, a
    ground truth that cannot be read): status ``error``, ``error_kind: data``, reward None."""
    return {
        "suite": suite,
        "task_id": task_id,
        "completion": completion,
        "status": "error",
        "passed": False,
        "error_kind": "data",
        "error": reason[:500],
        "cases": [],
        "reward": None,
    }


LOGGED_REASONS = 1000  # distinct reasons logged at WARNING; later ones at DEBUG
_logged: set[str] = set()
_logged_lock = threading.Lock()


def log_unjudged(log: logging.Logger, reason: str, outcome: str = "masked") -> None:
    """Say why a sample was not judged, and what it got instead (``outcome``): each distinct
    reason once at WARNING (a data set's bad rows come back every epoch), the repeats at
    DEBUG."""
    with _logged_lock:
        first = reason not in _logged and len(_logged) < LOGGED_REASONS
        if first:
            _logged.add(reason)
    if first:
        log.warning(
            "codeeval: a sample was not judged (%s; later samples for this reason get the "
            "same): %s",
            outcome,
            reason,
        )
    else:
        log.debug("codeeval: a sample was not judged: %s", reason)


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


__all__ = ["RewardEngine", "RewardInputError"]
