"""GRPO's config: the shared sections plus the ``grpo`` section, mapped onto TRL's GRPOConfig."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from trainers.common import validate as check
from trainers.common.config import LegacyFlag, common_legacy_flags, help_field, invalid, parse_cli
from trainers.common.sections import TrainerConfig

LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo"]
ScaleRewards = Literal["group", "batch", "none"]


@dataclass
class GRPOSettings:
    """Single-agent GRPO through TRL's ``GRPOTrainer``."""

    num_generations: int = help_field(4, help="G: completions sampled per prompt (group size)")
    prompts_per_step: int = help_field(
        1, help="distinct prompts per optimizer step, in each process (as TRL's batch size)"
    )
    max_new_tokens: int = help_field(256, help="tokens generated per completion")
    temperature: float = help_field(0.8, help="sampling temperature for training rollouts")
    top_p: float = help_field(1.0, help="nucleus sampling for training rollouts")
    learning_rate: float = help_field(1e-5, help="AdamW learning rate")
    weight_decay: float = help_field(0.0, help="AdamW weight decay")
    max_grad_norm: float = help_field(1.0, help="gradient norm clip; 0: no clip")
    num_epochs: int = help_field(1, help="passes over the training problems")
    max_steps: int = help_field(0, help="stop after this many optimizer steps; 0: run all epochs")
    beta: float = help_field(0.0, help="weight of the KL to the reference (adapters off)")
    epsilon: float = help_field(0.2, help="PPO-style clip range of the importance ratio")
    epsilon_high: float = help_field(
        0.28,
        help="upper clip range of the ratio (TRL's epsilon_high; DAPO's clip-higher: 0.28); "
        "acts only when the policy moves within a batch (num_iterations or "
        "steps_per_generation > 1)",
    )
    num_iterations: int = help_field(1, help="optimizer passes over each generated batch (mu)")
    steps_per_generation: int = help_field(
        0,
        help="optimizer steps per generated batch (TRL's steps_per_generation); "
        "0: gradient_accumulation_steps (one step per batch)",
    )
    mask_truncated_completions: bool = help_field(
        False,
        help="leave completions cut at max_new_tokens out of the loss (TRL's option; DAPO's "
        "overlong filtering)",
    )
    overlong_buffer: int = help_field(
        0,
        help="soft overlong punishment (DAPO eq. 13, TRL's get_soft_overlong_punishment): a "
        "reward penalty ramping to overlong_penalty over the last N tokens; 0: none",
    )
    overlong_penalty: float = help_field(
        1.0, help="weight of the soft overlong punishment at the limit (with overlong_buffer)"
    )
    loss_type: LossType = help_field(
        "dapo",
        help="token-loss aggregation: grpo (per-sequence mean, length-biased), dr_grpo "
        "(constant normalizer), dapo (token mean over the batch; TRL's default), bnpo",
    )
    scale_rewards: ScaleRewards = help_field(
        "group", help="divide advantages by the std of the group, the batch, or not at all"
    )
    gradient_accumulation_steps: int = help_field(1, help="micro-batches per optimizer step")
    use_vllm: bool = help_field(False, help="generate with vLLM (GPU only; needs vllm)")
    system_prompt: str | None = help_field(
        None, help="system message before each problem (null: the built-in instruction only)"
    )

    def __post_init__(self) -> None:
        check.group_size(self, "grpo")
        check.at_least_one(
            self,
            "prompts_per_step",
            "max_new_tokens",
            "num_epochs",
            "num_iterations",
            "gradient_accumulation_steps",
        )
        check.sampling(self)
        check.non_negative(
            self, "beta", "weight_decay", "max_grad_norm", "max_steps", "steps_per_generation"
        )
        if not 0 < self.epsilon < 1:
            raise invalid("epsilon", f"must be in (0, 1) (got {self.epsilon}); 0.2 is usual")
        check.clip_high(self)
        check.overlong(self, "DAPO used a fifth of the limit")


@dataclass
class GRPORunConfig(TrainerConfig):
    """A full GRPO run: the shared sections plus ``grpo``."""

    grpo: GRPOSettings = field(
        default_factory=GRPOSettings, metadata={"help": "the GRPO algorithm's settings"}
    )

    def __post_init__(self) -> None:
        self.require_single_turn("GRPO")
        if self.grpo.use_vllm and self.model.device == "cpu":
            raise invalid("grpo.use_vllm", "vLLM needs a GPU; set grpo.use_vllm=false on CPU")
        if self.model.rollout_backend == "vllm":
            # TRL's own vLLM path (grpo.use_vllm) syncs weights over NCCL, so it needs CUDA; on
            # this project's CPU path GRPO keeps transformers rollouts.
            raise invalid(
                "model.rollout_backend",
                "is vllm, which MAGRPO and PPO use; GRPO samples through TRL: set "
                "grpo.use_vllm=true on a GPU (TRL's vLLM, up to 0.31), or keep "
                "model.rollout_backend=transformers on the CPU",
            )


LEGACY_FLAGS: list[LegacyFlag] = [
    *common_legacy_flags("grpo"),
    LegacyFlag("--beta", "grpo.beta", help="(grpo.beta)"),
    LegacyFlag("--loss_type", "grpo.loss_type", help="(grpo.loss_type)"),
    LegacyFlag("--use_vllm", "grpo.use_vllm", help="(grpo.use_vllm)"),
]


def parse_args(argv: Sequence[str] | None = None) -> GRPORunConfig:
    """``python -m trainers.grpo`` arguments -> a validated :class:`GRPORunConfig`."""
    return parse_cli(GRPORunConfig, argv, "trainers.grpo", LEGACY_FLAGS)
