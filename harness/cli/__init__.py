"""The ``codeeval`` command: one row per family of subcommands (:data:`COMMANDS`).

```
codeeval report OUT_DIR [-o PAGE]        # OUT_DIR/report.html by default
codeeval report RUN_DIR [-o PAGE]        # a trainer's output folder (its metrics.jsonl)
codeeval compare RUN_A RUN_B [-o PAGE]   # each an out dir, a summary.json or a history run id
codeeval history [--model M] [--suite S] [--language L] [--limit N] [--json]
codeeval mine PATH -o SUITE.jsonl         # a tiered suite from a repository (harness.mining)
codeeval deps fetch SUITE [--find-links DIR --no-index]   # third-party packages (harness.deps)
codeeval difficulty --suite mbpp --split train --model M -n 8   # pass rates (harness.difficulty)
codeeval serve [--port 8765] [--reward weighted] [--workers 2]  # reward server (harness.service)
```
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.cli.deps import add_deps_parser, run_deps
from harness.cli.runs import add_runs_parsers, run_runs
from harness.coder.cli import add_coder_parser, run_coder
from harness.difficulty import add_difficulty_parser, run_difficulty
from harness.mining.command import add_mine_parser, run_mine
from harness.service.server import add_serve_parser, run_serve

# Each family of subcommands: the function that adds its parsers, the one that runs them, and
# the subcommand names it adds. A new family is one more row.
COMMANDS: tuple[
    tuple[Callable[[Any], None], Callable[[argparse.Namespace], int], tuple[str, ...]], ...
] = (
    (add_runs_parsers, run_runs, ("report", "compare", "history")),
    (add_mine_parser, run_mine, ("mine",)),  # codeeval mine PATH -o SUITE.jsonl
    (add_coder_parser, run_coder, ("coder",)),  # complete|pairs|evaluate|metrics|export|report
    (add_deps_parser, run_deps, ("deps",)),  # codeeval deps fetch|show SUITE
    (add_difficulty_parser, run_difficulty, ("difficulty",)),  # --suite S --split P --model M
    (add_serve_parser, run_serve, ("serve",)),  # codeeval serve [--host H --port P --workers N]
)


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
    for add_parsers, _run, _names in COMMANDS:
        add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = next(run for _add, run, names in COMMANDS if args.command in names)
    return run(args)
