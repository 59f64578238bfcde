"""``codeeval mine PATH -o SUITE.jsonl``: the command line of :func:`harness.mining.mine`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.mining.model import MiningError
from harness.mining.pipeline import MineOptions, mine, print_report, report_path


def add_mine_parser(sub: Any) -> None:
    """Add the ``mine`` subcommand to the ``codeeval`` parser's subparsers."""
    defaults = MineOptions()
    p = sub.add_parser(
        "mine",
        help="mine a Python repository into a tiered suite (functions its own tests check)",
        description="Run the repository's tests once under coverage in the sandbox, turn each "
        "function its tests check into a problem (prompt with repository context, the tests as "
        "checks), keep those whose original body passes and a NotImplementedError body fails, "
        "and write a JSONL suite for `pytest --llm-eval jsonl:SUITE.jsonl`.",
    )
    p.add_argument("path", type=Path, help="the repository folder (its packages and tests)")
    p.add_argument("-o", "--output", type=Path, required=True, help="the suite to write (JSONL)")
    p.add_argument(
        "--max-checks",
        type=int,
        default=defaults.max_checks,
        help="tests kept per problem (default %(default)s)",
    )
    p.add_argument(
        "--context-tokens",
        type=int,
        default=defaults.context_tokens,
        help="prompt budget, about 4 characters a token (default %(default)s)",
    )
    p.add_argument(
        "--coverage-budget",
        type=float,
        default=defaults.coverage_budget_s,
        metavar="S",
        help="time limit of the coverage run of the whole test suite (default %(default)s s)",
    )
    p.add_argument(
        "--check-budget",
        type=float,
        default=defaults.check_budget_s,
        metavar="S",
        help="time limit of one problem's test run while validating (default %(default)s s)",
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=defaults.memory_mb,
        help="sandbox memory limit (default %(default)s)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="validate at most N functions (a quick look at a big repository)",
    )
    p.add_argument(
        "--select", metavar="TEXT", help="only functions whose id (path::qualname) contains TEXT"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def run_mine(args: argparse.Namespace) -> int:
    options = MineOptions(
        max_checks=args.max_checks,
        context_tokens=args.context_tokens,
        coverage_budget_s=args.coverage_budget,
        check_budget_s=args.check_budget,
        memory_mb=args.memory_mb,
        limit=args.limit,
        select=args.select,
    )
    progress = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    try:
        report = mine(args.path, args.output, options, progress=progress)
    except MiningError as exc:
        print(f"codeeval mine: error: {exc}", file=sys.stderr)
        return 2
    print_report(report)
    print(
        f"suite: {args.output} ({len(report.problems)} problems); report: {report_path(args.output)}"
    )
    return 0 if report.problems else 1
