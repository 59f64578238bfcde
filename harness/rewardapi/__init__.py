"""The public reward API: the harness as the reward of TRL, verl and the reward service.

    from harness.rewardapi import RewardEngine
    rows = RewardEngine(reward="weighted").score([{"completion": code, "task_id": "HumanEval/0"}])

The trainer adapters are one import away: :mod:`harness.rewardapi.trl` (``GRPOTrainer``'s
``reward_funcs``) and :mod:`harness.rewardapi.verl` (``compute_score`` and its batched form).
docs/reward_api.md has the item format and copy-paste snippets.
"""

from harness.rewardapi.engine import RewardEngine
from harness.rewardapi.items import RewardInputError, RewardSetupError

__all__ = ["RewardEngine", "RewardInputError", "RewardSetupError"]
