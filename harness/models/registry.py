"""The model registry: one YAML file per model in ``configs/models``.

A name given to ``--llm-model`` is looked up here first; anything else is taken as a model
source as is (a hub name, a local folder, an ``openai:URL#model`` spec, or
``vllm-server:MODEL``: a vLLM server the harness starts for MODEL, itself a registry name, hub
name or folder).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from harness.paths import bundled

PromptStyle = Literal["chat", "completion"]
PROMPT_STYLES: tuple[str, ...] = ("chat", "completion")
# auto: vLLM when it can run here, else transformers (with one line saying why).
BACKENDS: tuple[str, ...] = ("auto", "transformers", "vllm", "vllm-server", "openai")
SERVER_PREFIX = "vllm-server:"
# The engine settings a registry entry's ``vllm`` mapping may set (passed to ``vllm.LLM`` and
# to the server's command line).
VLLM_SETTINGS: tuple[str, ...] = (
    "dtype",
    "enforce_eager",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
    "max_model_len",
    "max_num_seqs",
    "tensor_parallel_size",
    "enable_prefix_caching",
    "max_lora_rank",
)
VLLM_DEVICES: tuple[str, ...] = ("cpu", "cuda")  # per-device sub-mappings of ``vllm:``

# The repository's configs folder (the project is installed editable); CODEEVAL_MODEL_CONFIGS
# points elsewhere, e.g. for an installed wheel or a user's own registry.

_ENV_REF = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


class RegistryError(ValueError):
    """A registry file is malformed (the message names the file and the field)."""


@dataclass(frozen=True)
class ModelSpec:
    """What the registry knows about one model."""

    name: str
    source: str
    backend: str = "auto"
    prompt_style: PromptStyle = "chat"
    stop: tuple[str, ...] = ()
    sampling: dict[str, Any] = field(default_factory=dict)
    chat_template: str | None = None
    instruction: str | None = None
    concurrency: int = 8
    request_timeout_s: float = 120.0
    max_retries: int = 5
    vllm: dict[str, Any] = field(default_factory=dict)  # engine settings (VLLM_SETTINGS)
    path: Path | None = None


def registry_dir() -> Path:
    """The folder holding the model YAML files: ``$CODEEVAL_MODEL_CONFIGS``, else the bundled
    ``configs/models`` (package data: the same for the checkout and a wheel anywhere)."""
    if os.environ.get("CODEEVAL_MODEL_CONFIGS"):
        return Path(os.environ["CODEEVAL_MODEL_CONFIGS"])
    return bundled("models")


def _expand_env(text: str) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}`` (so URLs can come from the environment)."""
    return _ENV_REF.sub(lambda m: os.environ.get(m.group(1), m.group(2) or ""), text)


def _spec_from_file(path: Path) -> ModelSpec:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise RegistryError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise RegistryError(f"{path}: expected a mapping at the top level")
    for key in ("name", "source"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise RegistryError(f"{path}: field '{key}' must be a non-empty string")
    known = {f for f in ModelSpec.__dataclass_fields__ if f != "path"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise RegistryError(f"{path}: unknown field(s) {unknown}; known: {sorted(known)}")
    if data.get("backend", "auto") not in BACKENDS:
        raise RegistryError(f"{path}: field 'backend' must be one of {BACKENDS}")
    if data.get("prompt_style", "chat") not in PROMPT_STYLES:
        raise RegistryError(f"{path}: field 'prompt_style' must be one of {PROMPT_STYLES}")
    stop = data.get("stop") or []
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise RegistryError(f"{path}: field 'stop' must be a list of non-empty strings")
    sampling = data.get("sampling") or {}
    if not isinstance(sampling, dict):
        raise RegistryError(f"{path}: field 'sampling' must be a mapping")
    engine = data.get("vllm") or {}
    _check_engine_settings(path, "vllm", engine)
    for device in VLLM_DEVICES:
        if device in engine:
            _check_engine_settings(path, f"vllm.{device}", engine[device], nested=False)
    return ModelSpec(
        **{
            **data,
            "source": _expand_env(data["source"]),
            "stop": tuple(stop),
            "sampling": dict(sampling),
            "vllm": dict(engine),
            "path": path,
        }
    )


def _check_engine_settings(path: Path, name: str, settings: Any, nested: bool = True) -> None:
    """``vllm:`` holds engine settings, and per-device ones under ``cpu:`` / ``cuda:``."""
    if not isinstance(settings, dict):
        raise RegistryError(f"{path}: field '{name}' must be a mapping")
    allowed = set(VLLM_SETTINGS) | (set(VLLM_DEVICES) if nested else set())
    unknown = sorted(set(settings) - allowed)
    if unknown:
        raise RegistryError(
            f"{path}: field '{name}' has unknown setting(s) {unknown}; known: {sorted(allowed)}"
        )


def list_models() -> dict[str, ModelSpec]:
    """Every model in the registry, by name."""
    folder = registry_dir()
    specs: dict[str, ModelSpec] = {}
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        spec = _spec_from_file(path)
        specs[spec.name] = spec
    return specs


def resolve_model(name_or_path: str) -> ModelSpec:
    """The registry entry for a name, or an ad-hoc spec for a hub name, folder or URL spec.

    ``vllm-server:MODEL`` gives MODEL's spec with the ``vllm-server`` backend.
    """
    if name_or_path.startswith(SERVER_PREFIX):
        inner = resolve_model(name_or_path[len(SERVER_PREFIX) :])
        if inner.backend == "openai":
            raise RegistryError(f"{name_or_path!r}: a vLLM server serves local weights, not a URL")
        return dataclasses.replace(inner, backend="vllm-server")
    specs = list_models()
    if name_or_path in specs:
        return specs[name_or_path]
    backend = "openai" if name_or_path.startswith("openai:") else "auto"
    return ModelSpec(name=name_or_path, source=name_or_path, backend=backend)
