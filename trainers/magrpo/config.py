"""MAGRPO's config: the shared sections plus the ``magrpo`` algorithm section."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from trainers.common import validate as check
from trainers.common.config import LegacyFlag, common_legacy_flags, help_field, invalid, parse_cli
from trainers.common.sections import TrainerConfig

JointMode = Literal["aligned", "cross"]
AdvantageMode = Literal["mean", "rloo", "max", "raw"]
SplitStrategy = Literal["round_robin", "contiguous", "take_a_job"]
LossAggregation = Literal["sum", "token", "sequence"]
Overlong = Literal["none", "mask", "soft"]


@dataclass
class MAGRPOSettings:
    """Multi-agent GRPO: N agents, G samples each, joint rewards, multi-turn return trees."""

    num_agents: int = help_field(2, help="number of cooperating agents (1: plain GRPO)")
    num_generations: int = help_field(4, help="G: completions each agent samples per prompt")
    num_turns: int = help_field(1, help="turns per episode; turns >= 2 see external feedback")
    joint_mode: JointMode = help_field(
        "aligned", help="aligned: g-th samples form G joint actions; cross: all G^N combinations"
    )
    advantage_mode: AdvantageMode = help_field(
        "mean", help="baseline within a sibling group: mean, rloo (leave-one-out), max, raw"
    )
    normalize_advantage: bool = help_field(
        False, help="divide advantages by the sibling group's standard deviation"
    )
    gamma: float = help_field(1.0, help="discount on the mean return of a node's children")
    early_termination_threshold: float | None = help_field(
        None,
        help="stop expanding a branch whose joint reward is >= this; its reward is carried "
        "forward to the last turn, so siblings' returns cover the same turns (null: never)",
    )
    turn_gradient_weights: list[float] = help_field(
        [], help="loss weight per turn (length num_turns); empty: all 1.0"
    )
    beta: float = help_field(0.0, help="weight of the k3 KL to the reference, subtracted from r")
    learning_rate: float = help_field(1e-5, help="AdamW learning rate (one optimizer per agent)")
    weight_decay: float = help_field(0.0, help="AdamW weight decay")
    max_grad_norm: float = help_field(1.0, help="clip each agent's gradient norm; 0: no clip")
    num_epochs: int = help_field(1, help="passes over the training problems")
    max_steps: int = help_field(0, help="stop after this many steps; 0: run all epochs")
    rollout_buffer_size: int = help_field(
        1, help="joint episodes (prompts' rollout trees) collected before each update step"
    )
    minibatch_size: int = help_field(
        0, help="sequences per optimizer update within a step; 0: the whole buffer at once"
    )
    max_new_tokens: int = help_field(256, help="tokens generated per completion")
    temperature: float = help_field(0.8, help="sampling temperature for training rollouts")
    top_p: float = help_field(1.0, help="nucleus sampling for training rollouts")
    max_prompt_tokens: int = help_field(1024, help="prompts are cut from the left to this")
    split_strategy: SplitStrategy = help_field(
        "round_robin",
        help="ClassEval: how methods are split among agents (take_a_job: agents pick)",
    )
    eval_interval: int = help_field(0, help="evaluate every N steps (and at the end); 0: never")
    eval_num_samples: int = help_field(1, help="samples per eval problem (n for pass@k)")
    eval_k: list[int] = help_field([1], help="k values for the eval pass@k")
    eval_temperature: float = help_field(0.0, help="eval sampling temperature; 0: greedy")
    eval_max_problems: int = help_field(0, help="evaluate at most this many problems; 0: all")
    # The code-RL recipe (DAPO, Dr. GRPO, DeepCoder's GRPO+): see docs/recipe.md.
    loss_aggregation: LossAggregation = help_field(
        "sum",
        help="how token terms make the loss: sum (per sequence, mean over sequences: Dr. GRPO's "
        "constant normalizer, no length bias), token (mean over all tokens of the update: "
        "DAPO), sequence (per-sequence token mean: original GRPO, biased toward short answers)",
    )
    ppo_epochs: int = help_field(
        1,
        help="passes over each rollout buffer; with several updates per buffer (ppo_epochs > 1 "
        "or minibatches) the loss uses the importance ratio to the sampling policy, clipped",
    )
    epsilon_low: float = help_field(
        0.2, help="lower clip range: the ratio is kept >= 1 - epsilon_low (PPO's 0.2)"
    )
    epsilon_high: float = help_field(
        0.28,
        help="upper clip range: the ratio is kept <= 1 + epsilon_high (DAPO's clip-higher: "
        "0.28 leaves room for rare tokens to gain probability, so entropy does not collapse)",
    )
    dynamic_sampling: bool = help_field(
        False,
        help="drop sibling groups whose completions all have the same value (no gradient) and "
        "refill the buffer with fresh prompts, up to dynamic_sampling_rounds (DAPO)",
    )
    dynamic_sampling_rounds: int = help_field(
        3,
        help="extra rollout rounds a step may spend refilling its buffer; each samples "
        "rollout_buffer_size fresh training prompts; 0: drop only, never refill",
    )
    overlong: Overlong = help_field(
        "none",
        help="truncated completions (hit max_new_tokens): none (scored as they are), mask "
        "(left out of the loss: DAPO's overlong filtering), soft (a reward penalty ramping over "
        "the last overlong_buffer tokens: DAPO's soft overlong punishment)",
    )
    overlong_buffer: int = help_field(
        0,
        help="with overlong=soft: tokens before the limit where the penalty ramps; 0: a fifth "
        "of max_new_tokens (DAPO: 4096 of 20480)",
    )
    overlong_penalty: float = help_field(
        1.0, help="with overlong=soft: the penalty at the limit (DAPO: 1.0, a failed answer's gap)"
    )

    def __post_init__(self) -> None:
        check.at_least_one(self, "num_agents")
        check.group_size(self, "magrpo")
        check.at_least_one(self, "num_turns")
        if self.turn_gradient_weights and len(self.turn_gradient_weights) != self.num_turns:
            raise invalid(
                "turn_gradient_weights",
                f"has {len(self.turn_gradient_weights)} weights for num_turns="
                f"{self.num_turns}; give one weight per turn or leave it empty",
            )
        if any(w < 0 for w in self.turn_gradient_weights):
            raise invalid("turn_gradient_weights", "weights must be >= 0")
        check.sampling(self)
        check.non_negative(self, "beta")
        check.in_unit_interval(self, "gamma")
        check.at_least_one(
            self, "num_epochs", "rollout_buffer_size", "max_new_tokens", "eval_num_samples"
        )
        check.non_negative(
            self, "max_steps", "minibatch_size", "eval_interval", "eval_max_problems"
        )
        check.eval_ks(self, "magrpo")
        if self.joint_mode == "cross" and self.num_generations**self.num_agents > 4096:
            raise invalid(
                "joint_mode",
                f"cross gives G^N={self.num_generations**self.num_agents} joint actions; "
                "use aligned or fewer generations",
            )

        self._check_recipe()

    def _check_recipe(self) -> None:
        if self.loss_aggregation not in ("sum", "token", "sequence"):
            raise invalid(
                "loss_aggregation", f"is {self.loss_aggregation!r}; use sum, token or sequence"
            )
        if self.overlong not in ("none", "mask", "soft"):
            raise invalid("overlong", f"is {self.overlong!r}; use none, mask or soft")
        check.at_least_one(self, "ppo_epochs")
        if not 0 < self.epsilon_low < 1:
            raise invalid(
                "epsilon_low", f"must be in (0, 1) (got {self.epsilon_low}); 0.2 is usual"
            )
        check.clip_high(self)
        check.non_negative(self, "dynamic_sampling_rounds")
        check.overlong(self, "0 picks a fifth of max_new_tokens")
        if self.dynamic_sampling and self.advantage_mode == "raw":
            raise invalid(
                "dynamic_sampling",
                "with advantage_mode=raw a group of equal values still has non-zero advantages, "
                "so dropping it changes the update; use advantage_mode=mean or rloo with it",
            )

    def soft_overlong_buffer(self) -> int:
        """The soft penalty's ramp in tokens (0 when overlong is not soft)."""
        if self.overlong != "soft":
            return 0
        return self.overlong_buffer or max(1, self.max_new_tokens // 5)

    def updates_per_buffer(self, sequences: int) -> int:
        """Optimizer updates one agent makes on ``sequences`` targets."""
        size = self.minibatch_size or sequences
        return self.ppo_epochs * (math.ceil(sequences / size) if sequences else 0)

    def turn_weights(self) -> list[float]:
        return list(self.turn_gradient_weights) or [1.0] * self.num_turns


@dataclass
class MAGRPOConfig(TrainerConfig):
    """A full MAGRPO run: shared sections plus ``magrpo``."""

    magrpo: MAGRPOSettings = field(
        default_factory=MAGRPOSettings, metadata={"help": "the MAGRPO algorithm's settings"}
    )

    def __post_init__(self) -> None:
        if self.magrpo.num_turns > 1 and self.external.mode == "none":
            raise invalid(
                "magrpo.num_turns",
                f"num_turns={self.magrpo.num_turns} needs feedback between turns; set "
                "external.mode (e.g. level_feedback) or magrpo.num_turns=1",
            )


# ``magrpo.external_mode`` (as in the examples) is the same setting as external.mode.
ALIASES = {"magrpo.external_mode": "external.mode"}

LEGACY_FLAGS: list[LegacyFlag] = [
    *common_legacy_flags("magrpo"),
    LegacyFlag("--num_agents", "magrpo.num_agents", help="(magrpo.num_agents)"),
    LegacyFlag("--num_turns", "magrpo.num_turns", help="(magrpo.num_turns)"),
    LegacyFlag("--joint_mode", "magrpo.joint_mode", help="(magrpo.joint_mode)"),
    LegacyFlag("--advantage_mode", "magrpo.advantage_mode", help="(magrpo.advantage_mode)"),
    LegacyFlag("--external_mode", "external.mode", help="(external.mode)"),
    LegacyFlag("--beta", "magrpo.beta", help="(magrpo.beta)"),
    LegacyFlag("--gamma", "magrpo.gamma", help="(magrpo.gamma)"),
    LegacyFlag(
        "--turn_gradient_weights",
        "magrpo.turn_gradient_weights",
        nargs="+",
        help="one weight per turn (magrpo.turn_gradient_weights)",
    ),
    LegacyFlag(
        "--early_termination_threshold",
        "magrpo.early_termination_threshold",
        help="(magrpo.early_termination_threshold)",
    ),
    LegacyFlag("--rollout_buffer_size", "magrpo.rollout_buffer_size", help="(rollout_buffer_size)"),
    LegacyFlag("--eval_interval", "magrpo.eval_interval", help="(magrpo.eval_interval)"),
]


def parse_args(argv: Sequence[str] | None = None) -> MAGRPOConfig:
    """``python -m trainers.magrpo`` arguments -> a validated :class:`MAGRPOConfig`."""
    return parse_cli(MAGRPOConfig, argv, "trainers.magrpo", LEGACY_FLAGS, ALIASES)
