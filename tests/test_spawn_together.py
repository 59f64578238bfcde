"""xdist's local workers of an evaluation start together, not one after another
(plugin.spawn): real pytest sessions, real interpreters behind a start that takes a second."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from plugin.spawn import make_together

# The controller's record of each gateway xdist was handed, with the wall time.
RECORDER = """
import json, os, time

def pytest_xdist_newgateway(gateway):
    with open(os.environ["SPAWN_LOG"], "a") as fh:
        fh.write(json.dumps([gateway.id, time.time()]) + "\\n")
"""


def slow_python(folder: Path, seconds: float) -> Path:
    """An interpreter that takes ``seconds`` to start (as a cold one on a busy machine)."""
    path = folder / "slow-python"
    path.write_text(f'#!/bin/sh\nsleep {seconds}\nexec {sys.executable} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def run_with_slow_workers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    log = pytester.path / "spawn.jsonl"
    monkeypatch.setenv("SPAWN_LOG", str(log))
    pytester.makeconftest(RECORDER)
    python = slow_python(pytester.path, 1.0)
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-samples", "canonical", "--llm-split", "test[:6]",
        "--tx", f"3*popen//python={python}", "--dist", "load", "--llm-ship", "never",
        "--llm-out", str(out), "-q", "-p", "no:codeeval_gate", "-p", "no:cacheprovider",
    )  # fmt: skip
    made = [json.loads(line) for line in log.read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    return result, made, summary


def test_three_slow_workers_start_in_one_second_not_three(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, made, summary = run_with_slow_workers(pytester, monkeypatch)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert [gid for gid, _ in made] == ["gw0", "gw1", "gw2"]  # xdist's ids, in its order
    spread = made[-1][1] - made[0][1]
    # In turn, each gateway waits for the one before: 1 s apart. Together: all ready at once.
    assert spread < 0.5, f"the workers came up {spread:.2f} s apart: started one by one"
    assert summary["suites"]["humaneval"]["passed"] == 6


def test_make_together_leaves_a_failed_gateway_to_its_maker() -> None:
    class Spec:
        def __init__(self, sid: str) -> None:
            self.id = sid

    def make(spec: Spec) -> str:
        if spec.id == "gw1":
            raise OSError("cannot start")
        return f"gateway {spec.id}"

    made = make_together(make, [Spec("gw0"), Spec("gw1"), Spec("gw2")])
    assert made == {"gw0": "gateway gw0", "gw2": "gateway gw2"}
