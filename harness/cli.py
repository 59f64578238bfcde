"""The ``codeeval`` command: reports, A/B comparisons and the run history.

```
codeeval report OUT_DIR [-o PAGE]        # OUT_DIR/report.html by default
codeeval report RUN_DIR [-o PAGE]        # a trainer's output folder (its metrics.jsonl)
codeeval compare RUN_A RUN_B [-o PAGE]   # each an out dir, a summary.json or a history run id
codeeval history [--model M] [--suite S] [--language L] [--limit N] [--json]
codeeval mine PATH -o SUITE.jsonl         # a tiered suite from a repository (harness.mining)
codeeval deps fetch SUITE [--find-links DIR --no-index]   # third-party packages (harness.deps)
codeeval difficulty --suite mbpp --split train --model M -n 8   # pass rates (harness.difficulty)
```
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.gate import format_verdict
from harness.history import History
from harness.report import RunFileError, load_run, write_compare, write_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codeeval", description="Reports and run history of codeeval-rl evaluations."
    )
    parser.add_argument(
        "--history",
        type=Path,
        default=None,
        metavar="DB",
        help="the history database (default: $CODEEVAL_HISTORY, else the cache folder)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="write the HTML report of a finished run")
    rep.add_argument(
        "out_dir",
        help="the run's out dir (with summary.json and results.jsonl), a history run id, or a "
        "trainer's output folder (with metrics.jsonl): then a training report",
    )
    rep.add_argument("-o", "--output", type=Path, help="the page to write (OUT_DIR/report.html)")
    cmp_ = sub.add_parser("compare", help="compare run B with run A, problem by problem")
    cmp_.add_argument("run_a", help="run A (the baseline): an out dir, a summary.json or a run id")
    cmp_.add_argument("run_b", help="run B: an out dir, a summary.json or a history run id")
    cmp_.add_argument("-o", "--output", type=Path, default=Path("compare.html"), help="the page")
    his = sub.add_parser("history", help="list recorded runs, newest first")
    his.add_argument("--model", help="only runs of this model")
    his.add_argument("--suite", help="only runs of this suite")
    his.add_argument(
        "--language", help="only runs with a suite in this language (python, js, cpp, java, rs)"
    )
    his.add_argument("--limit", type=int, default=30, help="at most this many runs (default 30)")
    his.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    from harness.mining.command import add_mine_parser

    add_mine_parser(sub)  # codeeval mine PATH -o SUITE.jsonl
    from harness.coder.cli import add_coder_parser

    add_coder_parser(sub)  # codeeval coder complete|pairs|evaluate|metrics|export|report
    from harness.deps.command import add_deps_parser

    add_deps_parser(sub)  # codeeval deps fetch|show SUITE
    from harness.difficulty import add_difficulty_parser

    add_difficulty_parser(sub)  # codeeval difficulty --suite S --split P --model M -n N
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "mine":
        from harness.mining.command import run_mine

        return run_mine(args)
    if args.command == "deps":
        from harness.deps.command import run_deps

        return run_deps(args)
    if args.command == "difficulty":
        from harness.difficulty import run_difficulty

        return run_difficulty(args)
    if args.command == "coder":
        from harness.coder.cli import run_coder

        return run_coder(args)
    history = History(args.history) if args.history else History()
    try:
        if args.command == "report":
            return _report(args, history)
        if args.command == "compare":
            return _compare(args, history)
        return _history(args, history)
    except RunFileError as exc:
        print(f"codeeval {args.command}: error: {exc}", file=sys.stderr)
        return 2


def _report(args: argparse.Namespace, history: History) -> int:
    from harness.report.training import is_training_run, load_training_run, write_training_report

    if is_training_run(args.out_dir):
        training = load_training_run(args.out_dir)
        page = write_training_report(training, args.output or training.folder / "report.html")
        print(page)
        return 0
    run = load_run(args.out_dir, history)
    target = args.output or Path(args.out_dir) / "report.html"
    write_report(run, target, history)
    print(target)
    return 0


def _compare(args: argparse.Namespace, history: History) -> int:
    a = load_run(args.run_a, history)
    b = load_run(args.run_b, history)
    a.label, b.label = args.run_a, args.run_b
    write_compare(a, b, args.output)
    from harness.report import compare_verdicts

    verdicts = compare_verdicts(a, b)
    if not verdicts:
        print("the two runs have no suite in common", file=sys.stderr)
    for verdict in verdicts:
        # compare is no gate: the verdict's pass/fail wording and reasons do not apply.
        for line in format_verdict(verdict):
            if not line.lstrip().startswith("reason:"):
                print(line.replace(" -- OK", "").replace(" -- FAILED", ""))
    print(args.output)
    return 0


def _history(args: argparse.Namespace, history: History) -> int:
    if not history.path.exists():
        print(f"no runs recorded yet ({history.path} does not exist)")
        return 0
    runs = history.runs(
        model=args.model, suite=args.suite, limit=args.limit, language=args.language
    )
    if args.json:
        for run in runs:
            print(json.dumps(run.__dict__))
        return 0
    table = []
    for run in runs:
        for suite in run.suites or {"": {}}:
            if args.language and run.suites.get(suite, {}).get("language") != args.language:
                continue
            value = run.pass_at(suite, 1) if suite else None
            split = f"[{run.split}]" if run.split else ""
            table.append(
                [
                    str(run.id),
                    run.created_at,
                    run.model or "-",
                    suite + split,
                    str(run.suites.get(suite, {}).get("language") or "-"),
                    f"{value:.3f}" if value is not None else "-",
                    run.code_version,
                ]
            )
    header = ["id", "recorded", "model", "suite", "language", "pass@1", "code"]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        cells = [
            c.rjust(w) if i in (0, 5) else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
    if not runs:
        print("(no matching runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
