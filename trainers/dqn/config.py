"""The value-based trainer's config: the shared sections plus the ``dqn`` algorithm section."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from trainers.common import validate as check
from trainers.common.config import LegacyFlag, common_legacy_flags, help_field, invalid, parse_cli
from trainers.common.sections import TrainerConfig

DATA_RE = re.compile(r"^(collect|history(:\d+)?)$")


@dataclass
class DQNSettings:
    """Token-level Q-learning on a frozen policy: twin Q heads, a slow target, CQL, and
    decoding that shifts the policy's logits by the learned advantages."""

    data: str = help_field(
        "collect",
        help="where the offline data comes from: a results.jsonl with rewards (an evaluation "
        "run with --llm-reward), 'history' (the newest run in the run history that stored "
        "prompt and completion text) or 'history:ID', or 'collect' (sample the training "
        "problems with the policy and score them with the harness first)",
    )
    collect_samples: int = help_field(
        4, help="with data=collect: completions sampled per training problem"
    )
    collect_temperature: float = help_field(
        1.0, help="with data=collect: sampling temperature of the data policy"
    )
    max_new_tokens: int = help_field(64, help="tokens per completion (collection and decoding)")
    max_prompt_tokens: int = help_field(512, help="prompts are cut from the left to this")
    max_completion_tokens: int = help_field(
        128, help="offline completions longer than this are cut (their reward still counts)"
    )
    gamma: float = help_field(1.0, help="discount per token of the bootstrapped target")
    num_heads: int = help_field(2, help="twin Q heads; the target is the smaller (>= 2)")
    head_inner: int = help_field(0, help="width of each Q head's MLP; 0: the model's hidden size")
    tau: float = help_field(
        0.05, help="target heads move this fraction toward the online heads per update (Polyak)"
    )
    target_update_interval: int = help_field(
        1, help="update the target heads every N optimizer steps"
    )
    cql_alpha: float = help_field(
        0.1, help="weight of the conservative (CQL) penalty on out-of-data tokens; 0: none"
    )
    beta: float = help_field(
        1.0, help="decoding: logits + beta * advantage; 0 decodes the data's policy itself"
    )
    learning_rate: float = help_field(1e-3, help="AdamW learning rate of the Q heads")
    weight_decay: float = help_field(0.0, help="AdamW weight decay")
    max_grad_norm: float = help_field(1.0, help="clip the heads' gradient norm; 0: no clip")
    batch_size: int = help_field(4, help="sequences per optimizer step")
    max_steps: int = help_field(50, help="optimizer steps")
    eval_interval: int = help_field(
        0, help="decode the eval split every N steps (and at the end); 0: never"
    )
    eval_num_samples: int = help_field(2, help="decoded samples per eval problem (n of pass@k)")
    eval_k: list[int] = help_field([1], help="k values of the eval pass@k")
    eval_temperature: float = help_field(1.0, help="sampling temperature of decoding; 0: greedy")

    def __post_init__(self) -> None:
        if not DATA_RE.match(self.data) and not self.data.endswith(".jsonl"):
            raise invalid(
                "data",
                f"{self.data!r} is none of: a results.jsonl path, history, history:ID, collect",
            )
        if self.num_heads < 2:
            raise invalid(
                "num_heads",
                f"got {self.num_heads}: double-Q targets take the smaller of twin heads; "
                "set dqn.num_heads=2",
            )
        check.in_unit_interval(self, "gamma")
        if not 0 < self.tau <= 1:
            raise invalid(
                "tau",
                f"must be in (0, 1] (got {self.tau}); 0 would freeze the target heads forever",
            )
        check.non_negative(
            self, "cql_alpha", "beta", "weight_decay", "max_grad_norm", "eval_temperature"
        )
        check.positive(self, "learning_rate")
        check.at_least_one(
            self,
            "collect_samples",
            "max_new_tokens",
            "max_prompt_tokens",
            "max_completion_tokens",
            "target_update_interval",
            "batch_size",
            "max_steps",
            "eval_num_samples",
        )
        check.non_negative(self, "head_inner", "eval_interval")
        if self.data == "collect" and self.collect_temperature <= 0 and self.collect_samples > 1:
            raise invalid(
                "collect_temperature",
                f"greedy collection makes the {self.collect_samples} samples of a problem one "
                "and the same; set dqn.collect_temperature > 0 or dqn.collect_samples=1",
            )
        if self.eval_temperature == 0 and self.eval_num_samples > 1:
            raise invalid(
                "eval_temperature",
                "greedy decoding gives one answer per problem; set dqn.eval_num_samples=1 or "
                "dqn.eval_temperature > 0",
            )
        check.eval_ks(self, "dqn")


@dataclass
class DQNConfig(TrainerConfig):
    """A full value-based run: shared sections plus ``dqn``."""

    dqn: DQNSettings = field(
        default_factory=DQNSettings, metadata={"help": "the Q-learning algorithm's settings"}
    )

    def __post_init__(self) -> None:
        self.require_single_turn("trainers.dqn")
        if self.model.lora.enabled:
            raise invalid(
                "model.lora.enabled",
                "trainers.dqn trains Q heads on the frozen policy, never the policy itself; "
                "set model.lora.enabled=false",
            )
        if self.output.resume_from:
            raise invalid(
                "output.resume_from",
                "trainers.dqn does not resume (a run is minutes of head updates on cached "
                "features); start it again, with dqn.data set to the run's data/results.jsonl",
            )
        if self.dqn.eval_interval and not self.dataset.eval_split:
            raise invalid(
                "dqn.eval_interval",
                "evaluation needs problems: set dataset.eval_split (e.g. test[100:110]) or "
                "dqn.eval_interval=0",
            )


_FIELDS = {f.name for f in fields(DQNSettings)}
# The shared flags that name a dqn setting (there are no epochs or generations here).
LEGACY_FLAGS: list[LegacyFlag] = [
    *(
        f
        for f in common_legacy_flags("dqn")
        if not f.key.startswith("dqn.") or f.key.removeprefix("dqn.") in _FIELDS
    ),
    LegacyFlag("--data", "dqn.data", help="results.jsonl, history[:ID] or collect (dqn.data)"),
]


def parse_args(argv: Sequence[str] | None = None) -> DQNConfig:
    return parse_cli(DQNConfig, argv, "trainers.dqn", LEGACY_FLAGS)
