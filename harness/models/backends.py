"""Choosing and building a generation backend for a model name."""

from __future__ import annotations

import sys

from harness.models.base import Backend
from harness.models.registry import ModelSpec, resolve_model
from harness.models.vllm_backend import vllm_status, vllm_usable

BACKEND_CHOICES: tuple[str, ...] = ("auto", "transformers", "vllm", "vllm-server")

__all__ = ["BACKEND_CHOICES", "make_backend", "transformers_backend", "vllm_usable"]


def make_backend(
    name_or_path: str,
    backend: str = "auto",
    dtype: str = "float32",
    device: str | None = None,
) -> Backend:
    """The backend for a registry name, hub name, folder, ``openai:URL#model`` or
    ``vllm-server:MODEL`` spec.

    ``backend`` overrides the registry's choice for local weights; ``auto`` keeps it, and the
    registry's ``auto`` takes vLLM when it can run here, else transformers with one line that
    says why. A ``device`` (a transformers setting) means transformers.
    """
    if backend not in BACKEND_CHOICES:
        raise ValueError(f"backend {backend!r}: expected one of {BACKEND_CHOICES}")
    spec = resolve_model(name_or_path)
    if spec.backend == "openai":
        from harness.models.openai_http import OpenAIBackend

        return OpenAIBackend.from_spec(spec)
    wanted = spec.backend if backend == "auto" else backend
    if wanted == "vllm-server":
        from harness.models.vllm_server import ServerBackend

        return ServerBackend.from_spec(spec)
    if wanted == "vllm":
        from harness.models.vllm_backend import VLLMBackend

        return VLLMBackend.from_spec(spec)
    # ``device`` is a transformers setting: asking for one means asking for transformers.
    if wanted == "auto" and device is None:
        status = vllm_status()
        if status.usable:
            from harness.models.vllm_backend import VLLMBackend

            return VLLMBackend.from_spec(spec)
        print(f"codeeval: generating with transformers: {status.reason}", file=sys.stderr)
    return transformers_backend(spec, dtype=dtype, device=device)


def transformers_backend(
    spec: ModelSpec, dtype: str = "float32", device: str | None = None
) -> Backend:
    """The transformers backend for a registry entry (loads the weights)."""
    from harness.models.hf import TransformersBackend
    from harness.models.loading import load_model

    model, tokenizer = load_model(spec.name, dtype=dtype, device=device)
    return TransformersBackend(
        model,
        tokenizer,
        name=spec.name,
        default_style=spec.prompt_style,
        chat_template=spec.chat_template,
        stop=spec.stop,
        instruction=spec.instruction,
    )
