"""The project's verdicts against ``evalplus`` 0.3.1's own ``evaluate()``, on HumanEval+ and MBPP+.

    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.evalplus_agreement
    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.evalplus_agreement --suite mbpp-plus --tasks 0:40

The programs are benchmarks/evalplus_programs.py's (references, mutants, edge-case, float-noise
and tuple-as-list wrappers), and with ``--samples`` a model's answers (SmolLM2's from a run
folder). Prints, per suite: programs compared, agreement on the base inputs
and on base + plus (target: at least 99.5%), programs HumanEval+ passes that the project fails
(must be none), each disagreement with the first case the project failed, and the problems the
project reports as data defects (left out of the comparison).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from benchmarks.evalplus_programs import (
    answers_from,
    compare,
    make_programs,
    run_evalplus,
    run_project,
)
from suites.evalplus import data_file
from suites.registry import default_data_dir, load_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=["humaneval-plus", "mbpp-plus"])
    parser.add_argument("--tasks", default=":", help="a slice of the problems, e.g. 0:40")
    parser.add_argument("--mutants", type=int, default=2, help="mutants per problem")
    parser.add_argument("--json", type=Path, help="write the disagreements here")
    parser.add_argument(
        "--samples",
        type=Path,
        action="append",
        default=[],
        help="add a model's answers: a samples file or a run folder (its results.jsonl); "
        "each suite takes the answers to its own task ids",
    )
    args = parser.parse_args()
    folder = default_data_dir()
    report = {}
    for suite in args.suite or ["humaneval-plus", "mbpp-plus"]:
        start, _, stop = args.tasks.partition(":")
        problems = load_suite(suite, data_dir=folder)[
            int(start) if start else None : int(stop) if stop else None
        ]
        programs = make_programs(problems, args.mutants)
        for samples in args.samples:
            programs += answers_from(samples, problems)
        path = data_file(suite, folder)
        if path is None:
            raise SystemExit(f"no EvalPlus mirror for {suite} under {folder}")
        theirs, _ = run_evalplus(suite, path, problems, programs, fast_check=True)
        ours = run_project(problems, programs)
        result = compare(ours, theirs)
        kinds = Counter(p.kind for p in programs)
        print(
            f"{suite}: {len(programs)} programs ({', '.join(f'{n} {k}' for k, n in kinds.items())}), "
            f"{result.compared} compared ({len(result.data_defects)} on data-defect problems left out)"
        )
        print(f"  base agreement: {result.base_agree}/{result.compared}")
        print(f"  base+plus agreement: {result.plus_agree}/{result.compared} = {result.rate:.4f}")
        print(f"  evalplus passes, project fails: {len(result.false_fails)}")
        known = len(result.disagreements) - len(result.unexplained)
        if known:
            rest = result.compared - known
            agree = result.plus_agree
            print(f"  without evalplus's known defects: {agree}/{rest} = {agree / rest:.4f}")
        for entry in result.disagreements:
            print("  disagreement:", json.dumps(entry)[:400])
        report[suite] = result.__dict__
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
