"""Tests that come with data run confined: nothing of them executes in the trusted process.

A registered benchmark's tests are trusted (docs/security.md): the generated module runs their
test setup and each compare case's ``check`` here, in the pytest process. Tests that arrive
with a request (an inline problem of ``codeeval serve`` or the reward API) or with a user's data
set (``jsonl:``) are someone else's code, and the harness may run as root. So
:func:`confine_data_tests` rewrites such a problem before it is compiled:

- a compare case stays one only when its ``check`` is a pure expression over the values sent
  back and literals (:func:`pure_check`: comparisons, arithmetic without ``*`` or ``**``,
  containers, ``abs``/``len``/``sorted``/``math.isclose`` and a few more, no name the data
  defines) and it needs no prelude: evaluating it runs nothing of the data's;
- every other case becomes a judged case: the judge process, confined like the candidate (its
  own uid, limits, seccomp, Landlock), runs the prelude and the assert;
- the test setup then runs only in the sandbox (the candidate's child and the judge), never in
  the generated module (:data:`FROM_DATA`).
"""

from __future__ import annotations

import ast
import dataclasses

from harness.records import CheckCase, Problem

FROM_DATA = "tests_from_data"  # Problem.metadata key: the tests are data, confined here
SAFE_CALLS = frozenset(
    "abs len sorted set frozenset tuple list dict round float int str bool min max sum all any "
    "isinstance repr".split()
)
SAFE_MATH = frozenset("isclose fabs isnan isinf floor ceil sqrt".split())
_SAFE_OPERATORS = (ast.Add, ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.Not)
_SAFE_NODES = (
    ast.Assert, ast.Expression, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Constant,
    ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Subscript, ast.Name, ast.Load, ast.Call,
    ast.keyword, ast.Attribute, ast.IfExp, ast.Slice,
    ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot,
    ast.In, ast.NotIn, *_SAFE_OPERATORS,
)  # fmt: skip
MAX_CONSTANT = 1 << 20  # characters of a string or bytes literal the trusted side builds


def confine_data_tests(problem: Problem, judge: bool = True) -> Problem:
    """``problem`` with its tests confined as the module docstring says (marked FROM_DATA).

    ``judge=False``: the problem's language has no judge (a compiled language's driver only
    sends values back): a case that would need one is left out, and said so in the metadata's
    ``dropped_cases``, as a translation leaves out what it cannot translate.
    """
    confined = [_confined(case) for case in problem.cases]
    metadata = {**problem.metadata, FROM_DATA: True}
    if not judge:
        dropped = [c.case_id for c in confined if c.mode == "sandbox"]
        confined = [c for c in confined if c.mode != "sandbox"]
        if dropped:
            metadata["dropped_cases"] = [*metadata.get("dropped_cases", ()), *dropped]
        if dropped and not confined:
            reason = "no check of the data's is a pure comparison this language can judge"
            problem = dataclasses.replace(problem, defects=(*problem.defects, reason))
    return dataclasses.replace(problem, cases=tuple(confined), metadata=metadata)


def _confined(case: CheckCase) -> CheckCase:
    if case.mode != "compare" or case.oracle:
        return case  # judged already, or an oracle's data (values, never code)
    if not case.prelude.strip() and pure_check(case.check):
        return case
    return dataclasses.replace(
        case, mode="sandbox", statement=judged_statement(case), check="", calls=()
    )


def judged_statement(case: CheckCase) -> str:
    """A compare case's assert for the judge: each ``v[i]`` back to ``__plain__(call_i)``."""
    calls = [ast.parse(call, mode="eval").body for call in case.calls]

    class Restore(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "v"
                and isinstance(node.slice, ast.Constant)
                and type(node.slice.value) is int
                and 0 <= node.slice.value < len(calls)
            ):
                plain = ast.Name(id="__plain__", ctx=ast.Load())
                return ast.Call(func=plain, args=[calls[node.slice.value]], keywords=[])
            return self.generic_visit(node)

    tree = Restore().visit(ast.parse(case.check))
    return ast.unparse(ast.fix_missing_locations(tree))


def pure_check(check: str) -> bool:
    """Whether evaluating ``check`` (an ``assert`` over ``v[...]``) runs nothing but the
    harness's own, bounded operations on the values and literals."""
    try:
        tree = ast.parse(check)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return False
    return all(_safe(node) for node in ast.walk(tree.body[0]))


def _safe(node: ast.AST) -> bool:
    if not isinstance(node, _SAFE_NODES):
        return False
    if isinstance(node, ast.BinOp) and not isinstance(node.op, _SAFE_OPERATORS):
        return False  # no * or **: a literal times a huge number is a memory bomb
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, _SAFE_OPERATORS):
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return len(node.value) <= MAX_CONSTANT
    if isinstance(node, ast.Name):
        return node.id == "v" or node.id in SAFE_CALLS or node.id == "math"
    if isinstance(node, ast.Attribute):
        return (
            isinstance(node.value, ast.Name)
            and node.value.id == "math"
            and (node.attr in SAFE_MATH)
        )
    if isinstance(node, ast.Call):
        func = node.func
        named = isinstance(func, ast.Name) and func.id in SAFE_CALLS
        return named or isinstance(func, ast.Attribute)  # math.<SAFE_MATH>, checked above
    return True
