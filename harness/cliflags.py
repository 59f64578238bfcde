"""Command-line flags that fill an options object, declared once as a table.

``codeeval mine`` and ``codeeval difficulty`` each turn a run of flags into one options
dataclass (``MineOptions``, ``GenerationSettings``). A :class:`Flag` names both the flag and
the field it fills, so :func:`add_flags` (the parser side) and :func:`flag_values` (the run
side) read the same table, and a new option is one row, not an ``add_argument`` call plus a
keyword argument that must be kept in step. Standard library only: any command may use it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Flag:
    """One flag (``--max-checks``) that fills the options field ``field`` (``max_checks``)."""

    name: str
    field: str
    type: Callable[[str], Any]
    help: str
    metavar: str | None = None
    default: Any = None  # used when add_flags gets no defaults object


def add_flags(parser: Any, flags: Sequence[Flag], defaults: object | None = None) -> None:
    """Add ``flags`` to ``parser``; each default is ``defaults``' field when an options object
    is given (so the help shows what the library itself would use), else the flag's own."""
    for flag in flags:
        default = getattr(defaults, flag.field) if defaults is not None else flag.default
        parser.add_argument(
            flag.name,
            dest=flag.field,
            type=flag.type,
            default=default,
            metavar=flag.metavar,
            help=flag.help,
        )


def flag_values(args: argparse.Namespace, flags: Sequence[Flag]) -> dict[str, Any]:
    """The parsed values of ``flags`` by field name: the keyword arguments of the options."""
    return {flag.field: getattr(args, flag.field) for flag in flags}
