"""The config sections every trainer shares: model, dataset, reward, external, output, logging.

Each trainer's config is a :class:`TrainerConfig` subclass that adds its algorithm's section
(``magrpo``, ``grpo``, ``ppo``). Every field carries help text; ``__post_init__`` rejects
settings that cannot work, saying what to do instead.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from harness.executors import EXECUTORS
from harness.reward import FEEDBACK_MODES
from trainers.common.config import help_field, invalid

# The harness's feedback modes (harness.reward is their one source) plus expert_edits, which
# only a trainer can give: level_feedback plus an expert model's edits (trainers.magrpo.expert).
EXTERNAL_MODES: tuple[str, ...] = (*FEEDBACK_MODES, "expert_edits")
ExternalMode = Literal[EXTERNAL_MODES]  # type: ignore[valid-type]
SLICE_RE = re.compile(r"^(all|(first|last):\d+)$")
# The Hugging Face slice syntax the suites accept: test, test[:50], train[10%:], validation[-5:]
SPLIT_RE = re.compile(
    r"^(?P<name>[A-Za-z_][\w.\-]*)(\[(?P<start>[+-]?\d*%?)(?P<colon>:)?(?P<stop>[+-]?\d*%?)\])?$"
)


@dataclass
class LoraSettings:
    """LoRA adapters (peft) on a frozen base model."""

    enabled: bool = help_field(True, help="train LoRA adapters instead of all weights")
    r: int = help_field(8, help="LoRA rank")
    alpha: int = help_field(16, help="LoRA scaling numerator (scale = alpha / r)")
    dropout: float = help_field(0.0, help="dropout on the LoRA input")
    target_modules: list[str] = help_field(
        ["q_proj", "k_proj", "v_proj", "o_proj"], help="module names that get adapters"
    )

    def __post_init__(self) -> None:
        if self.r < 1:
            raise invalid("r", f"must be at least 1 (got {self.r}); set model.lora.r=8")
        if not 0.0 <= self.dropout < 1.0:
            raise invalid("dropout", f"must be in [0, 1) (got {self.dropout})")
        if self.enabled and not self.target_modules:
            raise invalid("target_modules", "is empty; name modules such as [q_proj, v_proj]")


@dataclass
class ModelSettings:
    """Which model to train and where it lives."""

    name: str = help_field(
        "smollm2-135m", help="model name or path for harness.models.load_model (hub names too)"
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = help_field(
        "float32", help="parameter dtype; float32 on CPU, bfloat16 on recent GPUs"
    )
    device: str = help_field(
        "auto", help="device for the policy: auto (accelerate's choice), cpu, cuda, cuda:1, mps"
    )
    device_map: str | None = help_field(
        None, help="transformers device_map for a model too large for one device (e.g. auto)"
    )
    lora: LoraSettings = field(
        default_factory=LoraSettings, metadata={"help": "LoRA adapter settings"}
    )
    share_base: bool = help_field(
        True,
        help="with LoRA: one frozen base with one adapter per agent; false: one model per agent",
    )
    gradient_checkpointing: bool = help_field(
        False, help="trade compute for memory in the backward pass"
    )
    rollout_backend: Literal["transformers", "vllm"] = help_field(
        "transformers",
        help="what samples rollouts: the training model (transformers), or vLLM kept in step "
        "with the training model after every update (see vllm_sync)",
    )
    vllm_sync: Literal["merged", "lora"] = help_field(
        "merged",
        help="how vLLM gets the current policy: merged (the agent's weights, LoRA delta merged "
        "in, loaded into vLLM in place; base-model speed) or lora (vLLM's LoRA support, an "
        "adapter per agent; needs lora.enabled, slower per token on the CPU)",
    )

    def __post_init__(self) -> None:
        if not self.name:
            raise invalid("name", "is empty; give a model name or path (model.name=...)")
        if self.rollout_backend not in ("transformers", "vllm"):
            raise invalid(
                "rollout_backend", f"is {self.rollout_backend!r}; use transformers or vllm"
            )
        if self.vllm_sync not in ("merged", "lora"):
            raise invalid("vllm_sync", f"is {self.vllm_sync!r}; use merged or lora")
        if self.rollout_backend == "vllm" and self.vllm_sync == "lora" and not self.lora.enabled:
            raise invalid(
                "vllm_sync",
                "is lora but lora.enabled is false: there is no adapter to hand to vLLM; enable "
                "LoRA (model.lora.enabled=true) or use vllm_sync=merged",
            )


def parse_split(text: str) -> tuple[str, str | None, str | None]:
    """``"test[:50]"`` -> ``("test", None, "50")``; raises ``ValueError`` on other shapes.

    Only checks the shape early (so a typo fails at config time); the suites do the slicing.
    """
    match = SPLIT_RE.match(text.strip())
    if not match or (match["start"] in ("+", "-", "%") or match["stop"] in ("+", "-", "%")):
        raise ValueError(f"split {text!r} is not NAME or NAME[start:stop] (e.g. test[:50])")
    return match["name"], match["start"] or None, match["stop"] or None


@dataclass
class DatasetSettings:
    """Which benchmark problems to train and evaluate on."""

    suite: str = help_field("humaneval", help="suite name for suites.load_suite")
    train_split: str = help_field("test", help="training split, optionally sliced: test[:50]")
    eval_split: str | None = help_field(
        None, help="evaluation split (sliced like train_split); null: no evaluation"
    )
    data_dir: str | None = help_field(
        None,
        help="local data folder for suites that read files (e.g. ../shared/data); in a config "
        "file, a relative folder that exists beside the file is read from there (bundled data)",
    )
    needs: str | None = help_field(
        None,
        help="what to run or fetch before this config's data can load (a mined suite, a data "
        "set): said in the one-line error when the suite cannot be loaded",
    )
    task_ids: list[str] = help_field([], help="if set, train only on these task ids")
    shuffle: bool = help_field(True, help="shuffle training problems each epoch (seeded)")
    difficulty: str | None = help_field(
        None,
        help="keep training problems by measured pass rate: a file from `codeeval difficulty`, "
        "or cache (the cached measurement of this suite, train split and model.name); "
        "null: no filter",
    )
    min_pass_rate: float | None = help_field(
        0.0,
        help="with difficulty: keep problems whose pass rate is > this (0: drop the never "
        "solved, whose groups all fail alike); null: no lower bound",
    )
    max_pass_rate: float | None = help_field(
        1.0,
        help="with difficulty: keep problems whose pass rate is < this (1: drop the always "
        "solved); null: no upper bound",
    )
    curriculum: Literal["none", "easy_first", "hard_first"] = help_field(
        "none",
        help="with difficulty: order the kept problems by pass rate (easy_first: the most often "
        "solved first) instead of shuffling; none: the shuffle setting decides",
    )

    def shuffles(self) -> bool:
        """Whether training shuffles the problems (a curriculum is an order: kept)."""
        return self.shuffle and self.curriculum == "none"

    def __post_init__(self) -> None:
        for bound in ("min_pass_rate", "max_pass_rate"):
            value = getattr(self, bound)
            if value is not None and not 0.0 <= value <= 1.0:
                raise invalid(bound, f"must be in [0, 1] or null (got {value})")
        low, high = self.min_pass_rate, self.max_pass_rate
        if low is not None and high is not None and low >= high:
            raise invalid(
                "max_pass_rate",
                f"the band ({low}, {high}) is empty: keep min_pass_rate < max_pass_rate",
            )
        if self.curriculum not in ("none", "easy_first", "hard_first"):
            raise invalid(
                "curriculum", f"is {self.curriculum!r}; use none, easy_first or hard_first"
            )
        if self.curriculum != "none" and not self.difficulty:
            raise invalid(
                "curriculum",
                f"is {self.curriculum} but there is no measurement to order by; set "
                "dataset.difficulty (a file or cache) or curriculum=none",
            )
        for name in ("train_split", "eval_split"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                parse_split(value)
            except ValueError as exc:
                raise invalid(name, str(exc)) from exc


@dataclass
class RewardSettings:
    """How the harness turns an evaluated sample into a reward."""

    preset: str = help_field(
        "code_levels", help="reward preset name or path to a reward YAML (harness.reward)"
    )
    shift: float = help_field(0.0, help="constant added to every reward")
    scale: float = help_field(1.0, help="factor applied to every reward (after shift)")
    workers: int = help_field(0, help="sandbox worker processes for scoring; 0: in-process")
    executor: str = help_field(
        "local",
        help="where rewards are computed: local (this process) or ray (Ray actors, each batch "
        "split by problem, each actor a warm sandbox; needs pip install 'codeeval-rl[ray]')",
    )
    address: str | None = help_field(
        None,
        help="with executor=ray: an existing cluster (ray://host:10001, or auto); null: the "
        "cluster in RAY_ADDRESS, else a new local Ray instance",
    )

    def __post_init__(self) -> None:
        if not self.preset:
            raise invalid("preset", "is empty; name a preset such as code_levels")
        if self.workers < 0:
            raise invalid("workers", f"must be >= 0 (got {self.workers})")
        if self.executor not in EXECUTORS:
            raise invalid(
                "executor",
                f"is {self.executor!r}; use local (score in this process) or ray (Ray actors: "
                "reward.executor=ray, with reward.address for an existing cluster)",
            )
        if self.executor == "local" and self.address is not None:
            raise invalid(
                "address",
                f"is {self.address!r} but reward.executor is local; set reward.executor=ray "
                "to score on that cluster, or drop reward.address",
            )
        if self.executor == "ray" and importlib.util.find_spec("ray") is None:
            raise invalid(
                "executor",
                "is ray but Ray is not installed; pip install 'codeeval-rl[ray]' "
                "(or set reward.executor=local)",
            )

    def evaluate_kwargs(self) -> dict[str, Any]:
        """The keywords ``harness.evaluate.evaluate`` takes from this section (defaults left
        out, so an evaluate function without them still works)."""
        kwargs: dict[str, Any] = {}
        if self.workers:
            kwargs["workers"] = self.workers
        if self.executor != "local":
            kwargs["executor"] = self.executor
        if self.address is not None:
            kwargs["address"] = self.address
        return kwargs


@dataclass
class ExternalSettings:
    """Feedback shown to the agents between turns (multi-turn training)."""

    mode: ExternalMode = help_field(
        "none", help=f"feedback mode for turns >= 2: {', '.join(EXTERNAL_MODES)}"
    )
    sandbox_slice: int | str = help_field(
        1, help="failing cases the feedback may show: N first, -N last, all, first:N, last:N, 0"
    )
    expert_model: str | None = help_field(
        None, help="model name for expert_edits on an OpenAI-compatible server"
    )
    expert_base_url: str | None = help_field(
        None, help="base URL of the OpenAI-compatible server for expert_edits"
    )
    expert_api_key_env: str = help_field(
        "OPENAI_API_KEY", help="environment variable holding the expert server's API key"
    )
    max_feedback_chars: int = help_field(2000, help="feedback text is cut to this many chars")

    def __post_init__(self) -> None:
        if isinstance(self.sandbox_slice, str) and not SLICE_RE.match(self.sandbox_slice):
            raise invalid(
                "sandbox_slice",
                f"must be an integer, all, first:N or last:N (got {self.sandbox_slice!r})",
            )
        if self.mode == "expert_edits" and not (self.expert_model and self.expert_base_url):
            raise invalid(
                "expert_model",
                "expert_edits needs external.expert_model and external.expert_base_url",
            )


@dataclass
class OutputSettings:
    """Where results, checkpoints and the final model go."""

    dir: str = help_field("runs/train", help="output folder (metrics.jsonl, checkpoints)")
    save_final_model: bool = help_field(True, help="save the trained model/adapters at the end")
    save_interval: int = help_field(0, help="save a checkpoint every N steps; 0: only at the end")
    keep_tmp: bool = help_field(False, help="keep the harness's temporary evaluation folders")
    resume_from: str | None = help_field(
        None, help="checkpoint folder to resume from (or 'latest' in output.dir)"
    )

    def __post_init__(self) -> None:
        if self.save_interval < 0:
            raise invalid("save_interval", f"must be >= 0 (got {self.save_interval})")


@dataclass
class LoggingSettings:
    """Metrics sinks beyond the always-written metrics.jsonl."""

    tensorboard: bool = help_field(False, help="also write TensorBoard events (if installed)")
    wandb: bool = help_field(False, help="also log to Weights & Biases (if installed)")
    wandb_project: str = help_field("codeeval-rl", help="W&B project name")
    run_name: str | None = help_field(None, help="run name for TensorBoard/W&B")
    progress_bar: bool = help_field(True, help="show a tqdm progress bar")


@dataclass
class TrainerConfig:
    """The sections shared by every trainer; subclasses add the algorithm's section."""

    model: ModelSettings = field(
        default_factory=ModelSettings, metadata={"help": "the model to train"}
    )
    dataset: DatasetSettings = field(
        default_factory=DatasetSettings, metadata={"help": "training/eval problems"}
    )
    reward: RewardSettings = field(
        default_factory=RewardSettings, metadata={"help": "reward from the harness"}
    )
    external: ExternalSettings = field(
        default_factory=ExternalSettings, metadata={"help": "between-turn feedback"}
    )
    output: OutputSettings = field(
        default_factory=OutputSettings, metadata={"help": "output folder and checkpoints"}
    )
    logging: LoggingSettings = field(
        default_factory=LoggingSettings, metadata={"help": "metrics sinks"}
    )
    seed: int = help_field(0, help="seed for Python, NumPy and torch")

    def require_single_turn(self, trainer: str) -> None:
        """For trainers without turns: between-turn feedback would be silently ignored."""
        if self.external.mode != "none":
            raise invalid(
                "external.mode",
                f"{trainer} is single-turn; external.mode={self.external.mode!r} has no effect. "
                "Set external.mode=none, or use trainers.magrpo for multi-turn training",
            )


def missing_help(cls: type) -> list[str]:
    """Names of fields of ``cls`` (and nested sections) without help text (should be none)."""
    import dataclasses
    import typing

    missing = []
    hints = typing.get_type_hints(cls)
    for f in fields(cls):
        if not f.metadata.get("help"):
            missing.append(f"{cls.__name__}.{f.name}")
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            missing.extend(missing_help(tp))  # type: ignore[arg-type]
    return missing
