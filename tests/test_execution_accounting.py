"""Resource accounting of every sample (CPU, peak memory, I/O), measured by the fork server.

Real sandboxes (with and without bubblewrap), a real pytest session and the ``evaluate()``
path: the numbers come from kernel counters the trusted server reads, so each test makes a
sample do something measurable and checks the counter saw it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox.api import RESOURCE_KEYS

MIB = 1024 * 1024
# Each program defines f() and does its measurable work when loaded.
ALLOC = "data = b'x' * (200 * 1024 * 1024)  # written, so every page is resident\n"
BUSY = textwrap.dedent(
    """
    import time
    end = time.process_time() + 0.2
    while time.process_time() < end:
        sum(range(20000))  # user time; the clock is read rarely
    """
)
WRITE = "open('out.bin', 'wb').write(b'y' * (5 * 1024 * 1024))\n"
READABLE = "/usr/bin/env"  # readable by anyone, visible in the sandbox
READ = f"open({READABLE!r}, 'rb').read()\n"
# A grandchild that reads 40 MiB, reaped by the child (only preloaded modules: without
# bubblewrap, a child dropped to nobody may not reach the rest of a 0700 home's stdlib).
SPAWN = textwrap.dedent(
    """
    import os
    pid = os.fork()
    if pid == 0:
        fd = os.open('/dev/zero', os.O_RDONLY)
        for _ in range(40):
            os.read(fd, 1024 * 1024)
        os._exit(0)
    os.waitpid(pid, 0)
    """
)
# A grandchild left running when the sample ends (killed and reaped by the server): its CPU
# time counts although the child never waited for it.
LEFT_BEHIND = textwrap.dedent(
    """
    import os, time
    if os.fork() == 0:
        while True:
            sum(range(20000))
    time.sleep(0.5)
    """
)


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool):
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        yield box


# Generous limits: these tests measure work, and on a loaded machine work takes long.
def run(box: Sandbox, body: str, timeout_s: float = 30.0) -> dict[str, float | int]:
    program = body + "\ndef f():\n    return 1\n"
    case = CaseRequest("c0", "compare", calls=("candidate()",), timeout_s=timeout_s)
    result = box.run(SampleRequest(program=program, entry_point="f", cases=(case,), budget_s=60))
    assert result.infra_error is None, result.infra_error
    assert result.cases["c0"].status == "ok", result.cases["c0"]
    assert set(result.resources) == set(RESOURCE_KEYS)
    return result.resources


def test_peak_memory_of_a_200_mb_allocation(sandbox: Sandbox) -> None:
    small = run(sandbox, "")
    big = run(sandbox, ALLOC)
    assert big["max_rss_kib"] >= 200 * 1024
    assert small["max_rss_kib"] < 200 * 1024  # per sample, not the server's lifetime peak


def test_cpu_time_of_a_busy_loop(sandbox: Sandbox) -> None:
    busy = run(sandbox, BUSY)
    assert busy["cpu_user_s"] + busy["cpu_system_s"] >= 0.18
    assert busy["cpu_user_s"] >= 0.1
    assert run(sandbox, "")["cpu_user_s"] < 0.1


def test_bytes_written_and_read(sandbox: Sandbox) -> None:
    import os

    wrote = run(sandbox, WRITE)
    assert wrote["wchar"] >= 5 * MIB
    read = run(sandbox, READ)
    assert read["rchar"] >= os.path.getsize(READABLE)
    # The sample's folder is a memory file system under bubblewrap: nothing reaches a disk.
    plain = run(sandbox, "")
    assert plain["rchar"] < 64 * 1024 and plain["wchar"] < 64 * 1024


def test_processes_the_candidate_starts_are_counted(sandbox: Sandbox) -> None:
    spawned = run(sandbox, SPAWN)
    assert spawned["rchar"] >= 40 * MIB


def test_processes_left_behind_are_counted(sandbox: Sandbox) -> None:
    left = run(sandbox, LEFT_BEHIND)
    # The child itself slept (0 s of user time); the loop's share of 0.5 s depends on the load.
    assert left["cpu_user_s"] >= 0.005


def test_a_sample_that_times_out_is_still_accounted(sandbox: Sandbox) -> None:
    result = sandbox.run(
        SampleRequest(
            program="def f():\n    while True:\n        pass\n",
            entry_point="f",
            cases=(CaseRequest("c0", "compare", calls=("candidate()",), timeout_s=0.5),),
            budget_s=5,
        )
    )
    assert result.cases["c0"].status == "timeout"
    # Killed at the deadline, yet its CPU time is there (how much depends on the machine's load).
    assert result.resources["cpu_user_s"] >= 0.005


# -- rows of results.jsonl ---------------------------------------------------------------------
PROBLEM = {
    "task_id": "acct/add",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
}


def _full(body: str) -> str:
    return f"```python\n{body}\ndef add(a, b):\n    return a + b\n```"


SAMPLES = {"alloc": ALLOC, "busy": BUSY, "write": WRITE, "plain": ""}


def _check_rows(rows: dict[str, dict]) -> None:
    for sample_id, row in rows.items():
        execution = row["execution"]
        assert set(RESOURCE_KEYS) <= set(execution), sample_id
        for key, kind in RESOURCE_KEYS.items():
            assert type(execution[key]) is kind and execution[key] >= 0, (sample_id, key)
        assert row["status"] == "passed", (sample_id, row["cases"])
    assert rows["alloc"]["execution"]["max_rss_kib"] >= 200 * 1024
    assert rows["plain"]["execution"]["max_rss_kib"] < 200 * 1024
    assert rows["busy"]["execution"]["cpu_user_s"] >= 0.1
    assert rows["write"]["execution"]["wchar"] >= 5 * MIB


def test_rows_of_a_pytest_session_carry_the_accounting(pytester: pytest.Pytester) -> None:
    suite = pytester.path / "problems.jsonl"
    suite.write_text(json.dumps(PROBLEM) + "\n")
    samples = pytester.path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": "acct/add", "sample_id": k, "completion": _full(v)}) + "\n"
            for k, v in SAMPLES.items()
        )
    )
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(samples), "--llm-out", str(out),
        "--llm-timeout", "30", "-p", "no:codeeval_gate", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    lines = (out / "results.jsonl").read_text().splitlines()
    _check_rows({r["sample_id"]: r for r in map(json.loads, lines)})


def test_rows_of_evaluate_carry_the_accounting(tmp_path: Path) -> None:
    from harness.evaluate import evaluate
    from harness.records import Sample
    from suites import load_suite

    suite = tmp_path / "problems.jsonl"
    suite.write_text(json.dumps(PROBLEM) + "\n")
    problems = load_suite(f"jsonl:{suite}")
    samples = [Sample("acct/add", _full(v), k) for k, v in SAMPLES.items()]
    rows = evaluate(problems, samples, out_dir=tmp_path / "out", timeout_s=30)
    _check_rows({r["sample_id"]: r for r in rows})
