"""verl: ``compute_score`` for ``reward.custom_reward_function``, and its batched form.

verl 0.9 scores with its reward loop (``verl/experimental/reward_loop``): every reward manager
it registers (``naive``, the default; ``dapo``, ``gdpo``, ``rate_limited``, ``remote``) calls
the custom function once per sample, in executor threads (``remote``: in Ray actors)::

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)

so :func:`compute_score` is the function to name. Concurrent calls in one process are judged
together (one engine call for the samples that arrive within a few milliseconds). The batched
form, :func:`compute_score_batch`, is for verl's older batch manager
(``verl/workers/reward_manager/batch.py``), which the trainer no longer uses; named under the
reward loop it raises :class:`RewardSetupError` saying what to set instead.

``data_source`` and ``ground_truth`` come from the dataset's ``data_source`` and
``reward_model.ground_truth``; ``reward_kwargs`` from
``reward.custom_reward_function.reward_kwargs`` (here: ``reward``, ``workers``). The rows verl
users' data carry are read by :mod:`harness.rewardapi.codedata`: a suite's task id (verl's
``openai_humaneval`` and MBPP names map to the project's suites), verl's code data
(``{"inputs", "outputs"}``: stdin/stdout, call-based with ``fn_name``, assert-based with
``assert_case``), or an inline problem.

Each call returns ``{"score": float, "passed": 0/1, "unscored": 0/1}`` per sample (verl keeps
the extra keys as ``reward_extra_info``; every row has the same keys, as verl's reward loop
requires). A sample the harness could not judge, because of the harness or of its row's data
(an unknown task id or suite, a ground truth that cannot be read), never raises and never
scores 0: it gets the neutral score of :mod:`harness.rewardapi.neutral` and ``unscored: 1``,
and the reason is logged (each distinct reason once, on the ``harness.rewardapi.verl`` logger).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from harness.records import Problem
from harness.rewardapi.codedata import CodeDataProblems, assert_spec, plain, read_row, suite_for
from harness.rewardapi.engine import RewardEngine, log_unjudged, masked_row
from harness.rewardapi.items import Item, RewardInputError, RewardSetupError
from harness.rewardapi.neutral import DEFAULT_NEUTRAL, RunningMeans, neutral_scores

log = logging.getLogger(__name__)

REWARD_LOOP_MANAGERS = ("naive", "dapo", "gdpo", "rate_limited", "remote")  # verl 0.9.1
_SINGLE = ("data_source", "solution_str", "ground_truth")
UNJUDGED = {  # why a judged row has no reward, when it does not say
    "data": "the problem's own data cannot be judged (its reference fails its tests, or a known defect)",
    "infra": "the harness could not judge it (an infrastructure fault)",
}
_BATCHED = ("data_sources", "solution_strs", "ground_truths")


@dataclass(frozen=True)
class Resolved:
    """One verl sample: its problem, or why it cannot be judged."""

    completion: str
    problem: Problem | None = None
    suite: str = ""
    task_id: str = ""
    reason: str = ""


class Scorer:
    """An engine, the code-data problems built for it, the running means of its judged scores,
    and the batcher that judges concurrent one-sample calls together."""

    def __init__(self, reward: str | None, workers: int, neutral: float) -> None:
        from harness.reward import load_reward_config

        try:
            load_reward_config(reward or "binary")
        except (ValueError, OSError) as exc:
            raise RewardSetupError(
                f"reward.custom_reward_function.reward_kwargs.reward={reward!r}: {exc} "
                "(set it to a preset: binary, weighted, code_levels, class_levels, or a YAML path)"
            ) from None
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
            raise RewardSetupError(
                f"reward.custom_reward_function.reward_kwargs.workers={workers!r}: "
                "set it to 0 or more judging processes"
            )
        self.engine = RewardEngine(reward=reward, workers=workers)
        self.code = CodeDataProblems()
        self.running = RunningMeans()
        self.neutral = float(neutral)
        self._queue: list[tuple[Resolved, Future[tuple[dict[str, Any], float]]]] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def resolve(
        self, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any
    ) -> Resolved:
        """The sample's problem; a row that cannot be judged gets its reason, never raises."""
        completion = plain(solution_str)
        if not isinstance(completion, str):
            return _masked(
                "", "", "", f"solution_str: expected text, got {type(completion).__name__}"
            )
        source = "" if data_source is None else str(plain(data_source))
        # building a problem parses Python, one thread at a time (RewardEngine.exclusive); a
        # loaded suite's task id is a lookup
        truth = plain(ground_truth)
        lookup = isinstance(truth, (str, int)) and re.fullmatch(r"[^\s{\[]\S*", str(truth).strip())
        needed = not lookup or self.engine.problems.needs_building([Item("", suite_for(source))])
        with self.engine.exclusive(needed):
            return self._resolve(source, completion, data_source, ground_truth, extra_info)

    def _resolve(
        self, source: str, completion: str, data_source: Any, ground_truth: Any, extra_info: Any
    ) -> Resolved:
        try:
            reading = read_row(data_source, ground_truth, extra_info)
            if reading.code is not None:
                if "assert_case" in reading.code:
                    item = Item(completion, inline=assert_spec(reading.code))
                    problem = self.engine.problems.problem(item, "ground_truth")
                else:
                    problem = self.code.get(reading.suite, reading.code, completion)
            elif reading.inline is not None:
                item = Item(completion, inline=reading.inline)
                problem = self.engine.problems.problem(item, "ground_truth")
            else:
                item = Item(completion, suite=reading.suite, task_id=reading.task_id)
                problem = self.engine.problems.problem(item, "ground_truth")
        except RewardInputError as exc:
            suite, task_id = source, str(plain(ground_truth))[:200]
            if exc.field == "ground_truth.suite":
                reason = (
                    f"data_source {source!r} names no suite ({exc.message}). Set data_source to "
                    "one of them (verl's openai_humaneval and MBPP names map to humaneval and "
                    "mbpp), or make reward_model.ground_truth verl's code data "
                    '{"inputs": [...], "outputs": [...]} or an inline problem'
                )
            else:
                reason = f"{exc.field}: {exc.message}"
            return _masked(completion, suite, task_id, reason)
        except Exception as exc:  # noqa: BLE001 - a row the readers choke on masks itself
            return _masked(completion, source, "", f"ground_truth: {type(exc).__name__}: {exc}")
        return Resolved(completion, problem, problem.suite, problem.task_id)

    def score(self, samples: Sequence[Resolved]) -> list[tuple[dict[str, Any], float]]:
        """Each sample's row and its score (the reward, or the neutral score when unjudged)."""
        judged = [i for i, s in enumerate(samples) if s.problem is not None]
        rows: list[dict[str, Any]] = [
            masked_row(s.suite, s.task_id, s.completion, s.reason) for s in samples
        ]
        if judged:
            problems = [samples[i].problem for i in judged]
            scored = self.engine.score_problems(
                [p for p in problems if p is not None], [samples[i].completion for i in judged]
            )
            for i, row in zip(judged, scored, strict=True):
                rows[i] = row
        for sample in samples:
            if sample.reason:
                log_unjudged(log, sample.reason)
        for sample, row in zip(samples, rows, strict=True):
            if row["reward"] is None and not sample.reason:  # the harness's or the problem's
                why = row.get("error") or UNJUDGED.get(str(row.get("error_kind")), "not judged")
                log_unjudged(log, f"{row.get('suite')} {row.get('task_id')}: {why}")
        self.running.add(rows)
        fills = neutral_scores(rows, self.running, self.neutral)
        return [
            (row, row["reward"] if row["reward"] is not None else fill)
            for row, fill in zip(rows, fills, strict=True)
        ]

    def score_one(self, sample: Resolved) -> tuple[dict[str, Any], float]:
        """One sample, judged with the others that arrive meanwhile (verl's reward loop calls
        from many threads at once)."""
        future: Future[tuple[dict[str, Any], float]] = Future()
        with self._cond:
            self._queue.append((sample, future))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="codeeval-verl", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return future.result()

    def _serve(self, gap_s: float = 0.005, linger_s: float = 0.05) -> None:
        while True:
            with self._cond:
                if not self._queue and not self._cond.wait_for(lambda: bool(self._queue), 30):
                    self._thread = None
                    return
                until = time.monotonic() + linger_s
                while time.monotonic() < until:  # more calls come within milliseconds
                    before = len(self._queue)
                    self._cond.wait(gap_s)
                    if len(self._queue) == before:
                        break
                batch, self._queue = self._queue, []
            try:
                results = self.score([sample for sample, _ in batch])
            except BaseException as exc:  # noqa: BLE001 - each caller gets the failure
                for _, future in batch:
                    future.set_exception(exc)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                future.set_result(result)


_scorers: dict[tuple[str | None, int, float], Scorer] = {}
_scorers_lock = threading.Lock()


def scorer_for(
    reward: str | None = None, workers: int = 2, neutral: float = DEFAULT_NEUTRAL
) -> Scorer:
    """One scorer per reward, worker count and neutral score in this process (verl calls per
    sample or per batch, from many threads)."""
    key = (reward, workers, float(neutral))
    with _scorers_lock:
        scorer = _scorers.get(key)
        if scorer is None:
            scorer = _scorers[key] = Scorer(reward, workers, neutral)
        return scorer


def engine_for(reward: str | None = None, workers: int = 2) -> RewardEngine:
    """The engine :func:`compute_score` uses for these settings."""
    return scorer_for(reward, workers).engine


def compute_score(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    *,
    reward: str | None = None,
    workers: int = 2,
    neutral: float = DEFAULT_NEUTRAL,
    **kwargs: Any,
) -> dict[str, float]:
    """One sample's score (verl's reward loop, every manager it registers)."""
    if any(name in kwargs for name in _BATCHED):
        raise RewardSetupError(
            "compute_score was called with a batch (data_sources=, solution_strs=, "
            "ground_truths=): verl's batch reward manager calls the batched form. Set "
            "custom_reward_function.name=compute_score_batch there, or use verl's reward loop "
            f"(reward.reward_manager.name: one of {', '.join(REWARD_LOOP_MANAGERS)}) with "
            "compute_score"
        )
    scorer = scorer_for(reward, workers, neutral)
    sample = scorer.resolve(data_source, solution_str, ground_truth, extra_info)
    row, score = scorer.score_one(sample)
    return result(row, score)


def compute_score_batch(
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[Any] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    reward: str | None = None,
    workers: int = 2,
    neutral: float = DEFAULT_NEUTRAL,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Every sample's score in one engine call (verl's older batch reward manager)."""
    if data_sources is None and any(name in kwargs for name in _SINGLE):
        raise RewardSetupError(
            "compute_score_batch was called with one sample (data_source=, solution_str=, "
            "ground_truth=): verl's reward loop calls the custom reward function once per "
            f"sample with every manager it registers ({', '.join(REWARD_LOOP_MANAGERS)}). Set "
            "reward.custom_reward_function.name=compute_score"
        )
    if data_sources is None or solution_strs is None or ground_truths is None:
        raise RewardSetupError(
            "compute_score_batch needs data_sources, solution_strs and ground_truths "
            "(verl's batch reward manager passes them)"
        )
    n = len(solution_strs)
    if len(data_sources) != n or len(ground_truths) != n:
        raise RewardSetupError(
            f"compute_score_batch got {len(data_sources)} data_sources, {n} solution_strs and "
            f"{len(ground_truths)} ground_truths: one of each per sample"
        )
    extras = list(extra_infos) if extra_infos is not None else [None] * n
    scorer = scorer_for(reward, workers, neutral)
    samples = [
        scorer.resolve(
            data_sources[i],
            solution_strs[i],
            ground_truths[i],
            extras[i] if i < len(extras) else None,
        )
        for i in range(n)
    ]
    return [result(row, score) for row, score in scorer.score(samples)]


def result(row: Mapping[str, Any], score: float) -> dict[str, float]:
    return {
        "score": float(score),
        "passed": float(bool(row.get("passed"))),
        "unscored": float(row["reward"] is None),
    }


def _masked(completion: str, suite: str, task_id: str, reason: str) -> Resolved:
    return Resolved(completion, None, suite, task_id, reason)


# Kept importable here: the reward service and older code took it from this module.
__all__ = ["compute_score", "compute_score_batch", "engine_for", "neutral_scores", "result"]
