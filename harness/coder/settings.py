"""The Coder's settings: one dataclass, validated, with help text on every field."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any

from harness.models import DEFAULT_MODEL

FEEDBACK_VARIANTS = ("coworker", "separate")


@dataclass(frozen=True)
class CoderSettings:
    analyzers: tuple[str, ...] = field(
        default=("mypy", "signature", "hallucination"),
        metadata={"help": "analyzer names: mypy, signature, hallucination, tests, score"},
    )
    model_first: str = field(
        default=DEFAULT_MODEL,
        metadata={"help": "model of the first completion (registry name or openai:URL#model)"},
    )
    model_feedback: str = field(
        default="", metadata={"help": "model of the feedback iterations (default: model_first)"}
    )
    feedback_variant: str = field(
        default="coworker",
        metadata={
            "help": "coworker: one growing conversation; separate: a fresh one per iteration"
        },
    )
    system_prompt: str = field(
        default="default", metadata={"help": "a bundled prompt name or a file"}
    )
    max_iter: int = field(
        default=10, metadata={"help": "most search steps (model requests rounds)"}
    )
    backtracking: bool = field(
        default=True, metadata={"help": "may go back to any unexpanded conversation"}
    )
    n: int = field(default=1, metadata={"help": "completions asked for per step"})
    temperature: float = field(default=0.7, metadata={"help": "sampling temperature of each step"})
    meta_temperature: float = field(
        default=0.0,
        metadata={"help": "0: expand the best-scored conversation; higher: sample by score"},
    )
    require_unique_sampling: bool = field(
        default=True, metadata={"help": "drop completions seen anywhere earlier in the search"}
    )
    delta_temperature: float = field(default=0.1, metadata={"help": "temperature added per retry"})
    max_temperature: float = field(default=1.4, metadata={"help": "the highest retry temperature"})
    factor_n: float = field(default=2.0, metadata={"help": "n is multiplied by this per retry"})
    max_n: int = field(default=8, metadata={"help": "the largest n of a retry"})
    max_retries: int = field(default=3, metadata={"help": "retries of a step that kept nothing"})
    max_new_tokens: int = field(default=256, metadata={"help": "token limit of one completion"})
    log_conversation: bool = field(
        default=False, metadata={"help": "log every message and completion"}
    )
    n_procs: int = field(
        default=1, metadata={"help": "threads for analyzers that work out of process"}
    )
    verbose: bool = field(default=False, metadata={"help": "print the log to stderr as it happens"})
    judge_model: str = field(default="", metadata={"help": "judge model of the score analyzer"})
    seed: int = field(default=0, metadata={"help": "seed of the sampling and of meta_temperature"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "analyzers", tuple(self.analyzers))
        if not self.model_feedback:
            object.__setattr__(self, "model_feedback", self.model_first)
        from harness.coder.analyzers import ANALYZER_NAMES

        checks = {
            "analyzers": all(a in ANALYZER_NAMES for a in self.analyzers),
            "feedback_variant": self.feedback_variant in FEEDBACK_VARIANTS,
            "max_iter": self.max_iter >= 1,
            "n": self.n >= 1,
            "temperature": 0 <= self.temperature <= self.max_temperature,
            "meta_temperature": self.meta_temperature >= 0,
            "delta_temperature": self.delta_temperature >= 0,
            "factor_n": self.factor_n >= 1,
            "max_n": self.max_n >= self.n,
            "max_retries": self.max_retries >= 0,
            "max_new_tokens": self.max_new_tokens >= 1,
            "n_procs": self.n_procs >= 1,
            "model_first": bool(self.model_first),
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(
                    f"coder setting {name}={getattr(self, name)!r} is invalid ({help_of(name)})"
                )

    def replace(self, **changes: Any) -> CoderSettings:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["analyzers"] = list(self.analyzers)
        return data


def help_of(name: str) -> str:
    return next(f.metadata.get("help", "") for f in fields(CoderSettings) if f.name == name)


def setting_names() -> list[str]:
    return [f.name for f in fields(CoderSettings)]
