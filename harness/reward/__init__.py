"""The reward aggregator: analyzer reports -> a scalar reward, its named parts, and feedback.

    config = load_reward_config("weighted")          # or a YAML path
    rows = score_rows(rows, problems_by_task_id, config)
    text = render_feedback(row, problem, "level_feedback", sandbox_slice=1)

Presets: ``weighted``, ``binary``, ``code_levels``, ``class_levels`` (configs/rewards/*.yaml);
a user's own aggregator is registered by dotted path (``aggregator: pkg.mod:func``), called as
``func(row, problem, analyzers, params)`` and returning a float or ``{part: float}``; its
signature is checked when the config loads.

Row keys read here, beyond the result format of docs/formats.md:

- ``program`` (else ``problem.prompt + completion``): the text every static analyzer reads.
  Multi-agent trainers join the agents' code into this one program before scoring.
- ``code_levels``: the helper is the top-level function named ``aux`` (``helper_name``), the
  main function is the problem's entry point.
- ``class_levels``: ``agent_code: {agent: code}`` (each agent's own code, to count methods
  written by more than one agent) and ``required_methods: [...]`` (default: the suite's
  metadata, else the skeleton's methods).
- ``token_report`` feedback: ``tokens`` and ``max_tokens`` when the caller knows them.
- ``status == "error"`` with ``error_kind`` ``infra`` or ``data``: ``reward`` is ``None``.
"""

from harness.reward.config import (
    PRESETS,
    RewardConfig,
    RewardConfigError,
    load_reward_config,
)
from harness.reward.feedback import FEEDBACK_MODES, ROW_FEEDBACK_MODES, render_feedback
from harness.reward.score import analyzers_read, least_reward, reward_fields, score_rows

__all__ = [
    "FEEDBACK_MODES",
    "PRESETS",
    "ROW_FEEDBACK_MODES",
    "RewardConfig",
    "RewardConfigError",
    "analyzers_read",
    "least_reward",
    "load_reward_config",
    "render_feedback",
    "reward_fields",
    "score_rows",
]
