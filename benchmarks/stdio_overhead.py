"""The cost of judging a stdio program per test: the harness against a process per test by hand.

    python benchmarks/stdio_overhead.py [--problems 5] [--tests 100] [--repeats 3] [--cpp]

Python: ``--problems`` problems of ``--tests`` tests each (small inputs: the per-test cost is
nearly all overhead, which is what is measured). In the same run, interleaved (the side that
goes first alternates per repeat), it times per test:

* **harness**: :func:`harness.stdio.execute.execute` on the problem as a trainer scores it
  (every test run): a fork of the warm fork server per test, input on fd 0, stdout read back
  by the server, the output judged in this process; the server starts once (not timed);
* **bare**: ``python prog.py < input`` as a fresh subprocess per test (what reward code such
  as rLLM's and Code-R1's does), its stdout compared with the same checker;
* **work**: the program's own work, the same source run with ``exec`` in this process with
  redirected stdio, per test (the floor no runner can go under).

Overhead per test is cost minus work; the goal is at least 5x less overhead for the harness.

``--cpp`` also times a C++ program, compiled once: the harness (the compile cache, then a start
per test in the warm sandbox: one message to its spawner, which starts the binary through the
native starter with its limits, uid, private folder and filters, waits, kills and reaps
everything, and answers; tests queued a few ahead; stdout read after the run) against
compiling with the same g++ command by hand and running the binary per test as a plain
subprocess. Timings on a shared machine are noisy: the medians of several repeats are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.stdio.checkers import compare  # noqa: E402
from harness.stdio.problem import Checker, StdioTest, stdio_problem, training_view  # noqa: E402

PYTHON_PROGRAMS = [
    "n = int(input())\nprint(sum(map(int, input().split())) % 1000003)\n",
    "import sys\ndata = sys.stdin.read().split()\nprint(*sorted(map(int, data[1:]))[:3])\n",
    "n = int(input())\nxs = list(map(int, input().split()))\nprint(max(xs) - min(xs))\n",
]
CPP_PROGRAM = """#include <cstdio>
int main() { int n; long long s = 0, x; scanf("%d", &n);
  for (int i = 0; i < n; i++) { scanf("%lld", &x); s += x; }
  printf("%lld\\n", s % 1000003); }
"""


def make_tests(count: int, seed: int) -> list[StdioTest]:
    rng = random.Random(seed)
    tests = []
    for _ in range(count):
        xs = [rng.randint(-1000, 1000) for _ in range(rng.randint(1, 30))]
        tests.append(StdioTest(f"{len(xs)}\n{' '.join(map(str, xs))}\n", ""))
    return tests


def with_expected(source: str, tests: list[StdioTest]) -> list[StdioTest]:
    """The tests with the program's own outputs as expected (every test passes)."""
    return [StdioTest(t.input, in_process(source, t.input), t.hidden) for t in tests]


def in_process(source: str, text: str) -> str:
    out = io.StringIO()
    stdin = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, "prog.py", "exec"), {"__name__": "__main__"})
    finally:
        sys.stdin = stdin
    return out.getvalue()


def time_harness(problem, source: str) -> float:  # type: ignore[no-untyped-def]
    from harness.stdio.execute import execute

    started = time.perf_counter()
    execution = execute(problem, source)
    elapsed = time.perf_counter() - started
    bad = [c.case_id for c in execution.cases.values() if (c.values or [""])[0] != "passed"]
    assert not bad and execution.infra_error is None, (bad[:3], execution.infra_error)
    return elapsed


def time_bare(argv: list[str], tests: list[StdioTest]) -> float:
    started = time.perf_counter()
    for test in tests:
        done = subprocess.run(argv, input=test.input, capture_output=True, text=True, check=False)
        assert compare(done.stdout, test.output, Checker()).passed, done.stderr[-300:]
    return time.perf_counter() - started


def time_work(source: str, tests: list[StdioTest]) -> float:
    started = time.perf_counter()
    for test in tests:
        compare(in_process(source, test.input), test.output, Checker())
    return time.perf_counter() - started


def python_rows(problems: int, tests: int, repeats: int, folder: Path) -> None:
    cases = []
    for index in range(problems):
        source = PYTHON_PROGRAMS[index % len(PYTHON_PROGRAMS)]
        suite_tests = with_expected(source, make_tests(tests, index))
        problem = training_view(stdio_problem("bench", f"bench/{index}", "x", suite_tests))
        path = folder / f"prog{index}.py"
        path.write_text(source)
        cases.append((problem, source, suite_tests, [sys.executable, str(path)]))
    time_harness(cases[0][0], cases[0][1])  # the fork server starts (not a per-test cost)
    harness, bare, work = [], [], []
    for repeat in range(repeats):
        for problem, source, suite_tests, argv in cases:
            order = (0, 1) if repeat % 2 == 0 else (1, 0)
            for side in order:
                if side == 0:
                    harness.append(time_harness(problem, source) / len(suite_tests))
                else:
                    bare.append(time_bare(argv, suite_tests) / len(suite_tests))
            work.append(time_work(source, suite_tests) / len(suite_tests))
    report("python", harness, bare, work, problems * tests)


def cpp_rows(tests: int, repeats: int, folder: Path) -> None:
    gxx = shutil.which("g++")
    if gxx is None:
        print("c++: g++ is not installed, skipped")
        return
    from harness.languages import get_language
    from harness.stdio.native_runner import StdioBuild

    suite_tests = make_tests(tests, 99)
    bare_bin = folder / "main"
    (folder / "main.cpp").write_text(CPP_PROGRAM)
    command = list(StdioBuild(get_language("cpp"), CPP_PROGRAM, 512).build().compile or ())
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, check=True)
    compile_s = time.perf_counter() - started
    outputs = [
        subprocess.run([str(bare_bin)], input=t.input, capture_output=True, text=True).stdout
        for t in suite_tests
    ]
    suite_tests = [StdioTest(t.input, o) for t, o in zip(suite_tests, outputs, strict=True)]
    problem = training_view(stdio_problem("bench", "bench/cpp", "x", suite_tests, language="cpp"))
    first = time_harness(problem, CPP_PROGRAM)  # compiles (or finds it cached), sandbox starts
    harness, bare = [], []
    for repeat in range(repeats):
        order = (0, 1) if repeat % 2 == 0 else (1, 0)
        for side in order:
            if side == 0:
                harness.append(time_harness(problem, CPP_PROGRAM) / tests)
            else:
                bare.append(time_bare([str(bare_bin)], suite_tests) / tests)
    print(
        f"c++: g++ by hand {compile_s:.2f} s; harness's first sample (compile + runs) {first:.2f} s"
        f"; starts: {_starts()}"
    )
    report("c++", harness, bare, [0.0] * len(harness), tests)


def _starts() -> str:
    """How the warm sandbox starts a program here (the fork is the slow way)."""
    try:
        from harness.languages import starter
    except ImportError:  # an older checkout
        return "a fork of the spawner"
    return "the native starter" if starter.path() else "a fork of the spawner (no C compiler)"


def report(name: str, harness: list[float], bare: list[float], work: list[float], n: int) -> None:
    h, b, w = (statistics.median(x) * 1000 for x in (harness, bare, work))
    over_h, over_b = max(h - w, 1e-6), max(b - w, 1e-6)
    print(
        f"{name}: {n} tests per repeat; median ms per test: harness {h:.2f}, "
        f"bare process per test {b:.2f}, the program's own work {w:.3f}"
    )
    print(
        f"{name}: cost per test bare/harness = {b / h:.1f}x; "
        f"overhead per test bare/harness = {over_b / over_h:.1f}x"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=5)
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpp", action="store_true", help="also time one C++ program")
    args = parser.parse_args(argv)
    print(f"cpus: {os.cpu_count()}; load average: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="stdio-bench-") as folder:
        python_rows(args.problems, args.tests, args.repeats, Path(folder))
        if args.cpp:
            cpp_rows(args.tests, args.repeats, Path(folder))


if __name__ == "__main__":
    main()
