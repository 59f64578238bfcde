"""vLLM as the generation engine: in process, as a server the harness starts, and the fallback.

The fast tests cover choosing the engine and the registry; the slow ones run the real engine
and the real server on the packaged SmolLM2 (CPU build), and skip where vLLM cannot run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.models import tiny_model
from harness.models.backends import make_backend
from harness.models.base import GenerationSettings, Prompt, build_prompt
from harness.models.hf import TransformersBackend
from harness.models.registry import RegistryError, resolve_model
from harness.models.vllm_backend import VLLMUnavailable, vllm_status, vllm_usable
from harness.models.vllm_server import server_arguments

needs_vllm = pytest.mark.skipif(not vllm_usable(), reason=vllm_status().reason or "vLLM runs")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    model, tokenizer = tiny_model(seed=0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_turned_off_vllm_falls_back_to_transformers_with_one_line(
    tiny_folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CODEEVAL_NO_VLLM", "1")
    assert isinstance(make_backend(str(tiny_folder)), TransformersBackend)
    ours = [line for line in capsys.readouterr().err.splitlines() if "codeeval" in line]
    assert ours == [
        "codeeval: generating with transformers: vLLM is turned off (CODEEVAL_NO_VLLM is set)"
    ]


def test_asking_for_vllm_where_it_cannot_run_is_a_clear_error(
    tiny_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEEVAL_NO_VLLM", "1")
    with pytest.raises(VLLMUnavailable, match="CODEEVAL_NO_VLLM.*--llm-backend transformers"):
        make_backend(str(tiny_folder), backend="vllm")
    with pytest.raises(VLLMUnavailable, match="vllm-server:.*CODEEVAL_NO_VLLM"):
        make_backend(f"vllm-server:{tiny_folder}")


def test_a_transformers_device_means_transformers(tiny_folder: Path) -> None:
    assert isinstance(make_backend(str(tiny_folder), device="cpu"), TransformersBackend)


def test_registry_checks_the_engine_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "m.yaml").write_text(
        "name: m\nsource: some/model\nvllm:\n  tensor_parallel_size: 2\n  max_len: 10\n"
    )
    monkeypatch.setenv("CODEEVAL_MODEL_CONFIGS", str(tmp_path))
    with pytest.raises(RegistryError, match=r"m\.yaml: field 'vllm' has unknown setting.*max_len"):
        resolve_model("m")
    (tmp_path / "m.yaml").write_text("name: m\nsource: s\nvllm:\n  tensor_parallel_size: 2\n")
    spec = resolve_model("m")
    assert spec.backend == "auto" and spec.vllm == {"tensor_parallel_size": 2}


def test_engine_settings_per_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.models.vllm_backend import engine_kwargs

    (tmp_path / "m.yaml").write_text(
        "name: m\nsource: s\nvllm:\n  max_model_len: 2048\n"
        "  cuda:\n    gpu_memory_utilization: 0.5\n    tensor_parallel_size: 2\n"
    )
    monkeypatch.setenv("CODEEVAL_MODEL_CONFIGS", str(tmp_path))
    spec = resolve_model("m")
    cuda, cpu = engine_kwargs(spec, "cuda"), engine_kwargs(spec, "cpu")
    assert (cuda["gpu_memory_utilization"], cuda["tensor_parallel_size"]) == (0.5, 2)
    # On the CPU build that share would be of all RAM: it stays out; the CPU defaults apply.
    assert "gpu_memory_utilization" not in cpu and cpu["dtype"] == "bfloat16"
    assert cuda["max_model_len"] == cpu["max_model_len"] == 2048
    (tmp_path / "m.yaml").write_text("name: m\nsource: s\nvllm:\n  cuda:\n    gpus: 2\n")
    with pytest.raises(RegistryError, match=r"field 'vllm.cuda' has unknown setting.*gpus"):
        resolve_model("m")


def test_a_vllm_server_spec_names_the_model_it_serves() -> None:
    spec = resolve_model("vllm-server:smollm2-135m")
    plain = resolve_model("smollm2-135m")
    assert (spec.backend, spec.name, spec.source) == ("vllm-server", plain.name, plain.source)
    assert resolve_model("vllm-server:some/hub-model").source == "some/hub-model"
    with pytest.raises(RegistryError, match="serves local weights"):
        resolve_model("vllm-server:openai:http://127.0.0.1:1/v1#m")


def test_engine_settings_become_server_flags() -> None:
    settings = {"max_model_len": 4096, "enforce_eager": True, "enable_prefix_caching": False}
    assert server_arguments(settings) == ["--max-model-len", "4096", "--enforce-eager"]


# --- the real engine (slow: vLLM starts in 30-60 s on this CPU) ------------------------------


@pytest.mark.slow
@needs_vllm
def test_vllm_samples_n_per_prompt_with_seeds_and_stops() -> None:
    from harness.models.vllm_backend import VLLMBackend
    from harness.records import Problem

    backend = make_backend("smollm2-135m", backend="vllm")
    assert isinstance(backend, VLLMBackend)
    try:
        problem = Problem(
            suite="t",
            task_id="t/0",
            prompt='def add(a, b):\n    """Add two numbers."""\n',
            entry_point="add",
            cases=(),
            reference="    return a + b\n",
        )
        chat = build_prompt(problem, "chat")
        completion = Prompt(key="c", text="def f(x):\n", stop=("\ndef ", "\n#"))
        sampled = GenerationSettings(n=3, temperature=0.9, max_new_tokens=40, seed=7)
        first = backend.generate([chat, completion], sampled)
        again = backend.generate([completion, chat], sampled)  # another batch, same prompts
        assert [len(row) for row in first] == [3, 3]
        if backend.seeded:  # per-prompt seeds (not on the CPU build: see per_request_seeds)
            assert [g.raw for g in first[0]] == [g.raw for g in again[1]]
            assert [g.raw for g in first[1]] == [g.raw for g in again[0]]
        assert len({g.raw for g in first[0]}) > 1  # n really samples
        for generation in first[1]:
            assert "\ndef " not in generation.completion and "\n#" not in generation.completion
            assert generation.tokens <= 40
            assert generation.finish_reason in {"stop", "eos", "length"}
        greedy = GenerationSettings(n=1, temperature=0, max_new_tokens=24)
        assert backend.generate([chat], greedy) == backend.generate([chat], greedy)
        # More prompt tokens than one engine step prefills: prompts are prefilled in chunks,
        # which crashed seeded sampling on the CPU build.
        from suites.registry import load_suite

        many = [build_prompt(p, "chat") for p in load_suite("humaneval", "test")[:48]]
        rows = backend.generate(many, GenerationSettings(n=2, temperature=0.8, max_new_tokens=4))
        assert [len(row) for row in rows] == [2] * 48
    finally:
        backend.close()


_SERVER_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from harness.models.backends import make_backend
    from harness.models.base import GenerationSettings, Prompt

    backend = make_backend("vllm-server:smollm2-135m")
    settings = GenerationSettings(n=2, temperature=0.7, max_new_tokens=16)
    prompt = Prompt(key="k", text="def add(a, b):\\n", stop=("\\ndef ",))
    ours = backend.generate([prompt], settings)
    # The same server through the plain openai: spec, as a server someone else runs.
    theirs = make_backend(f"openai:{backend.server.base_url}#smollm2-135m").generate(
        [prompt], settings
    )
    print(json.dumps({
        "pid": backend.server.process.pid,
        "ours": [g.raw for g in ours[0]],
        "theirs": [g.raw for g in theirs[0]],
        "tokens": [g.tokens for g in ours[0]],
    }), flush=True)
    if sys.argv[1] == "close":
        backend.close()
        print("closed", flush=True)
    else:
        time.sleep(600)  # the test kills this process
    """
)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return True
        time.sleep(0.25)
    return False


@pytest.mark.slow
@needs_vllm
@pytest.mark.parametrize("ending", ["close", "killed"])
def test_the_harness_starts_a_vllm_server_generates_and_always_stops_it(
    tmp_path: Path, ending: str
) -> None:
    script = tmp_path / "serve.py"
    script.write_text(_SERVER_SCRIPT)
    client = subprocess.Popen(
        [sys.executable, str(script), ending], stdout=subprocess.PIPE, text=True
    )
    try:
        assert client.stdout is not None
        line = client.stdout.readline()
        assert line, f"the client exited with {client.wait()} before generating"
        result = json.loads(line)
        assert len(result["ours"]) == 2 and all(result["ours"]) and all(result["tokens"])
        assert len(result["theirs"]) == 2 and all(result["theirs"])
        pgid = result["pid"]  # the server leads its own process group
        assert _group_alive(pgid)
        if ending == "close":
            assert client.stdout.readline().strip() == "closed"
            assert _wait_gone(pgid, 5)  # killed processes may wait a moment to be reaped
            assert client.wait(60) == 0
        else:
            client.send_signal(signal.SIGKILL)
            client.wait()
            # No finally block ran: the parent-death signal ends the server.
            assert _wait_gone(pgid, 60), "the server outlived the harness that started it"
    finally:
        if client.poll() is None:
            client.kill()


@pytest.mark.slow
@needs_vllm
def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    from harness.models.vllm_server import ServerError, VLLMServer

    server = VLLMServer(str(tmp_path / "no-such-model"), "x", {"enforce_eager": True})
    with pytest.raises(ServerError, match="exited with status .* before it was ready") as info:
        server.start(timeout_s=300)
    assert "no-such-model" in str(info.value)  # the log's end says which model failed
    assert server.process is None


@needs_vllm
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    rows=st.integers(1, 6),
    vocab=st.sampled_from([3, 50, 1000, 49152]),
    scale=st.floats(0.05, 30.0),
    p=st.floats(0.01, 0.999),
)
def test_our_nucleus_keeps_exactly_the_tokens_vllm_top_p_keeps(
    seed: int, rows: int, vocab: int, scale: float, p: float
) -> None:
    """Peaked rows (nucleus inside the 64 candidates) and flat ones (the full sort) alike."""
    import torch
    from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch

    from harness.models.vllm_nucleus import nucleus_mask

    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, vocab, generator=generator) * scale
    ps = torch.full((rows,), p)
    theirs = apply_top_k_top_p_pytorch(logits.clone(), None, ps)
    ours = nucleus_mask(logits.clone(), ps)
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs))
    kept = ~torch.isinf(ours)
    assert torch.equal(ours[kept], logits[kept])
