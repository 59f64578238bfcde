"""TRL: the harness as a reward function for ``GRPOTrainer(reward_funcs=...)``.

    from harness.rewardapi.trl import TRLReward, AsyncTRLReward
    trainer = GRPOTrainer(model=..., reward_funcs=TRLReward(reward="binary"), train_dataset=ds)

TRL (1.16, ``GRPOTrainer._calculate_rewards``) calls a reward function as
``f(prompts=..., completions=..., completion_ids=..., **columns)``: every dataset column but
``prompt``, one value per completion, plus ``trainer_state``, ``log_extra`` and ``log_metric``.
A row names its problem with a ``task_id`` column (and optionally ``suite``), or carries an
inline problem in ``tests`` and ``entry_point`` columns (optionally ``reference``,
``language`` and ``problem_prompt``; the prompt defaults to the row's prompt when it is plain
text). A sample the harness could not judge gets ``None``: TRL leaves it out of the group's
baseline and gives it no advantage. So does a row whose data cannot be judged (an unknown
task id, a bad inline problem): its reason is logged, and the rest of the batch is judged.

:class:`AsyncTRLReward` is the same function with ``async def __call__``: TRL awaits it on its
event loop (the async GRPO trainer generates on that same loop), so the batch is judged in a
thread and the loop keeps generating meanwhile. With ``timeout_s`` a batch that takes longer
gets ``None`` rewards (masked) instead of holding the step.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.rewardapi.engine import RewardEngine, log_unjudged, masked_row
from harness.rewardapi.items import DEFAULT_SUITE, RewardInputError

log = logging.getLogger(__name__)

INLINE_COLUMNS = {  # dataset column -> inline problem field
    "tests": "tests",
    "entry_point": "entry_point",
    "reference": "reference",
    "language": "language",
    "problem_prompt": "prompt",
}


def completion_text(completion: Any) -> str:
    """Text of a TRL completion: a plain string, or a list of chat messages (the last one's)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        return str(completion[-1].get("content", ""))
    return str(completion)


def items_from_columns(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    columns: Mapping[str, Any],
    suite: str = DEFAULT_SUITE,
) -> list[dict[str, Any]]:
    """The engine's items for one TRL batch (``columns``: the dataset's, one value per row).
    A dataset with neither a ``task_id`` nor a ``tests`` column raises (nothing could ever be
    judged); a row of such a dataset that names no problem gives an item without one, which
    the adapter masks."""
    if _column(columns, "task_id") is None and _column(columns, "tests") is None:
        raise RewardInputError(
            "columns[0]",
            "the dataset needs a task_id column, or tests and entry_point columns "
            "(an inline problem)",
        )
    items = []
    for i, completion in enumerate(completions):
        text = completion_text(completion)
        task_id = _cell(columns, "task_id", i)
        if task_id is not None:
            items.append(
                {"completion": text, "task_id": task_id, "suite": suite_of(columns, i, suite)}
            )
            continue
        if _cell(columns, "tests", i) is None:
            items.append({"completion": text})  # no problem: masked, with its reason
            continue
        problem = {
            field: _cell(columns, column, i)
            for column, field in INLINE_COLUMNS.items()
            if _cell(columns, column, i) is not None
        }
        prompt = prompts[i] if i < len(prompts) else ""
        problem.setdefault("prompt", prompt if isinstance(prompt, str) else "")
        items.append({"completion": text, "problem": problem})
    return items


def suite_of(columns: Mapping[str, Any], i: int, default: str) -> str:
    value = _cell(columns, "suite", i)
    return value if value is not None else default


def _column(columns: Mapping[str, Any], name: str) -> Sequence[Any] | None:
    values = columns.get(name)
    if values is None or isinstance(values, str) or not isinstance(values, Sequence):
        return None
    return values


def _cell(columns: Mapping[str, Any], name: str, i: int) -> Any:
    values = _column(columns, name)
    return values[i] if values is not None and i < len(values) else None


class _Adapter:
    """What both forms share: the engine, the batch's items, its rows and metrics."""

    __name__ = "codeeval"  # TRL names the reward's metrics after it (rewards/codeeval/mean)

    def __init__(
        self,
        engine: RewardEngine | None = None,
        *,
        reward: str | None = None,
        workers: int = 2,
        data_dir: Path | None = None,
        executor: str = "local",
        suite: str = DEFAULT_SUITE,
        name: str = "codeeval",
    ) -> None:
        self.__name__ = name  # two adapters in one trainer need two names
        self.engine = engine or RewardEngine(
            reward=reward, workers=workers, data_dir=data_dir, executor=executor
        )
        self.suite = suite
        self.last_rows: list[dict[str, Any]] = []
        self.unscored = 0  # samples the harness could not judge, over the run

    def _score(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The rows of a batch; a row whose data cannot be judged (an unknown task id, a bad
        inline problem) is masked (reward None, its reason logged) and the rest are judged."""
        resolved = self.engine.resolve_each(items)
        pairs = [r for r in resolved if not isinstance(r, RewardInputError)]
        scored = self.engine.score_problems([p for p, _ in pairs], [c for _, c in pairs])
        rows: list[dict[str, Any]] = []
        judged_rows = iter(scored)
        for i, outcome in enumerate(resolved):
            if isinstance(outcome, RewardInputError):
                item = items[i] if isinstance(items[i], Mapping) else {}
                reason = str(outcome)
                log_unjudged(log, reason)
                rows.append(
                    masked_row(
                        str(item.get("suite") or ("inline" if "problem" in item else "")),
                        str(item.get("task_id") or ""),
                        completion_text(item.get("completion", "")),
                        reason,
                    )
                )
            else:
                rows.append(next(judged_rows))
        self.last_rows = rows
        return rows

    def _rewards(self, rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Any]) -> list[Any]:
        rewards = [row["reward"] for row in rows]
        unscored = sum(r is None for r in rewards)
        self.unscored += unscored
        _log(columns.get("log_metric"), "codeeval/unscored", unscored / max(1, len(rewards)))
        log_extra = columns.get("log_extra")
        if callable(log_extra):
            log_extra("codeeval_status", [row["status"] for row in rows])
        return rewards

    def close(self) -> None:
        self.engine.close()


class TRLReward(_Adapter):
    """A synchronous TRL reward function (see the module docstring)."""

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        items = items_from_columns(prompts, completions, columns, self.suite)
        return self._rewards(self._score(items), columns)


class AsyncTRLReward(_Adapter):
    """An ``async`` TRL reward function: the batch is judged in a worker thread, so the event
    loop it is awaited on (TRL's generation loop in the async trainer) never waits on it.
    ``timeout_s``: a batch still judging after this many seconds gets ``None`` rewards."""

    def __init__(
        self, engine: RewardEngine | None = None, *, timeout_s: float | None = None, **kw: Any
    ):
        super().__init__(engine, **kw)
        self.timeout_s = timeout_s
        self.timed_out = 0  # batches given up on

    async def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        items = items_from_columns(prompts, completions, columns, self.suite)
        work = asyncio.to_thread(self._score, items)
        try:
            rows = await asyncio.wait_for(work, self.timeout_s)
        except TimeoutError:
            self.timed_out += 1
            _log(columns.get("log_metric"), "codeeval/timed_out", 1.0)
            self.unscored += len(items)
            return [None] * len(items)
        return self._rewards(rows, columns)


def _log(log_metric: Callable[[str, float], None] | None, name: str, value: float) -> None:
    if callable(log_metric):
        log_metric(name, value)
