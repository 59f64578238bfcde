"""EvalPlus's inputs as Python values and as source text the sandbox evaluates.

MBPP+ stores its inputs as JSON, which has no tuples, sets or complex numbers; ``evalplus``
rebuilds those for the tasks that need them before any call (``mbpp_deserialize_inputs``).
:data:`MBPP_INPUT_SHAPES` says, per task number, which rebuild applies; the rebuilds below
follow the same rules (including Mbpp/115's empty item, which becomes an empty dict).
:func:`python_literal` writes a value as source text that evaluates to an equal value of the
same types, without looking up any name (the candidate's module may shadow ``set``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Args = list[Any] | tuple[Any, ...]


def _each_tuple(args: list[Any]) -> list[Any]:
    return [tuple(arg) for arg in args]


def _each_tuple_of_rows(args: list[Any]) -> list[Any]:
    return [[tuple(row) for row in arg] for arg in args]


def _first_tuple_of_rows(args: list[Any]) -> list[Any]:
    return [[tuple(row) for row in args[0]], *args[1:]]


def _second_tuple(args: list[Any]) -> list[Any]:
    return [args[0], tuple(args[1]), *args[2:]]


def _first_tuple(args: list[Any]) -> list[Any]:
    return [tuple(args[0]), *args[1:]]


def _sets_or_empty_dict(args: list[Any]) -> list[Any]:
    # Mbpp/115: a non-empty list item becomes a set; anything else an empty *dict*.
    return [[set(item) if isinstance(item, list) and item else {} for item in args[0]]]


def _float_and_complex(args: list[Any]) -> tuple[Any, ...]:
    return (float(args[0]), complex(args[1]))


def _each_tuple_of_tuples(args: list[Any]) -> list[Any]:
    return [tuple(tuple(row) for row in arg) for arg in args]


def _first_mixed_tuple(args: list[Any]) -> list[Any]:
    return [tuple(tuple(item) if isinstance(item, list) else item for item in args[0])]


def _dict_of_tuples(args: list[Any]) -> list[Any]:
    return [{key: tuple(value) for key, value in args[0].items()}, *args[1:]]


def _complex_first(args: list[Any]) -> list[Any]:
    return [complex(args[0])]


def _all_tuples(value: Any) -> Any:
    return tuple(_all_tuples(item) for item in value) if isinstance(value, list) else value


def _shape_table() -> dict[int, Callable[[list[Any]], Args]]:
    groups: list[tuple[tuple[int, ...], Callable[[list[Any]], Args]]] = [
        (
            (2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596)
            + (616, 630, 726, 740, 744, 809),
            _each_tuple,
        ),
        (
            (63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780),
            _each_tuple_of_rows,
        ),
        ((75, 413, 444, 753), _first_tuple_of_rows),
        ((106, 750), _second_tuple),
        ((115,), _sets_or_empty_dict),
        ((124,), _float_and_complex),
        ((250, 405, 446, 617, 720, 763, 808), _first_tuple),
        ((259, 401, 445), _each_tuple_of_tuples),
        ((278,), _first_mixed_tuple),
        ((307,), _first_tuple),
        ((722,), _dict_of_tuples),
        ((252,), _complex_first),
        ((580, 615, 791), _all_tuples),
    ]
    return {number: rebuild for numbers, rebuild in groups for number in numbers}


MBPP_INPUT_SHAPES = _shape_table()


def mbpp_inputs(task_id: str, inputs: list[list[Any]]) -> list[Args]:
    """MBPP+'s JSON inputs of ``task_id`` ("Mbpp/N") with tuples, sets and complex numbers
    rebuilt where EvalPlus rebuilds them."""
    rebuild = MBPP_INPUT_SHAPES.get(int(task_id.rsplit("/", 1)[-1]))
    return list(inputs) if rebuild is None else [rebuild(args) for args in inputs]


# Item types whose repr is their literal, naming nothing (a list or tuple of them is its repr).
_PLAIN = frozenset((int, str, bool, bytes, type(None)))
_NUMBERS = frozenset((int, bool, float))  # and floats, when finite (else not a literal)


def python_literal(value: Any) -> str:
    """Source text of ``value`` (None, bool, int, float, complex, str, bytes, and lists,
    tuples, sets, frozensets and dicts of them) that evaluates to an equal value of the same
    types and looks up no name."""
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return repr(value)
    if kind is float:
        return _float(value)
    if kind is complex:
        return f"({_float(value.real)} + {_float(value.imag)} * 1j)"
    if kind is list or kind is tuple:
        types = set(map(type, value))
        if types <= _PLAIN or (types <= _NUMBERS and all(map(math.isfinite, value))):
            return repr(value)  # in C: the repr of such items is their literal, as below
    if kind is list:
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if kind is tuple:
        inner = ", ".join(python_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind in (set, frozenset):
        items = "{" + ", ".join(python_literal(v) for v in value) + "}" if value else "{*()}"
        return items if kind is set else f"frozenset({items})"
    if kind is dict:
        pairs = (f"{python_literal(k)}: {python_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    raise TypeError(f"no literal for a {kind.__name__} input")


def _float(value: float) -> str:
    if math.isnan(value):
        return "(1e999 - 1e999)"  # nan, folded by the compiler: no name to look up
    if math.isinf(value):
        return "1e999" if value > 0 else "-1e999"
    return repr(value)
