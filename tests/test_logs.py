"""Third-party output stays quiet around a model run (harness.logs), ours stays, -v brings it back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A library logging below ERROR, a known deprecation in this process and in a child process
# (vLLM's engine is one), and a note of ours.
NOISY = textwrap.dedent(
    """
    import logging, subprocess, sys, warnings
    from harness.logs import quiet_third_parties

    quiet_third_parties(verbose=sys.argv[1] == "verbose")
    logging.getLogger("vllm.engine").warning("vllm says something")
    logging.getLogger("transformers.generation").warning("transformers says something")
    warnings.warn("`torch.distributed.reduce_op` is deprecated, use ReduceOp", FutureWarning)
    child = (
        "import warnings; "
        "warnings.warn('`torch.distributed.reduce_op` is deprecated, use ReduceOp', FutureWarning)"
    )
    subprocess.run([sys.executable, "-c", child], check=True)
    print("codeeval: our own note", file=sys.stderr)
    """
)


def run_noisy(mode: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "PYTHONWARNINGS"))}
    done = subprocess.run(
        [sys.executable, "-c", NOISY, mode],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout + done.stderr


def test_libraries_are_quiet_and_our_notes_stay() -> None:
    assert run_noisy("quiet").splitlines() == ["codeeval: our own note"]


def test_verbose_leaves_the_libraries_as_they_are() -> None:
    output = run_noisy("verbose")
    assert "vllm says something" in output and "transformers says something" in output
    assert output.count("reduce_op` is deprecated") == 2  # this process and the child
    assert "codeeval: our own note" in output


# Lines a person did not come for: log records, warnings and C++ notes of the libraries, and
# their progress bars (transformers' "Loading weights: 100%|...").
NOISE = re.compile(r"WARNING|INFO|warn\(|DEBUG|deprecated|\d%\|", re.IGNORECASE)


@pytest.mark.slow
def test_a_real_generation_prints_no_library_noise(pytester: pytest.Pytester) -> None:
    """The packaged SmolLM2 through transformers on 2 problems: only our bar, our one-line
    note and the table (the full `make eval` is the same with vLLM's engine on top)."""
    out = pytester.path / "out"
    # In a subprocess: the quiet settings are read by the libraries at import, once a process.
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-model", "smollm2-135m", "--llm-split", "test[:2]",
        "--llm-backend", "transformers", "--llm-max-new-tokens", "16", "--llm-temperature", "0",
        "--llm-out", str(out), "-p", "no:codeeval_gate", "-p", "no:cacheprovider", "-q",
        "-p", "no:benchmark",  # as `make eval` runs: pytest-benchmark warns under an xdist parent
    )  # fmt: skip
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    lines = [
        line
        for line in result.outlines + result.errlines
        if line.strip() and "generating (smollm2-135m)" not in line  # our progress bar
    ]
    noise = [line for line in lines if NOISE.search(line)]
    assert not noise, "\n".join(noise)
    assert any("codeeval: 2 problems x 1 samples" in line for line in lines)
    assert len(lines) <= 15, "\n".join(lines)
