"""A time-out needs evidence that the program used its time, so a busy machine flips nothing.

Limits are CPU time (harness/sandbox/inside/segment.py): when a limit's wall time runs out and
the sample has had less than it on a CPU, the deadline moves on by what is left, up to
MAX_STRETCH times the limit. Here real CPU hogs share the cores with the run. A case that needs
most of its limit used to time out (the machine gave it a third of a core); an endless loop still
times out after its limit of CPU, and a sleeper at the stretch cap. In the slow tier, the
references of humaneval, mbpp-plus and apps-mini give the same verdicts beside a hog per core
as on the idle machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox.inside.segment import MAX_STRETCH


@contextmanager
def hogs(per_core: int) -> Iterator[None]:
    """``per_core`` busy processes per core, at the run's own priority."""
    count = per_core * (os.cpu_count() or 1)
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.3)  # running before the run starts
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _spinner(cpu_s: float) -> str:
    return (
        "import time\n"
        "def f():\n"
        f"    end = time.process_time() + {cpu_s}\n"
        "    while time.process_time() < end:\n"
        "        pass\n"
        "    return 1\n"
    )


def _request(program: str, cases: int = 1, timeout_s: float = 1.0, budget_s: float = 30.0):
    calls = tuple(
        CaseRequest(f"c{i}", "compare", calls=("candidate()",), timeout_s=timeout_s)
        for i in range(cases)
    )
    return SampleRequest(program, "f", calls, budget_s=budget_s)


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool):
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        yield box


def test_a_case_that_needs_most_of_its_limit_passes_on_a_busy_machine(sandbox: Sandbox) -> None:
    with hogs(per_core=2):
        result = sandbox.run(_request(_spinner(0.7), timeout_s=1.0))
    case = result.cases["c0"]
    assert case.status == "ok", (case.status, case.message)


def test_the_budget_stretches_too(sandbox: Sandbox) -> None:
    # Three cases of 0.35 s of CPU in a 1.5 s budget: on a third of a core, over 3 s of wall.
    with hogs(per_core=2):
        result = sandbox.run(_request(_spinner(0.35), cases=3, timeout_s=1.0, budget_s=1.5))
    assert [c.status for c in result.cases.values()] == ["ok"] * 3, result.cases


def test_an_endless_loop_still_times_out_after_its_cpu(sandbox: Sandbox) -> None:
    program = "def f():\n    while True:\n        pass\n"
    with hogs(per_core=1):
        start = time.monotonic()
        result = sandbox.run(_request(program, timeout_s=1.0))
        took = time.monotonic() - start
    assert result.cases["c0"].status == "timeout"
    assert took < MAX_STRETCH * 1.0 + 3.0


def test_a_sleeper_times_out_at_the_stretch_cap(sandbox: Sandbox) -> None:
    program = "import time\ndef f():\n    time.sleep(60)\n"
    start = time.monotonic()
    result = sandbox.run(_request(program, timeout_s=0.5))
    took = time.monotonic() - start
    assert result.cases["c0"].status == "timeout"
    assert MAX_STRETCH * 0.5 - 0.1 <= took < MAX_STRETCH * 0.5 + 3.0


# -- the references, idle and beside a hog per core ---------------------------------------------
def _statuses(suite: str, split: str, out: Path) -> dict[str, str]:
    from harness.evaluate import evaluate
    from harness.records import Sample
    from suites import load_suite

    problems = [p for p in load_suite(suite, split=split) if not p.defects]
    samples = [Sample(p.task_id, p.reference, "ref") for p in problems]
    rows = evaluate(problems, samples, workers=2, out_dir=out)
    return {row["task_id"]: row["status"] for row in rows}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suite", "split"),
    [("humaneval", "test"), ("mbpp-plus", "test[:60]"), ("apps-mini", "test[:40]")],
)
def test_references_give_the_same_verdicts_beside_a_hog_per_core(
    suite: str, split: str, tmp_path: Path, shared_data: Path
) -> None:
    idle = _statuses(suite, split, tmp_path / "idle")
    with hogs(per_core=1):
        busy = _statuses(suite, split, tmp_path / "busy")
    assert busy == idle, {k: (idle[k], busy.get(k)) for k in idle if busy.get(k) != idle[k]}
