"""The project against ``evalplus`` 0.3.1 on the same programs, in the same run, 2 workers
each, each tool as a user runs it: its default mode (the verdict alone), and every input judged.

    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.evalplus_speed
    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.evalplus_speed --suite mbpp-plus
    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.evalplus_speed --tasks 0:40 --rounds 3

The programs are benchmarks/evalplus_programs.py's (references, mutants, and wrappers that
are wrong on edge inputs, add float noise or return tuples as lists). Timed, each in a fresh
process, from the data and the samples on disk to the verdicts:

- **project**: the suite loaded, then ``harness.evaluate(workers=2)``: a sandboxed child per
  sample (or per part of its inputs) runs the inputs, values streamed back, EvalPlus's oracle
  judges each in the trusted worker. Default mode: a sample stops at its first failed part of
  inputs; every input: ``every_case=True``. Expected outputs and time limits come from the
  cache, as evalplus's ground truth comes from its own.
- **evalplus**: ``evalplus.evaluate.evaluate(dataset, samples, parallel=2)``, its own call (the
  data, its cached ground truth, its pool, its results file). Default mode: ``fast_check``
  (each group, base and plus, stops at its first failed input); every input:
  ``test_details=True``.
- **fork floor**: two forked processes per program doing nothing, 2 at a time (what evalplus
  forks for base and plus): the least any fork-per-program evaluator pays.
- **programs' own work** (``benchmarks/own_work.py``): each program's inputs run bare, 2 at a
  time, up to its first failure in the default mode, with evalplus's time limits: the least
  a fork-per-program evaluator pays before it judges anything, so evalplus / own work is
  the ratio of a tool whose judging cost nothing but which ran the programs that way (not a
  bound: a tool that schedules by cost can beat the own work; ``--least`` gives the bound).
- **least work** (``--least``, default mode): the bound for any evaluator, free to run a
  program's inputs in any order: a passing program's every input, a failing one's cheapest
  failed input, the CPU of all of it shared perfectly over the workers. evalplus / least work
  caps the default mode's ratio whatever a tool does.
- **the parts' cost** (``--parts-cost``, default mode): the programs that passed, judged again
  in parts and in one child each (``every_case=True``). Both run every input of such a program,
  so the difference is what stopping at the first failed part costs the programs that never
  fail: a fork, a round trip and a judging step more per part.

With ``--baseline DIR`` (another checkout of the project, such as ``git worktree add DIR
COMMIT``) that code's run is timed too, in the same rounds, as ``baseline``: the old code and the
new one back to back on the same programs.

A first, untimed round fills both tools' caches. With ``--rounds N`` each mode is timed N
times, each tool going first in every other round, and the medians are compared. Prints the
seconds, the ratios evalplus / project and each tool's over the programs' own work, and any
program either tool could not judge.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.evalplus_programs import make_programs, run_evalplus, run_project_fresh
from benchmarks.own_work import first_failure, least_work_s, own_work_s
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
    parser.add_argument("--tasks", default=":", help="a slice of the problems (default: all)")
    parser.add_argument("--mutants", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds (medians)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--modes", default="default,every", help="default (verdict only), every (every input)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout of the project (an earlier commit) to time beside this one",
    )
    parser.add_argument(
        "--parts-cost",
        action="store_true",
        help="in the default mode, also time the programs that pass twice more, in parts and in "
        "one child each (every_case=True): what stopping at the first failed part costs a "
        "program that has none",
    )
    parser.add_argument(
        "--least",
        action="store_true",
        help="in the default mode, also the least work any evaluator needs in any order of "
        "inputs (a run that judges every input first, untimed)",
    )
    args = parser.parse_args()
    folder = default_data_dir()
    path = data_file(args.suite, folder)
    if path is None:
        raise SystemExit(f"no EvalPlus mirror for {args.suite} under {folder}")
    start, _, stop = args.tasks.partition(":")
    problems = load_suite(args.suite, data_dir=folder)[
        int(start) if start else None : int(stop) if stop else None
    ]
    programs = make_programs(problems, args.mutants)
    inputs = sum(len(p.cases) for p in problems)
    print(
        f"{args.suite} {args.tasks}: {len(problems)} problems, {inputs} inputs, "
        f"{len(programs)} programs, {args.workers} workers each"
    )
    floor_s = fork_floor(len(programs), args.workers)
    print(f"fork floor {floor_s:8.2f} s  (2 forks per program, no work)")
    for mode in args.modes.split(","):
        every = mode == "every"
        runs: dict[str, Callable[[], tuple[Any, float]]] = {
            "project": functools.partial(
                run_project_fresh, args.suite, folder, problems, programs,
                workers=args.workers, every_case=every,
            ),
            "evalplus": functools.partial(
                run_evalplus, args.suite, path, problems, programs,
                workers=args.workers, fast_check=not every,
            ),
        }  # fmt: skip
        if args.baseline is not None:
            runs["baseline"] = functools.partial(
                run_project_fresh, args.suite, folder, problems, programs,
                workers=args.workers, every_case=every, checkout=args.baseline,
            )  # fmt: skip
        times: dict[str, list[float]] = {tool: [] for tool in runs}
        results: dict[str, Any] = {}
        for round_ in range(args.rounds + 1):  # round 0 warms both tools' caches
            # Each tool goes first in every other round: a run just after the other tool's
            # was measured slower (by up to a tenth here), whichever tool ran first.
            for tool in sorted(runs, reverse=bool(round_ % 2)):
                results[tool], seconds = runs[tool]()
                if round_:
                    times[tool].append(seconds)
        rows, verdicts = results["project"], results["evalplus"]
        unjudged = sorted({key[0] for key, row in rows.items() if row["error_kind"]})
        judged = sum(
            1
            for row in rows.values()
            for case in row["cases"]
            if not case["message"].startswith("not run")
        )
        project, evalplus = (statistics.median(times[t]) for t in ("project", "evalplus"))
        stops = [
            (p.task_id, p.source, None if every else first_failure(rows[p.task_id, p.sample_id]))
            for p in programs
        ]
        own_s = own_work_s(problems, stops, workers=args.workers)
        print(f"{'every input judged' if every else 'default mode (verdict only)'}:")
        print(f"  project  {project:8.2f} s  ({judged} inputs judged) {_spread(times['project'])}")
        print(f"  evalplus {evalplus:8.2f} s  {_spread(times['evalplus'])}")
        if "baseline" in times:
            baseline = statistics.median(times["baseline"])
            changed = sum(
                1
                for key, row in results["baseline"].items()
                if _verdict(row) != _verdict(rows[key])
            )
            print(
                f"  baseline {baseline:8.2f} s  ({args.baseline}) {_spread(times['baseline'])}: "
                f"evalplus / baseline = {evalplus / baseline:.2f}x, baseline / project = "
                f"{baseline / project:.2f}x, {changed} verdicts differ"
            )
        print(f"  programs' own work {own_s:8.2f} s  (bare, a fork each in order, no judging)")
        print(f"  evalplus / project = {evalplus / project:.2f}x")
        print(
            f"  project / own work = {project / own_s:.2f}x, evalplus / own work = "
            f"{evalplus / own_s:.2f}x (a tool judging for free, forking each program in order)"
        )
        if args.least and not every:
            least_s = _least_work(args, folder, problems, programs)
            print(
                f"  least work any evaluator needs {least_s:8.2f} s  (every input of a passing "
                "program, a failing one's cheapest failed input, cores shared perfectly)"
            )
            print(f"  evalplus / least work = {evalplus / least_s:.2f}x (the ceiling in any order)")
        if args.parts_cost and not every:
            parts_s, whole_s, passing = parts_cost_s(
                args.suite, folder, problems, programs, rows, args.workers, args.rounds
            )
            print(
                f"  the {len(passing)} passing programs alone: in parts {parts_s:8.2f} s, in one "
                f"child each {whole_s:8.2f} s; the parts cost {parts_s - whole_s:.2f} s "
                f"({(parts_s - whole_s) / parts_s:.0%} of their time in parts)"
            )
        if unjudged:
            print(f"  project could not judge: {', '.join(unjudged)}")
        missing = [key for key in rows if key not in verdicts]
        if missing:
            print(f"  evalplus gave no verdict for {len(missing)} programs")


def parts_cost_s(
    suite: str,
    folder: Path,
    problems: list[Any],
    programs: list[Any],
    rows: dict[tuple[str, str], dict[str, Any]],
    workers: int,
    rounds: int = 1,
) -> tuple[float, float, list[Any]]:
    """The median seconds of the programs that passed in ``rows`` judged in the default mode
    (in parts, each stopping at its first failed one) and with every input in one child, each
    in a fresh process, the two in turn going first; and those programs. Both run every input
    of a passing program, so the difference is what the parts themselves cost (a child, a
    round trip and a judging step more per part)."""
    passing = [p for p in programs if rows[p.task_id, p.sample_id]["status"] == "passed"]
    times: dict[bool, list[float]] = {False: [], True: []}
    for round_ in range(rounds):
        for every in (False, True) if round_ % 2 == 0 else (True, False):
            _, seconds = run_project_fresh(
                suite, folder, problems, passing, workers=workers, every_case=every
            )
            times[every].append(seconds)
    return statistics.median(times[False]), statistics.median(times[True]), passing


def _least_work(args: Any, folder: Any, problems: list[Any], programs: list[Any]) -> float:
    """:func:`least_work_s` of the programs, from the verdicts of a run judging every input."""
    rows, _ = run_project_fresh(
        args.suite, folder, problems, programs, workers=args.workers, every_case=True
    )
    judged = []
    for program in programs:
        row = rows[program.task_id, program.sample_id]
        cases = [] if row["error_kind"] else row["cases"]
        judged.append((program.task_id, program.source, {c["case_id"]: c["status"] for c in cases}))
    return least_work_s(problems, judged, workers=args.workers)


def _verdict(row: dict[str, Any]) -> tuple[Any, Any]:
    """A row's verdict on base + plus and on base alone."""
    return row["status"], row.get("base_passed")


def _spread(values: list[float]) -> str:
    return "" if len(values) < 2 else "(" + ", ".join(f"{v:.1f}" for v in values) + ")"


if __name__ == "__main__":
    main()
