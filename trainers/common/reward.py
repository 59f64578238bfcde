"""The harness as the trainers' reward: texts -> Samples -> ``harness.evaluate`` -> floats.

One masking rule for every trainer (:func:`masked_reward`): a sample the harness could not
judge (no row, no finite reward, or an infrastructure error such as a sandbox that could not
start) gets ``None``, never 0. ``None`` is left out of the loss and of the baselines: TRL
treats it as "unscorable", PPO drops it from the batch (:func:`kept_indices`), MAGRPO masks
the node, and Q-learning leaves the row out of its offline data.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.records import Problem, Sample
from harness.rewardapi.trl import completion_text  # one reading of a TRL completion

# ``evaluate(problems, samples, reward=...)`` -> result rows (docs/formats.md) with ``reward``.
EvaluateFn = Callable[..., Sequence[Mapping[str, Any]]]


def masked_reward(
    row: Mapping[str, Any] | None, shift: float = 0.0, scale: float = 1.0
) -> float | None:
    """``(reward + shift) * scale`` of a harness row; ``None`` (masked) where the harness could
    not judge the sample."""
    value = None if row is None else row.get("reward")
    if value is None or not math.isfinite(float(value)):
        return None
    if row is not None and row.get("status") == "error" and row.get("error_kind") == "infra":
        return None
    return (float(value) + shift) * scale


def kept_indices(rewards: Sequence[float | None]) -> list[int]:
    """Positions of the rewards that count (the masked ones, ``None``, left out)."""
    return [i for i, r in enumerate(rewards) if r is not None]


def harness_failed(row: Mapping[str, Any]) -> bool:
    """The harness could not run the sample (infrastructure or data error): such a row is no
    evidence of the model's skill, so it stays out of pass@k counts and offline data."""
    return row.get("status") == "error"


def reward_preset(preset: str, num_agents: int) -> str:
    """``code_levels`` without a helper agent is the preset's single-agent form."""
    return "code_levels_single" if preset == "code_levels" and num_agents == 1 else preset


def default_evaluate() -> EvaluateFn:
    from harness.evaluate import evaluate

    return evaluate


class HarnessReward:
    """A reward function backed by the evaluation harness (TRL calls it as
    ``f(prompts, completions, task_id=...)``; the other trainers call :meth:`score`).

    ``problems`` maps task ids to problems; ``preset`` names the reward (a preset or a YAML
    path); ``shift`` and ``scale`` give ``(reward + shift) * scale``. ``last_rows`` keeps the
    latest batch's result rows for metrics.
    """

    __name__ = "harness_reward"  # TRL names its reward metrics after the function

    def __init__(
        self,
        problems: Mapping[str, Problem],
        preset: str = "code_levels",
        shift: float = 0.0,
        scale: float = 1.0,
        evaluate: EvaluateFn | None = None,
        evaluate_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.problems = dict(problems)
        self.preset = preset
        self.shift = shift
        self.scale = scale
        self._evaluate = evaluate
        self.evaluate_kwargs = dict(evaluate_kwargs or {})
        self.last_rows: list[Mapping[str, Any]] = []
        self.infra_errors = 0
        self._counter = itertools.count()

    def score(self, task_ids: Sequence[str], texts: Sequence[str]) -> list[float | None]:
        """Rewards for ``texts`` (one per task id, in order); ``None`` where the harness failed."""
        unknown = sorted({t for t in task_ids if t not in self.problems})
        if unknown:
            raise KeyError(f"reward: task ids not in the training problems: {unknown[:3]}")
        batch = next(self._counter)
        samples = [
            Sample(task_id=t, completion=text, sample_id=f"b{batch}-{i}")
            for i, (t, text) in enumerate(zip(task_ids, texts, strict=True))
        ]
        problems = [self.problems[t] for t in dict.fromkeys(task_ids)]
        evaluate = self._evaluate or default_evaluate()
        rows = evaluate(problems, samples, reward=self.preset, **self.evaluate_kwargs)
        by_id = {(str(r.get("task_id")), str(r.get("sample_id"))): r for r in rows}
        self.last_rows = list(rows)
        rewards = [
            masked_reward(by_id.get((s.task_id, s.sample_id)), self.shift, self.scale)
            for s in samples
        ]
        self.infra_errors += len(rewards) - len(kept_indices(rewards))
        return rewards

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        task_ids = columns.get("task_id")
        if task_ids is None:
            raise KeyError("reward: the dataset needs a task_id column (see trainers.grpo.data)")
        return self.score(list(task_ids), [completion_text(c) for c in completions])


def harness_reward(
    settings: Any, problems: Sequence[Problem], num_agents: int | None = None
) -> HarnessReward:
    """The :class:`HarnessReward` a ``RewardSettings`` section describes, over ``problems``;
    with ``num_agents`` the preset takes that team size's form (:func:`reward_preset`)."""
    preset = settings.preset if num_agents is None else reward_preset(settings.preset, num_agents)
    return HarnessReward(
        {p.task_id: p for p in problems},
        preset=preset,
        shift=settings.shift,
        scale=settings.scale,
        evaluate_kwargs=settings.evaluate_kwargs(),  # workers, executor (local/ray)
    )
