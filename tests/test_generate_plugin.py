"""The plugin's generation options, in real pytest sessions (pytester)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from harness.models import tiny_model
from harness.sandbox.bwrap import bwrap_available

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random model saved as a local folder: any folder works as --llm-model."""
    folder = tmp_path_factory.mktemp("tiny-model")
    model, tokenizer = tiny_model(seed=0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_options_are_in_the_codeeval_group(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    group = config._parser.getgroup("codeeval")
    names = {name for option in group.options for name in option.names()}
    for option in (
        "--llm-model",
        "--llm-n",
        "--llm-temperature",
        "--llm-top-p",
        "--llm-max-new-tokens",
        "--llm-seed",
        "--llm-prompt-style",
        "--llm-batch-size",
    ):
        assert option in names
    assert config.getoption("llm_model") is None and config.getoption("llm_n") == 1


def test_settings_come_from_options_then_registry(pytester: pytest.Pytester) -> None:
    from plugin.generation import settings_from_config

    config = pytester.parseconfig("--llm-model", "smollm2-135m", "--llm-temperature", "0.7")
    settings = settings_from_config(config)
    assert settings.temperature == 0.7  # the option
    assert settings.max_new_tokens == 256 and settings.top_p == 0.95  # the registry entry
    bad = pytester.parseconfig("--llm-model", "smollm2-135m", "--llm-n", "0")
    with pytest.raises(pytest.UsageError, match="n=0"):
        settings_from_config(bad)


def test_model_generates_then_the_suite_is_evaluated(
    pytester: pytest.Pytester, tiny_folder: Path
) -> None:
    out = pytester.path / "out"
    model = shutil.copytree(tiny_folder, pytester.path / "model")
    args = [
        "--llm-eval",
        "humaneval",
        "--llm-split",
        "test[:1]",
        "--llm-model",
        str(model),
        "--llm-backend",  # the plugin's generation path, not vLLM's start-up (tested apart)
        "transformers",
        "--llm-n",
        "2",
        "--llm-max-new-tokens",
        "4",
        "--llm-temperature",
        "1.0",
        "--llm-out",
        str(out),
        "-p",
        "no:cacheprovider",
    ]
    result = pytester.runpytest(*args)
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert sorted((r["task_id"], r["sample_id"]) for r in rows) == [
        ("HumanEval/0", "0"),
        ("HumanEval/0", "1"),
    ]
    assert all(r["model"] == str(model) for r in rows)
    result.stderr.fnmatch_lines(["*codeeval: 1 problems x 2 samples from*"])
    assert (out / "results.jsonl").exists()
    # Run again: the samples are all there, so no model loads (its folder is gone) and
    # nothing is generated twice.
    before = (out / "samples.jsonl").read_bytes()
    shutil.rmtree(model)
    again = pytester.runpytest(*args)
    again.stderr.fnmatch_lines(["*1 problems x 2 samples of * are all in *: no model loaded*"])
    assert again.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    assert (out / "samples.jsonl").read_bytes() == before


FAST_S = 60  # a refused run stops within seconds; the bound leaves room for a loaded machine


def refused(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run with a model that would take long to load and generate: it must stop first."""
    start = time.perf_counter()
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-split", "test[:2]", "--llm-model", "smollm2-135m",
        "--llm-backend", "transformers", "--llm-out", str(pytester.path / "out"),
        "-p", "no:cacheprovider", *args, timeout=300,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()[-2000:]
    assert "model load" not in result.stderr.str() and "generating" not in result.stderr.str()
    assert not (pytester.path / "out" / "samples.jsonl").exists()
    assert time.perf_counter() - start < FAST_S
    return result


def test_a_bad_reward_config_stops_the_run_before_the_model_loads(
    pytester: pytest.Pytester,
) -> None:
    result = refused(pytester, "--llm-reward", str(pytester.path / "missing.yaml"))
    result.stderr.fnmatch_lines(["*--llm-reward *missing.yaml*"])


@pytest.mark.skipif(not bwrap_available(), reason="hiding a folder takes bubblewrap")
def test_an_unusable_sandbox_stops_the_run_before_the_model_loads(
    pytester: pytest.Pytester,
) -> None:
    # The interpreter's standard library hidden from the candidate (a data folder over it):
    # the probe cannot import csv, as with an interpreter in a 0700 home and no bubblewrap.
    stdlib = Path(os.__file__).parent
    result = refused(pytester, "--llm-data-dir", str(stdlib))
    result.stderr.fnmatch_lines(["*candidates cannot run with this Python*"])


def test_a_malformed_registry_entry_stops_the_run_before_the_model_loads(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = pytester.mkdir("registry")
    (registry / "smollm2-135m.yaml").write_text("source: x\nbackend: nonsense\n")
    monkeypatch.setenv("CODEEVAL_MODEL_CONFIGS", str(registry))
    result = refused(pytester)
    result.stderr.fnmatch_lines(["*--llm-model smollm2-135m*"])


def test_no_model_means_no_generation(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--llm-eval", "humaneval", "--llm-split", "test[:1]")
    result.stderr.fnmatch_lines(["*--llm-model NAME*"])
    assert result.ret != 0
