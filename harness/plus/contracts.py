"""Per-problem preconditions, kept as data (``contracts.json``): what a docstring promises about
the inputs that the checks do not show ("a positive integer", "a non-empty list").

A generated input outside a problem's contract would make the reference's arbitrary answer an
expected value that a correct program need not match, so such inputs are dropped. Contracts are
written by people for the problems that need one and are trusted data: they are evaluated here,
over the generated (literal) arguments bound to the entry point's parameter names, with a few
builtins only. A contract that raises on an input rejects it.
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.program_ast import parse_program

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


# -- EvalPlus's contracts: its own input preconditions, checked in the sandbox -----------------
METADATA_KEY = (
    "contract"  # a problem's EvalPlus-style contract (body statements), when its suite has one
)
DATA_DIR_ENV = "CODEEVAL_DATA_DIR"
EVALPLUS_OVERRIDE_ENV = "HUMANEVAL_OVERRIDE_PATH"  # evalplus's own variable for its data file
EVALPLUS_FILE = ("evalplus", "HumanEvalPlus-v0.1.10.jsonl.gz")
CHECKED = "__plus_checked__"  # the guarded program's function: the contract, then the entry point
_GUARD = """

def __plus_contract__({params}):
{body}
    return True


def __plus_checked__(*args):
    import copy as _copy

    __plus_contract__(*_copy.deepcopy(args))
    return {entry}(*args)
"""


def evalplus_contract(task_id: str, metadata: dict[str, Any]) -> str:
    """EvalPlus's contract for a problem: its suite's (``metadata["contract"]``), else HumanEval+
    v0.1.10's for a ``HumanEval/N`` task (the data file in ``$HUMANEVAL_OVERRIDE_PATH`` or
    ``$CODEEVAL_DATA_DIR/evalplus/``, else ``shared/data`` beside the repository); "" if none."""
    given = metadata.get(METADATA_KEY)
    if isinstance(given, str):
        return given
    return _evalplus_record(task_id).get("contract") or ""


def evalplus_reference(task_id: str, metadata: dict[str, Any]) -> str:
    """HumanEval+'s own reference program (``prompt + canonical_solution``) for a HumanEval task
    whose suite is not EvalPlus's own (whose reference is then a second opinion); "" if none.

    EvalPlus fixed some of HumanEval's references and put more of its contract inside them
    (HumanEval/67's ``assert n - c1 - c2 >= 0``); where two references answer an input
    differently, the problem does not decide it, and it is no fair plus case.
    """
    if isinstance(metadata.get(METADATA_KEY), str):
        return ""
    record = _evalplus_record(task_id)
    return record["prompt"] + record["canonical_solution"] if record else ""


def _evalplus_record(task_id: str) -> dict[str, str]:
    if not task_id.startswith("HumanEval/"):
        return {}
    path = _evalplus_file()
    return _evalplus_table(str(path)).get(task_id, {}) if path else {}


def _evalplus_file() -> Path | None:
    override = os.environ.get(EVALPLUS_OVERRIDE_ENV)
    folders = [os.environ.get(DATA_DIR_ENV), Path(__file__).resolve().parents[3] / "shared/data"]
    options = [Path(override)] if override else []
    options += [Path(folder).joinpath(*EVALPLUS_FILE) for folder in folders if folder]
    return next((path for path in options if path.is_file()), None)


@functools.cache
def _evalplus_table(path: str) -> dict[str, dict[str, str]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        records = [json.loads(line) for line in handle if line.strip()]
    fields = ("contract", "prompt", "canonical_solution")
    return {r["task_id"]: {f: r.get(f) or "" for f in fields} for r in records}


def guarded_program(program: str, entry_point: str, contract_text: str) -> str | None:
    """``program`` with :data:`CHECKED`: it runs the contract's statements (as a function over
    the entry point's parameters, so its names never mix with the body's) and then the entry
    point. An input the contract refuses raises there, in the sandbox, and so never becomes a
    case. ``program`` itself when there is no contract; None when the contract cannot be
    applied (a problem with an unreadable contract gets no plus cases rather than wrong ones)."""
    if not contract_text.strip():
        return program
    tree = parse_program(program)
    if tree is None:
        return None
    body = textwrap.indent(textwrap.dedent(contract_text.strip("\n")), "    ")
    entry = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None
    )
    if entry is None:
        return None
    guarded = program + _GUARD.format(params=ast.unparse(entry.args), body=body, entry=entry_point)
    try:
        compile(guarded, "<guarded reference>", "exec")
    except SyntaxError:
        return None
    return guarded
