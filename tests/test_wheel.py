"""A wheel installed anywhere works like the checkout: bundled registry, presets and configs.

The wheel is built from the tracked files, installed into a fresh venv (which sees this
machine's site-packages for torch and the rest, but takes codeeval-rl itself from the
wheel), and run from a folder that has no ``configs/``: the canonical suite, the packaged
SmolLM2 through the registry, a reward preset, and a trainer's ``--help``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CODEEVAL_MODEL_CONFIGS")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the venv's python, a folder far from the checkout)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, tracked):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    dist = root / "dist"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        cwd=root,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("codeeval_rl-*.whl")
    venv = root / "venv"
    made = _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=root)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    done = _run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return python, elsewhere


def test_the_packages_and_their_data_come_from_the_wheel(installed: tuple[Path, Path]) -> None:
    python, elsewhere = installed
    code = (
        "import harness, configs\n"
        "from harness.models.registry import registry_dir, list_models\n"
        "from harness.reward.config import load_reward_config\n"
        "print(harness.__file__)\nprint(registry_dir())\nprint(sorted(list_models()))\n"
        "print(load_reward_config('weighted').name)\n"
    )
    done = _run([str(python), "-c", code], cwd=elsewhere)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    venv = str(python.parent.parent)
    assert lines[0].startswith(venv) and lines[1].startswith(venv), lines
    assert "smollm2-135m" in lines[2]
    assert lines[3] == "weighted"


def test_the_canonical_suite_and_the_packaged_model_run_from_elsewhere(
    installed: tuple[Path, Path],
) -> None:
    python, elsewhere = installed
    out = elsewhere / "canonical"
    done = _run(
        [str(python), "-m", "pytest", "--llm-eval", "humaneval", "--llm-samples", "canonical",
         "--llm-split", "test[:5]", "--llm-out", str(out), "--llm-reward", "weighted",
         "-p", "no:cacheprovider", "-q"],
        cwd=elsewhere,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["passed"] * 5
    assert all("reward" in r for r in rows)

    out = elsewhere / "model"
    done = _run(
        [str(python), "-m", "pytest", "--llm-eval", "humaneval", "--llm-model", "smollm2-135m",
         "--llm-backend", "transformers", "--llm-split", "test[:2]", "--llm-max-new-tokens", "24",
         "--llm-out", str(out), "-p", "no:cacheprovider", "-q"],
        cwd=elsewhere,
    )  # fmt: skip
    # Exit 1 is the model's score (failed samples); a usage or internal error is not.
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["status"] in ("passed", "failed", "timeout") for r in rows)


def test_a_trainer_answers_help_from_elsewhere(installed: tuple[Path, Path]) -> None:
    python, elsewhere = installed
    done = _run([str(python), "-m", "trainers.magrpo", "--help"], cwd=elsewhere)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--config" in done.stdout
