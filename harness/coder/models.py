"""Chat with the project's model backends (one backend per model name, built once per process)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from harness.models import Generation, GenerationSettings, Prompt, make_backend
from harness.models.base import Backend

_backends: dict[str, Backend] = {}
_lock = threading.Lock()


def backend_for(model: str) -> Backend:
    """The backend of a registry name, hub name or ``openai:URL#model`` (loaded once)."""
    with _lock:
        if model not in _backends:
            _backends[model] = make_backend(model)
        return _backends[model]


def chat(
    model: str,
    conversations: Sequence[Sequence[dict[str, str]]],
    *,
    n: int = 1,
    temperature: float = 0.7,
    max_new_tokens: int = 256,
    seed: int = 0,
) -> list[list[Generation]]:
    """``n`` answers to each conversation (lists of ``{"role", "content"}`` messages)."""
    prompts = [
        Prompt(
            key=f"coder{i}",
            text=messages[-1]["content"],
            messages=tuple(dict(m) for m in messages),
            style="chat",
        )
        for i, messages in enumerate(conversations)
    ]
    settings = GenerationSettings(
        n=n,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        seed=seed,
        prompt_style="chat",
        batch_size=max(1, min(8, n * len(prompts))),
    )
    return backend_for(model).generate(prompts, settings)
