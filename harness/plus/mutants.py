"""Small AST mutations of a reference solution: the wrong programs a good input tells apart.

Each mutant changes one spot of the reference: a comparison (``<`` for ``<=``), an arithmetic
operator, a constant by one, ``and`` for ``or``, a dropped ``not``, ``min`` for ``max``, a
``range`` bound by one. Those are the realistic slips (off by one at a boundary, the wrong
extreme) that a benchmark's few checks let through. An input on which the reference and a
mutant differ is worth a plus case; inputs that kill mutants no other input kills come first.
Mutants that are equivalent to the reference are simply never killed.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Callable, Iterator

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Div: ast.Mult,
}
_NAME_SWAPS = {"min": "max", "max": "min", "any": "all", "all": "any"}
_METHOD_SWAPS = {
    "startswith": "endswith",
    "endswith": "startswith",
    "find": "rfind",
    "rfind": "find",
    "index": "rindex",
    "rindex": "index",
    "lower": "upper",
    "upper": "lower",
    "islower": "isupper",
    "isupper": "islower",
    "isdigit": "isalpha",
    "isalpha": "isdigit",
    "split": "rsplit",
    "strip": "lstrip",
}

Edit = Callable[[ast.AST], bool]  # applies one mutation in place to the matching node


def mutants(source: str, limit: int, seed: int) -> list[str]:
    """Up to ``limit`` distinct single-edit mutants of ``source`` (chosen by ``seed``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    original = ast.unparse(tree)
    spots = list(_spots(tree))
    random.Random(seed).shuffle(spots)
    out: list[str] = []
    seen = {original}
    for index, edit in spots:
        if len(out) >= limit:
            break
        mutated = copy.deepcopy(tree)
        node = _nth_node(mutated, index)
        if node is None or not edit(node):
            continue
        try:
            text = ast.unparse(ast.fix_missing_locations(mutated))
            compile(text, "<mutant>", "exec")
        except (SyntaxError, ValueError, TypeError):
            continue
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def _nth_node(tree: ast.AST, index: int) -> ast.AST | None:
    for i, node in enumerate(ast.walk(tree)):
        if i == index:
            return node
    return None


def _spots(tree: ast.AST) -> Iterator[tuple[int, Edit]]:
    """``(node index in ast.walk order, edit)`` for every place a mutation applies."""
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare):
            for position, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAPS:
                    yield index, _swap_compare(position)
        elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINOP_SWAPS:
            yield index, _swap_binop
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield index, _shift_constant(1)
            yield index, _shift_constant(-1)
        elif isinstance(node, ast.BoolOp):
            yield index, _swap_boolop
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield index, _drop_not
        elif isinstance(node, ast.Name) and node.id in _NAME_SWAPS:
            yield index, _swap_name
        elif _is_range_call(node):
            yield index, _shift_range_end(1)
            yield index, _shift_range_end(-1)
        elif _is_method_call(node):
            yield index, _swap_method
            if _is_affix_test(node):
                yield index, _affix_to_in


def _swap_compare(position: int) -> Edit:
    def edit(node: ast.AST) -> bool:
        assert isinstance(node, ast.Compare)
        node.ops[position] = _COMPARE_SWAPS[type(node.ops[position])]()
        return True

    return edit


def _swap_binop(node: ast.AST) -> bool:
    assert isinstance(node, ast.BinOp | ast.AugAssign)
    node.op = _BINOP_SWAPS[type(node.op)]()
    return True


def _shift_constant(delta: int) -> Edit:
    def edit(node: ast.AST) -> bool:
        assert isinstance(node, ast.Constant) and type(node.value) is int
        node.value = node.value + delta
        return True

    return edit


def _swap_boolop(node: ast.AST) -> bool:
    assert isinstance(node, ast.BoolOp)
    node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    return True


def _drop_not(node: ast.AST) -> bool:
    # Double negation keeps the tree shape: ``not x`` becomes ``not not x`` (= ``bool(x)``).
    assert isinstance(node, ast.UnaryOp)
    node.operand = ast.UnaryOp(op=ast.Not(), operand=node.operand)
    return True


def _swap_name(node: ast.AST) -> bool:
    assert isinstance(node, ast.Name)
    node.id = _NAME_SWAPS[node.id]
    return True


def _is_method_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _METHOD_SWAPS
    )


def _is_affix_test(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("startswith", "endswith")
        and len(node.args) == 1
        and not node.keywords
    )


def _swap_method(node: ast.AST) -> bool:
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    node.func.attr = _METHOD_SWAPS[node.func.attr]
    return True


def _affix_to_in(node: ast.AST) -> bool:
    # ``s.startswith(p)`` becomes ``(p in s) == True``: "contains" for "starts with".
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    contains = ast.Compare(node.args[0], [ast.In()], [node.func.value])
    node.func = ast.Name("bool", ast.Load())
    node.args = [contains]
    return True


def _is_range_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and 1 <= len(node.args) <= 3
    )


def _shift_range_end(delta: int) -> Edit:
    def edit(node: ast.AST) -> bool:
        assert isinstance(node, ast.Call)
        end = 0 if len(node.args) == 1 else 1
        node.args[end] = ast.BinOp(node.args[end], ast.Add(), ast.Constant(delta))
        return True

    return edit
