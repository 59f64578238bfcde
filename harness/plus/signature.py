"""What a problem says about its function's inputs: parameters, annotations, literal inputs.

Plus inputs can only be made for a *function* whose checks call it with plain data: the entry
point must be a function the reference defines, and the checks' calls must have literal
arguments (``candidate([1, 2], 3)``, also inside loops the check splitter kept whole). The
HumanEval prompts' doctest examples (``>>> f(...)``) count as literal inputs too.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.analyzers.structure import entry_function
from harness.records import Problem, is_plus

_DOCTEST_CALL = re.compile(r"^\s*>>>\s*(.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Signature:
    """The entry point's positional parameters and their annotations (``None``: none)."""

    names: tuple[str, ...]
    annotations: tuple[ast.expr | None, ...]


def signature(problem: Problem) -> Signature | None:
    """The entry point's signature, from the reference (or the prompt); None: not a function."""
    node = entry_function((problem.reference, problem.prompt), problem.entry_point)
    if node is None:
        return None
    args = node.args
    if args.kwonlyargs and len(args.kw_defaults) != sum(d is not None for d in args.kw_defaults):
        return None  # required keyword-only arguments
    params = [*args.posonlyargs, *args.args]
    return Signature(tuple(a.arg for a in params), tuple(a.annotation for a in params))


def literal_inputs(problem: Problem) -> list[tuple[Any, ...]]:
    """Argument tuples of every call of the candidate with literal arguments, first seen first."""
    names = set(problem.candidate_names) | {"candidate", problem.entry_point}
    sources: list[str] = []
    for case in problem.cases:
        if is_plus(case.case_id):
            continue  # a suite's own plus inputs (EvalPlus's) are what plus cases are measured by
        sources += list(case.calls)
        if case.statement:
            sources.append(case.statement)
    sources += [m.group(1) for m in _DOCTEST_CALL.finditer(problem.prompt)]
    found: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for text in sources:
        try:
            tree = ast.parse(text.strip())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            args = _literal_args(node, names)
            if args is not None and repr(args) not in seen:
                seen.add(repr(args))
                found.append(args)
    return found


def _literal_args(node: ast.AST, names: set[str]) -> tuple[Any, ...] | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    if node.func.id not in names or node.keywords:
        return None
    if len(node.args) == 1 and isinstance(node.args[0], ast.Starred):  # candidate(*[1, 2])
        try:
            spread = ast.literal_eval(node.args[0].value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return tuple(spread) if isinstance(spread, list | tuple) else None
    values = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            return None
        try:
            values.append(ast.literal_eval(arg))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return tuple(values)


def usable_inputs(inputs: list[tuple[Any, ...]], sig: Signature) -> list[tuple[Any, ...]]:
    """The inputs with the arity most of them share (and that the signature accepts)."""
    if not inputs:
        return []
    arity = Counter(len(args) for args in inputs).most_common(1)[0][0]
    if arity > len(sig.names):
        return []
    return [args for args in inputs if len(args) == arity]
