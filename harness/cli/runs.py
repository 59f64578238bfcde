"""``codeeval report``, ``codeeval compare`` and ``codeeval history``: finished runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.gate import format_verdict
from harness.history import History
from harness.report import RunFileError, load_run, write_compare, write_report


def add_runs_parsers(sub: Any) -> None:
    """The report, compare and history subcommands."""
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


def run_runs(args: argparse.Namespace) -> int:
    history = History(args.history) if args.history else History()
    run = {"report": _report, "compare": _compare, "history": _history}[args.command]
    try:
        return run(args, history)
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
