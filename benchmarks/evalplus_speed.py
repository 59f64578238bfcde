"""The project against ``evalplus`` 0.3.1's evaluator on the same programs, in the same run,
2 workers each: every plus input judged, and the verdict alone.

    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.evalplus_speed
    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.evalplus_speed --suite mbpp-plus --tasks 0:60

The programs are benchmarks/evalplus_programs.py's. Timed:

- **project**: ``harness.evaluate(workers=2)``: a sandboxed child per sample (or per part of
  its inputs) runs the inputs, values streamed back, EvalPlus's oracle judges each in the
  trusted worker; ``every_case=True`` for every input judged, the default (stop at a sample's
  first failed input) for the verdict alone. Expected outputs and reference calibration come
  from the cache (a first, untimed run warms it), as evalplus's ground truth comes from its
  own cache.
- **evalplus**: its ``check_correctness`` in a pool of 2 processes, as ``evalplus.evaluate``
  runs it: with ``--test-details`` (``fast_check`` off: every input judged), and without
  (``fast_check``: the first failed input ends a group); the pool only (its ground truth is
  cached and not timed).
- **fork floor**: the same pool shape doing no work, two forked processes per sample (what
  evalplus forks for base and plus): the least any fork-per-sample evaluator pays.

Prints the seconds of each and the ratios evalplus / project and floor / project.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

from benchmarks.evalplus_programs import make_programs, run_evalplus, run_project
from suites.evalplus import data_file
from suites.registry import default_data_dir, load_suite


def _fork_twice(_: int) -> None:
    for _group in ("base", "plus"):
        process = multiprocessing.get_context("fork").Process(target=_nothing)
        process.start()
        process.join()


def _nothing() -> None:
    return None


def fork_floor(samples: int, workers: int = 2) -> float:
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_fork_twice, range(samples)))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--suite", default="humaneval-plus", choices=["humaneval-plus", "mbpp-plus"]
    )
    parser.add_argument("--tasks", default="0:40", help="a slice of the problems (default 0:40)")
    parser.add_argument("--mutants", type=int, default=2)
    args = parser.parse_args()
    folder = default_data_dir()
    start, _, stop = args.tasks.partition(":")
    problems = load_suite(args.suite, data_dir=folder)[
        int(start) if start else None : int(stop) if stop else None
    ]
    problems = [p for p in problems if not p.defects]
    programs = make_programs(problems, args.mutants)
    path = data_file(args.suite, folder)
    if path is None:
        raise SystemExit(f"no EvalPlus mirror for {args.suite} under {folder}")
    inputs = sum(len(p.cases) for p in problems)
    print(
        f"{args.suite} {args.tasks}: {len(problems)} problems, {inputs} inputs, {len(programs)} programs"
    )
    # warm: expected outputs, calibration, compiled modules; the problems this finds to be
    # data defects (HumanEval/15's 6.9 M character outputs) are left out of both timings
    warm = run_project(problems, programs)
    defects = {task for (task, _), row in warm.items() if row["error_kind"] == "data"}
    if defects:
        print(f"left out (data defects): {', '.join(sorted(defects))}")
        problems = [p for p in problems if p.task_id not in defects]
        programs = [p for p in programs if p.task_id not in defects]
    run_evalplus(args.suite, path, problems[:1], programs[:1])  # warm: evalplus imports
    floor_s = fork_floor(len(programs))
    print(f"fork floor {floor_s:8.2f} s  (2 forks per sample, no work)")
    for every_case, mode in ((True, "every input judged"), (False, "verdict only")):
        t0 = time.perf_counter()
        rows = run_project(problems, programs, every_case=every_case)
        project_s = time.perf_counter() - t0
        _, evalplus_s = run_evalplus(
            args.suite, path, problems, programs, fast_check=not every_case
        )
        judged = sum(
            1
            for row in rows.values()
            for case in row["cases"]
            if not case["message"].startswith("not run")
        )
        print(f"{mode}:")
        print(f"  project  {project_s:8.2f} s  ({judged} inputs judged)")
        print(f"  evalplus {evalplus_s:8.2f} s  (fast_check {'off' if every_case else 'on'})")
        print(
            f"  evalplus / project = {evalplus_s / project_s:.2f}x; "
            f"floor / project = {floor_s / project_s:.2f}x"
        )


if __name__ == "__main__":
    main()
