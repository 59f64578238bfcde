"""The one ``python -m trainers.<algorithm>`` entry point every trainer's ``__main__`` calls.

An algorithm package ``trainers.<algorithm>`` provides ``config.parse_args(argv)`` (the command
line -> its validated config) and ``trainer.run(config)`` (trains; returns the summary line).
A config error, found on the command line or once the data is loaded, is one line on stderr
and exit status 2; under a launcher only the main process prints.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from trainers.common.config import ConfigError


def run_main(package: str, argv: Sequence[str] | None = None) -> int:
    """Parse, train and summarise ``package`` (e.g. ``trainers.ppo``); the exit status."""
    parse_args = importlib.import_module(f"{package}.config").parse_args
    try:
        config = parse_args(argv)
    except ConfigError as exc:
        print(f"{package}: {exc.kind}: {exc}", file=sys.stderr)
        return 2
    # After the config: --help and config errors never pay for torch and the model code.
    from trainers.common import distributed

    run = importlib.import_module(f"{package}.trainer").run
    is_main = distributed.env_world().is_main  # one line per run, not one per process
    try:
        summary = run(config)
    except ConfigError as exc:  # found once the data and the processes are known
        if is_main:
            print(f"{package}: {exc.kind}: {exc}", file=sys.stderr)
        distributed.shutdown()
        return 2
    if is_main and summary:
        print(summary)
    distributed.shutdown()
    return 0
