"""MultiPL-E-style execution: ``prompt + completion + tests`` compiled and run; exit 0 passes.

This is how MultiPL-E itself judges a completion (its ``eval_*`` scripts), kept as the
reference the ``multiple-*`` suites are measured against (tests/test_multiple_e_agreement.py,
benchmarks/multiple_speed.py): one program per sample, compiled and run once in a fresh
bubblewrap sandbox (the project's allow-list view, no network, the build folder the only
writable place, an unprivileged uid), with MultiPL-E's commands: ``node``, ``g++ -std=c++17``,
``javac``/``java -ea`` with javatuples, ``rustc``. The completion is cut at the first of
MultiPL-E's stop tokens first, as MultiPL-E cuts it.

Here the test program decides its own verdict inside the candidate's process: this is the
reference to agree with, never the way the harness scores.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from harness.languages import get_language
from harness.languages.multiple_e import JAVATUPLES_JAR
from harness.languages.view import bwrap_args
from harness.records import Problem

TIMEOUT_S = 30.0  # compile and run, per program
NOBODY = 65534


@dataclass(frozen=True)
class Outcome:
    passed: bool
    exit_code: int | None  # None: timed out
    output: str
    duration_s: float


def cut(completion: str, stop_tokens: list[str]) -> str:
    """``completion`` up to the first of ``stop_tokens`` (MultiPL-E's cut)."""
    ends = [i for i in (completion.find(s) for s in stop_tokens) if i >= 0]
    return completion[: min(ends)] if ends else completion


def program(problem: Problem, completion: str) -> str:
    """MultiPL-E's program for ``completion``: prompt, the cut completion, the tests."""
    stops = list(problem.metadata["stop_tokens"])
    return problem.prompt + cut(completion, stops) + problem.metadata["multiple_e_tests"]


def _commands(language: str) -> tuple[str, str, tuple[str, ...]]:
    """The file name, the shell command that compiles and runs it, the toolchains to show."""
    base = get_language(language.removeprefix("multiple-")).build()
    if language == "multiple-js":
        return "main.js", f"{shlex.quote(base.run[0])} main.js", base.keep_paths
    if language == "multiple-cpp":
        gxx = shlex.quote(base.compile[0]) if base.compile else "g++"
        return "main.cpp", f"{gxx} -std=c++17 -o main main.cpp && ./main", base.keep_paths
    if language == "multiple-java":
        javac = shlex.quote(base.compile[0]) if base.compile else "javac"
        java = shlex.quote(base.run[0])
        cp = f"-cp .:{JAVATUPLES_JAR}"
        command = (
            f"{javac} -J-Xmx512m -nowarn -encoding UTF-8 {cp} -d . Problem.java && "
            f"{java} -ea -Xmx256m -Xss16m {cp} Problem"
        )
        return "Problem.java", command, base.keep_paths
    if language == "multiple-rs":
        rustc = shlex.quote(base.compile[0]) if base.compile else "rustc"
        return (
            "main.rs",
            f"{rustc} --edition 2021 -A warnings -o main main.rs && ./main",
            base.keep_paths,
        )
    raise ValueError(f"not a MultiPL-E language: {language}")


def run(problem: Problem, completion: str, timeout_s: float = TIMEOUT_S) -> Outcome:
    """Compile and run MultiPL-E's program for ``completion`` in a fresh sandbox."""
    name, command, keep = _commands(problem.metadata["language"])
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="multiple-e-") as folder:
        os.chmod(folder, 0o777)  # the unprivileged uid compiles here
        with open(os.path.join(folder, name), "w", encoding="utf-8") as fh:
            fh.write(program(problem, completion))
        argv = bwrap_args((), keep) + ["--bind", folder, "/w", "--chdir", "/w"]
        argv += ["--setenv", "HOME", "/w", "--setenv", "TMPDIR", "/tmp"]
        argv += ["--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"]
        if os.getuid() == 0:  # bwrap keeps root as root: drop to nobody for the program
            argv += ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        argv += ["sh", "-c", command]
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            out, _ = proc.communicate(timeout=timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            out, _ = proc.communicate()
            code = None
    text = out.decode("utf-8", "replace")[-2000:]
    return Outcome(code == 0, code, text, time.monotonic() - started)


def run_all(
    pairs: list[tuple[Problem, str]], workers: int = 2, timeout_s: float = TIMEOUT_S
) -> list[Outcome]:
    """:func:`run` for each (problem, completion), ``workers`` at a time, in order."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda pair: run(pair[0], pair[1], timeout_s), pairs))
