"""PPO's config: the shared sections plus the ``ppo`` section (TRL style: help on every field)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from trainers.common import validate as check
from trainers.common.config import LegacyFlag, common_legacy_flags, help_field, invalid, parse_cli
from trainers.common.sections import TrainerConfig


@dataclass
class PPOSettings:
    """PPO with a value head, GAE and a k3 KL penalty; N agents train independently."""

    num_agents: int = help_field(
        1, help="1: single-agent PPO; N > 1: one PPO learner per agent on the joint reward"
    )
    critic: Literal["independent", "central"] = help_field(
        "independent",
        help="independent: a value head per agent, token-level GAE on its own completion; "
        "central: one critic (its own adapter and value head) reads every agent's prompt, "
        "gives one value per joint state and turn, and each agent's advantage is GAE over turns",
    )
    prompts_per_step: int = help_field(2, help="distinct prompts per rollout batch")
    samples_per_prompt: int = help_field(1, help="completions each agent samples per prompt")
    max_new_tokens: int = help_field(256, help="tokens generated per completion")
    max_prompt_tokens: int = help_field(1024, help="prompts are cut from the left to this")
    temperature: float = help_field(1.0, help="sampling temperature for rollouts")
    top_p: float = help_field(1.0, help="nucleus sampling for rollouts")
    gamma: float = help_field(1.0, help="discount over tokens in GAE")
    lam: float = help_field(0.95, help="GAE lambda (1: Monte Carlo returns, 0: one-step TD)")
    clip_range: float = help_field(0.2, help="clip range of the policy ratio")
    value_clip_range: float | None = help_field(
        0.2, help="clip range of value updates around the rollout values; null: no clipping"
    )
    vf_coef: float = help_field(
        0.5, help="weight of the value loss in the total loss (the critic's own loss: central)"
    )
    beta: float = help_field(0.05, help="weight of the per-token k3 KL to the reference")
    whiten_advantages: bool = help_field(True, help="normalise advantages over each batch")
    ppo_epochs: int = help_field(2, help="optimisation passes over each rollout batch")
    minibatch_size: int = help_field(0, help="sequences per optimizer update; 0: whole batch")
    learning_rate: float = help_field(1e-5, help="AdamW learning rate (policy adapter)")
    value_learning_rate: float | None = help_field(
        None, help="AdamW learning rate of the value head; null: learning_rate"
    )
    weight_decay: float = help_field(0.0, help="AdamW weight decay")
    max_grad_norm: float = help_field(1.0, help="clip each agent's gradient norm; 0: no clip")
    num_epochs: int = help_field(1, help="passes over the training problems")
    max_steps: int = help_field(0, help="stop after this many rollout steps; 0: all epochs")

    def __post_init__(self) -> None:
        if self.critic not in ("independent", "central"):
            raise invalid("critic", f"must be independent or central (got {self.critic!r})")
        check.at_least_one(
            self,
            "num_agents",
            "prompts_per_step",
            "samples_per_prompt",
            "max_new_tokens",
            "max_prompt_tokens",
            "ppo_epochs",
            "num_epochs",
        )
        check.in_unit_interval(self, "gamma", "lam")
        if not 0 < self.clip_range < 1:
            raise invalid("clip_range", f"must be in (0, 1) (got {self.clip_range}); 0.2 is usual")
        if self.value_clip_range is not None and self.value_clip_range <= 0:
            raise invalid("value_clip_range", "must be > 0, or null to turn value clipping off")
        check.sampling(self)
        if self.value_learning_rate is not None and self.value_learning_rate <= 0:
            raise invalid("value_learning_rate", "must be > 0, or null to use learning_rate")
        check.non_negative(
            self, "vf_coef", "beta", "weight_decay", "max_grad_norm", "max_steps", "minibatch_size"
        )
        batch = self.prompts_per_step * self.samples_per_prompt
        if self.minibatch_size > batch:
            raise invalid(
                "minibatch_size",
                f"{self.minibatch_size} is larger than a rollout batch of {batch} sequences "
                "(prompts_per_step x samples_per_prompt); lower it or use 0",
            )


@dataclass
class PPORunConfig(TrainerConfig):
    """A full PPO run: the shared sections plus ``ppo``."""

    ppo: PPOSettings = field(
        default_factory=PPOSettings, metadata={"help": "the PPO algorithm's settings"}
    )

    def __post_init__(self) -> None:
        self.require_single_turn("PPO")
        if self.ppo.beta > 0 and not self.model.lora.enabled and self.ppo.num_agents > 1:
            raise invalid(
                "ppo.beta",
                "a KL reference for several full-weight agents needs a copy per agent; "
                "enable model.lora or set ppo.beta=0",
            )


LEGACY_FLAGS: list[LegacyFlag] = [
    *[f for f in common_legacy_flags("ppo") if f.flag != "--num_generations"],
    LegacyFlag("--num_agents", "ppo.num_agents", help="(ppo.num_agents)"),
    LegacyFlag("--beta", "ppo.beta", help="(ppo.beta)"),
    LegacyFlag("--gamma", "ppo.gamma", help="(ppo.gamma)"),
    LegacyFlag("--lam", "ppo.lam", help="(ppo.lam)"),
    LegacyFlag("--ppo_epochs", "ppo.ppo_epochs", help="(ppo.ppo_epochs)"),
]


def parse_args(argv: Sequence[str] | None = None) -> PPORunConfig:
    """``python -m trainers.ppo`` arguments -> a validated :class:`PPORunConfig`."""
    return parse_cli(PPORunConfig, argv, "trainers.ppo", LEGACY_FLAGS)
