"""GRPO's reward function: the shared :class:`~trainers.common.reward.HarnessReward`, which TRL
calls as ``f(prompts, completions, task_id=...)``. Infrastructure errors stay ``None``, which
TRL treats as "unscorable" (no baseline contribution, zero advantage) instead of a model's
failure worth 0 (the masking rule: :func:`trainers.common.reward.masked_reward`)."""

from trainers.common.reward import EvaluateFn, HarnessReward, completion_text

__all__ = ["EvaluateFn", "HarnessReward", "completion_text"]
