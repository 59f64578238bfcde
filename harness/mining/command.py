"""``codeeval mine PATH -o SUITE.jsonl``: the command line of :func:`harness.mining.mine`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cliflags import Flag, add_flags, flag_values
from harness.mining.model import MiningError
from harness.mining.pipeline import MineOptions, mine, print_report, report_path

# The flags that fill MineOptions (their defaults are MineOptions' own).
OPTIONS = (
    Flag("--max-checks", "max_checks", int, "tests kept per problem (default %(default)s)"),
    Flag(
        "--context-tokens",
        "context_tokens",
        int,
        "prompt budget, about 4 characters a token (default %(default)s)",
    ),
    Flag(
        "--coverage-budget",
        "coverage_budget_s",
        float,
        "time limit of the coverage run of the whole test suite (default %(default)s s)",
        metavar="S",
    ),
    Flag(
        "--check-budget",
        "check_budget_s",
        float,
        "time limit of one problem's test run while validating (default %(default)s s)",
        metavar="S",
    ),
    Flag("--memory-mb", "memory_mb", int, "sandbox memory limit (default %(default)s)"),
    Flag(
        "--limit", "limit", int, "validate at most N functions (a quick look at a big repository)"
    ),
    Flag(
        "--select", "select", str, "only functions whose id (path::qualname) contains TEXT", "TEXT"
    ),
)


def add_mine_parser(sub: Any) -> None:
    """Add the ``mine`` subcommand to the ``codeeval`` parser's subparsers."""
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
    add_flags(p, OPTIONS, MineOptions())
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def run_mine(args: argparse.Namespace) -> int:
    options = MineOptions(**flag_values(args, OPTIONS))
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
