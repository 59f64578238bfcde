"""What one run of a program on one test came to, before and after the judge.

A runner (:mod:`harness.stdio.python_runner`, :mod:`harness.stdio.native_runner`) gives a
:class:`TestRun` per test: how the process ended and what it wrote to stdout, read by the
trusted side. :func:`verdict_of` turns it into a judge's verdict with the problem's checker.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

RunEnd = Literal["exited", "signal", "timeout", "memory", "output_limit", "raised", "error"]
Verdict = Literal[
    "passed",
    "wrong_answer",
    "presentation_error",
    "time_limit",
    "memory_limit",
    "output_limit",
    "runtime_error",
    "compile_error",
    "judge_error",
]
OUTPUT_LIMIT_BYTES = 8 * 1024 * 1024  # a program's stdout per test, as judges cap it
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class TestRun:
    """How one test's process ended: ``exited`` (with ``code``), ``signal`` (``code`` is the
    signal number), ``timeout``, ``memory``, ``output_limit``, ``raised`` (a Python exception:
    ``detail`` names it) or ``error`` (the harness could not run it: never the program's fault).
    """

    end: RunEnd
    stdout: str = ""
    code: int = 0
    detail: str = ""
    duration_s: float = 0.0
    stderr_tail: str = ""
    # CPU, peak memory and I/O of the run from kernel counters (harness.sandbox.api's keys)
    resources: Mapping[str, float | int] = field(default_factory=dict)


def starved(run: TestRun, time_limit_s: float) -> bool:
    """A time-out in which the program got less than half its time on a CPU: the machine was
    busy (or the program slept). Such a test is run once more before it counts as a time
    limit, so a loaded machine does not fail a fast program."""
    cpu = float(run.resources.get("cpu_user_s", 0)) + float(run.resources.get("cpu_system_s", 0))
    return run.end == "timeout" and cpu < time_limit_s / 2


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_failure(run: TestRun, time_limit_s: float) -> tuple[Verdict, str] | None:
    """The verdict of a run that did not end normally; None when its output is to be judged."""
    if run.end == "timeout":
        return "time_limit", f"time limit exceeded ({time_limit_s:g} s)"
    if run.end == "memory":
        return "memory_limit", "memory limit exceeded" + (f": {run.detail}" if run.detail else "")
    if run.end == "output_limit":
        return "output_limit", f"output limit exceeded ({OUTPUT_LIMIT_BYTES} bytes)"
    if run.end == "signal":
        if run.code == signal.SIGXFSZ:
            return "output_limit", "output limit exceeded (file size limit)"
        return "runtime_error", f"runtime error: killed by {signal_name(run.code)}"
    if run.end == "raised":
        return "runtime_error", f"runtime error: {run.detail}"[:MESSAGE_CHARS]
    if run.end == "exited" and run.code != 0:
        return "runtime_error", f"runtime error: exit status {run.code}"
    return None


def add_resources(total: dict[str, float | int], more: Mapping[str, float | int]) -> None:
    """Sum CPU and I/O over a sample's runs, keep the largest peak memory."""
    for key, value in more.items():
        if key not in total:
            continue
        if key == "max_rss_kib":
            total[key] = max(int(total[key]), int(value))
        else:
            total[key] = (
                round(total[key] + value, 6) if isinstance(value, float) else total[key] + value
            )
