"""Per-problem preconditions, kept as data (``contracts.json``): what a docstring promises about
the inputs that the checks do not show ("a positive integer", "a non-empty list").

A generated input outside a problem's contract would make the reference's arbitrary answer an
expected value that a correct program need not match, so such inputs are dropped. Contracts are
written by people for the problems that need one and are trusted data: they are evaluated here,
over the generated (literal) arguments bound to the entry point's parameter names, with a few
builtins only. A contract that raises on an input rejects it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONTRACTS_FILE = Path(__file__).with_name("contracts.json")
_BUILTINS: dict[str, Any] = {
    name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
    for name in (
        "abs all any bool dict float int isinstance len list max min range round set sorted "
        "str sum tuple zip"
    ).split()
}

Contract = Callable[[tuple[Any, ...]], bool]


@functools.cache
def _table() -> dict[str, str]:
    data = json.loads(CONTRACTS_FILE.read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def contract_source(task_id: str) -> str | None:
    """The contract expression of ``task_id``, if it has one."""
    return _table().get(task_id)


def contract(task_id: str, names: tuple[str, ...], source: str | None = None) -> Contract:
    """A predicate over argument tuples: True where the input is one the problem is defined on."""
    text = source if source is not None else contract_source(task_id)
    if not text:
        return lambda args: True
    code = compile(text, f"<contract {task_id}>", "eval")

    def holds(args: tuple[Any, ...]) -> bool:
        # One namespace (globals): comprehensions in a contract see the parameters.
        scope = {"__builtins__": _BUILTINS, **dict(zip(names, args, strict=False))}
        try:
            return bool(eval(code, scope))
        except Exception:  # noqa: BLE001 - an input the contract cannot read is not valid
            return False

    return holds
