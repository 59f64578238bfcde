"""Plus-case generation over a whole suite: seconds per problem and the size of the plus suite.

    CODEEVAL_CACHE=/tmp/plus-cold python benchmarks/plus_generation.py humaneval-plus
    CODEEVAL_CACHE=/tmp/plus-cold python benchmarks/plus_generation.py mbpp-plus --split test

Point ``CODEEVAL_CACHE`` at an empty folder to time generation itself (a warm cache answers in
about no time). Writes one JSON row per problem (the generation stats) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from harness.plus import expand_plus
from harness.sandbox import SandboxSettings
from harness.sandbox.shared import shared_sandbox
from suites import load_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", help="a suite with plus cases: humaneval-plus, mbpp-plus")
    parser.add_argument("--split", default=None)
    parser.add_argument("--out", type=Path, default=None, help="per-problem stats (JSON)")
    args = parser.parse_args()
    problems = load_suite(args.suite, args.split)
    started = time.perf_counter()
    expanded = expand_plus(problems, shared_sandbox(SandboxSettings()))
    wall = time.perf_counter() - started
    rows = [{"task_id": p.task_id, **p.metadata.get("plus", {})} for p in expanded]
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    seconds = sorted(float(r.get("seconds", 0.0)) for r in rows)
    cases = [int(r.get("cases", 0)) for r in rows]
    n = len(rows)
    print(
        f"{args.suite}: {n} problems in {wall:.1f} s; per problem mean {sum(seconds) / n:.2f} s, "
        f"median {seconds[n // 2]:.2f} s, p90 {seconds[int(n * 0.9)]:.2f} s, max "
        f"{seconds[-1]:.1f} s; {sum(cases)} plus cases ({sum(c == 32 for c in cases)} problems "
        f"with 32, {sum(c == 0 for c in cases)} with none)"
    )


if __name__ == "__main__":
    main()
