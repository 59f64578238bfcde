"""``codeeval coder``: complete code with analyzer feedback, and evaluate configs over pairs.

```
codeeval coder complete [-i FILE] [--analyzers mypy,signature] [--max-iter 5] ...
codeeval coder pairs [-o DATASET] [--suites humaneval,mbpp-sanitized] [--limit N]
codeeval coder evaluate -c CONFIG.yaml
codeeval coder metrics -c CONFIG.yaml
codeeval coder export DATASET/level_N [-o conversations.jsonl]
codeeval coder report -c A.yaml -c B.yaml [-o coder-report.html]
```
"""

from __future__ import annotations

import argparse
import json
import sys
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

from harness.coder.settings import CoderSettings


def add_coder_parser(sub: Any) -> None:
    """The ``coder`` subcommand and its own subcommands, on the ``codeeval`` parser."""
    coder = sub.add_parser("coder", help="code completion with analyzer feedback (LLMcoder)")
    commands = coder.add_subparsers(dest="coder_command", required=True)
    complete = commands.add_parser("complete", help="complete the code of a file or of stdin")
    complete.add_argument("-i", "--input", type=Path, help="the unfinished code (default: stdin)")
    complete.add_argument("--json", action="store_true", help="print the whole search as JSON")
    _settings_options(complete)
    pairs = commands.add_parser("pairs", help="build the offline pairs from HumanEval and MBPP")
    pairs.add_argument("-o", "--output", type=Path, help="the DATASET folder (default: the cache)")
    pairs.add_argument("--suites", default="humaneval,mbpp-sanitized", help="comma-separated")
    pairs.add_argument("--limit", type=int, help="problems per suite (default: all)")
    pairs.add_argument("--data-dir", help="benchmark mirrors (default: $CODEEVAL_DATA_DIR)")
    for name, text in (
        ("evaluate", "complete every pair of a config's levels"),
        ("metrics", "compute the metrics of a config's runs"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("-c", "--config", type=Path, required=True, help="CONFIG.yaml")
    export = commands.add_parser("export", help="write a level's pairs as chat conversations")
    export.add_argument("level_dir", type=Path, help="DATASET/level_N")
    export.add_argument("-o", "--output", type=Path, help="default: LEVEL_DIR/conversations.jsonl")
    export.add_argument("--system-prompt", default="default", help="a bundled prompt or a file")
    report = commands.add_parser("report", help="the metrics of configs side by side (HTML)")
    report.add_argument("-c", "--config", type=Path, action="append", required=True)
    report.add_argument("-o", "--output", type=Path, default=Path("coder-report.html"))


def _settings_options(parser: argparse.ArgumentParser) -> None:
    """One option per :class:`CoderSettings` field (``--max-iter``, ``--no-backtracking`` ...)."""
    hints = typing.get_type_hints(CoderSettings)
    for f in fields(CoderSettings):
        flag = "--" + f.name.replace("_", "-")
        hint = hints[f.name]
        help_text = f.metadata.get("help", "")
        if hint is bool:
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif typing.get_origin(hint) is tuple:
            parser.add_argument(flag, default=None, help=help_text + " (comma-separated)")
        else:
            parser.add_argument(flag, type=hint, default=None, help=help_text)


def run_coder(args: argparse.Namespace) -> int:
    from harness.coder.eval_config import ConfigError

    try:
        return _COMMANDS[args.coder_command](args)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        print(f"codeeval coder {args.coder_command}: error: {exc}", file=sys.stderr)
        return 2


def _complete(args: argparse.Namespace) -> int:
    from harness.coder import Coder

    options: dict[str, Any] = {}
    for f in fields(CoderSettings):
        value = getattr(args, f.name, None)
        if value is not None:
            options[f.name] = (
                tuple(v for v in value.split(",") if v) if f.name == "analyzers" else value
            )
    code = args.input.read_text() if args.input else sys.stdin.read()
    coder = Coder(**options)
    run = coder.search(code)
    if args.json:
        print(json.dumps(run.to_json(), indent=1))
    else:
        sys.stdout.write(run.completion)
    return 0


def _pairs(args: argparse.Namespace) -> int:
    from harness.coder.pairs import build_pairs, default_dataset

    out = args.output or default_dataset()
    suites = [s for s in args.suites.split(",") if s]
    counts = build_pairs(out, suites, args.limit, args.data_dir)
    for level, count in sorted(counts.items()):
        print(f"{out / f'level_{level}'}: {count} pairs")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from harness.coder.eval_config import load_config
    from harness.coder.evaluation import run_evaluation

    config = load_config(args.config)
    for folder in run_evaluation(config, progress=lambda line: print(line, file=sys.stderr)):
        print(folder)
    return 0


def _metrics(args: argparse.Namespace) -> int:
    from harness.coder.eval_config import load_config
    from harness.coder.evaluation import run_metrics

    for path in run_metrics(load_config(args.config)):
        print(path)
    return 0


def _export(args: argparse.Namespace) -> int:
    from harness.coder.evaluation import export_level
    from harness.coder.prompts import load_prompt

    print(export_level(args.level_dir, load_prompt(args.system_prompt), args.output))
    return 0


def _report(args: argparse.Namespace) -> int:
    from harness.coder.eval_config import load_config
    from harness.coder.report import write_report

    configs = [load_config(path) for path in args.config]
    print(write_report(configs, args.output))
    return 0


_COMMANDS = {
    "complete": _complete,
    "pairs": _pairs,
    "evaluate": _evaluate,
    "metrics": _metrics,
    "export": _export,
    "report": _report,
}
