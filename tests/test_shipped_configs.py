"""Every shipped trainer config takes a step, and every model registry entry holds up offline.

The slow tier runs each trainer config in ``configs/`` as a user would (``python -m
trainers.X --config configs/NAME.yaml``), from a folder other than the checkout, with a tiny
random model in place of its model and one step: a config that needs a step first (the mined
suite, a difficulty measurement) or data this machine cannot have (CoopHumanEval's full set)
must say so in one line that names what to run or fetch. The default tier checks that every
config parses and that every registry entry resolves offline.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.paths import bundled

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted(p for p in bundled().glob("*.yaml"))
ALGORITHMS = ("grpo", "magrpo", "ppo", "dqn")

# What a config needs before it can take a step on a machine with the data mirror and no hub:
# the line it must print (a regex), and, for a step this test can take, the command that does it.
NEEDS_FIRST = {
    "grpo_mbpp_recipe": r"dataset\.difficulty: no difficulty measurement at .*; run `codeeval "
    r"difficulty --suite mbpp --split train --model \S+ -n 8` first$",
    "magrpo_mbpp_recipe": r"dataset\.difficulty: no difficulty measurement at .*; run `codeeval "
    r"difficulty --suite mbpp --split train --model \S+ -n 8` first$",
    "magrpo_mined_cpu": r"dataset\.suite: .*mining_repo\.jsonl.*; run `codeeval mine "
    r"tests/fixtures/mining_repo -o runs/mined/mining_repo\.jsonl` first \(in the checkout\)$",
}
NEEDS_DATA = {  # CoopHumanEval's full set: the hub's, not in the mirror
    name: r"dataset\.suite: coophumaneval: no local file .*; fetch CoopHumanEval\.jsonl \(the "
    r"hub's OpenMLRL/CoopHumanEval\) into dataset\.data_dir or \$CODEEVAL_DATA_DIR$"
    for name in ("grpo_che", "magrpo_che", "mt_magrpo_che")
}


def algorithm_of(path: Path) -> str:
    sections = yaml.safe_load(path.read_text())
    (found,) = [a for a in ALGORITHMS if a in sections]
    return found


def one_step(path: Path, model: Path, out: Path) -> list[str]:
    """The overrides that make ``path`` take one short step with ``model``."""
    algo = algorithm_of(path)
    keys = {
        f"model.name={model}",
        f"output.dir={out}",
        f"{algo}.max_steps=1",
        f"{algo}.max_new_tokens=16",
        "logging.progress_bar=false",
    }
    if algo in ("magrpo", "dqn"):
        keys.add(f"{algo}.eval_interval=0")  # the step is the test, not the evaluation
    if algo == "dqn":
        keys |= {"dqn.max_completion_tokens=16", "dqn.collect_samples=2"}
    return sorted(keys)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_config_parses(path: Path) -> None:
    import importlib

    parse_args = importlib.import_module(f"trainers.{algorithm_of(path)}.config").parse_args
    config = parse_args(["--config", str(path)])
    assert config.output.dir


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with SmolLM2's tokenizer, saved as a local model folder."""
    from harness.models import tiny_model

    folder = tmp_path_factory.mktemp("tiny-llama")
    model, tok = tiny_model(0, hidden=32)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def train(path: Path, tiny: Path, where: Path, *extra: str) -> subprocess.CompletedProcess:
    out = where / "out" / path.stem
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", f"trainers.{algorithm_of(path)}", "--config", str(path)]
    command += ["--override", *one_step(path, tiny, out), *extra]
    return subprocess.run(command, cwd=where, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_config_takes_a_step_or_says_what_to_do_first(
    path: Path, tiny_folder: Path, shared_data: Path, tmp_path: Path
) -> None:
    where = tmp_path / "elsewhere"  # not the checkout: bundled files must be found as data
    where.mkdir()
    done = train(path, tiny_folder, where)
    expected = NEEDS_FIRST.get(path.stem) or NEEDS_DATA.get(path.stem)
    if expected:
        # One line, the last, that names what to do; no traceback, and no model loaded.
        assert done.returncode == 2, done.stderr[-3000:]
        last = done.stderr.strip().splitlines()[-1]
        algo = algorithm_of(path)
        assert re.fullmatch(f"trainers\\.{algo}: needs a step first: {expected}", last), last
        assert "Traceback" not in done.stderr and "Loading weights" not in done.stderr
        if path.stem != "magrpo_mined_cpu":
            return
        # The line's command, run from the checkout (the fixture repository is there).
        target = where / "runs" / "mined" / "mining_repo.jsonl"
        mine = [sys.executable, "-m", "harness.cli", "mine", "tests/fixtures/mining_repo"]
        subprocess.run([*mine, "-o", str(target)], cwd=REPO, check=True, capture_output=True)
        done = train(path, tiny_folder, where)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = where / "out" / path.stem / "metrics.jsonl"
    steps = {json.loads(line).get("step") for line in metrics.read_text().splitlines()}
    assert 1 in steps, steps


@pytest.mark.parametrize("path", sorted(bundled("models").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_registry_entry_holds_up_offline(path: Path) -> None:
    """What can be checked without the network: the entry parses, its settings are possible,
    its source is a file that is here (the packaged GGUF), a hub id of the right form, or an
    OpenAI endpoint that parses; vLLM's engine settings can be made for both devices."""
    from harness.models.base import GenerationSettings
    from harness.models.loading import gguf_path
    from harness.models.openai_http import parse_spec
    from harness.models.registry import PROMPT_STYLES, resolve_model
    from harness.models.vllm_backend import engine_kwargs

    spec = resolve_model(path.stem)
    assert spec.name == path.stem and spec.prompt_style in PROMPT_STYLES
    GenerationSettings(**spec.sampling)  # raises on an impossible setting
    if spec.backend == "openai":
        assert parse_spec(spec.source).model
        return
    gguf = gguf_path(spec.source)  # raises when the package that ships it is missing
    if gguf is not None:
        assert gguf.is_file() and gguf.stat().st_size > 10**6
    else:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", spec.source), spec.source
    for device in ("cpu", "cuda"):
        settings = engine_kwargs(spec, device)
        assert settings.get("max_model_len", 1) > 0


@pytest.mark.parametrize("name", ["grpo_che_cpu", "magrpo_che_cpu", "mt_magrpo_che_cpu"])
def test_cpu_configs_find_their_bundled_data_from_any_folder(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # They read data_dir: tests/fixtures from the working folder: only the checkout had it.
    import importlib

    from trainers.common.problems import train_problems

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CODEEVAL_DATA_DIR", raising=False)
    path = bundled(f"{name}.yaml")
    config = importlib.import_module(f"trainers.{algorithm_of(path)}.config").parse_args(
        ["--config", f"configs/{name}.yaml"]  # no such file here: the bundled one
    )
    assert Path(config.dataset.data_dir) == bundled("data")
    assert train_problems(config.dataset, config.model.name, config.seed)


def test_a_config_whose_data_needs_a_step_says_which_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trainers.magrpo", "--config", "configs/magrpo_mined_cpu.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    expected = f"trainers\\.magrpo: needs a step first: {NEEDS_FIRST['magrpo_mined_cpu']}"
    assert re.fullmatch(expected, done.stderr.strip()), done.stderr[-3000:]
