"""Types of places that hold values of different types: the Union a translation falls back to.

Where every value in a place fits one plain type, the types of :mod:`harness.languages.types`
stand (int widens to float, None makes Optional: today's translations are unchanged). Where
they do not (``-1`` or ``"0b11"``, a dict with ``str`` and ``int`` keys, a ``str`` argument
that is once a list) or where the prompt says ``Any``, the place's type is the Union of the
values' exact types: int and float stay apart there (a check may tell ``2`` from ``2.0``), and
values of one family join (two lists join their elements), so a Union holds at most one
alternative per family and a driver's tag names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.languages.types import (
    UNKNOWN,
    PyType,
    Untranslatable,
    family,
    infer,
    optional,
    unify,
    union,
)


def type_of_values(values: Iterable[Any], annotation: PyType = UNKNOWN) -> PyType:
    """The type of a place (a parameter, the result) from its annotation and its values."""
    values = list(values)
    if not _has_any(annotation):
        try:
            t = annotation
            for value in values:
                t = unify(t, infer(value))
            return t
        except Untranslatable:
            pass  # values of different types: the exact Union below, or its reason
    t = _without_any(annotation)
    for value in values:
        t = merge(t, infer_exact(value))
    return t


def infer_exact(value: Any) -> PyType:
    """The type of ``value`` with no widening: a list of ints and floats is a list of Unions."""
    if isinstance(value, list):
        return PyType("list", (_merge_all(infer_exact(v) for v in value),))
    if isinstance(value, tuple):
        return PyType("tuple", tuple(infer_exact(v) for v in value))
    if isinstance(value, dict):
        keys = _merge_all(infer_exact(k) for k in value)
        return PyType("dict", (keys, _merge_all(infer_exact(v) for v in value.values())))
    return infer(value)  # a scalar or None (its checks: 64-bit ints, no sets)


def merge(a: PyType, b: PyType) -> PyType:
    """The least type both fit, exactly: different families make a Union, never a widening."""
    if a == b or b.kind == "unknown":
        return a
    if a.kind == "unknown":
        return b
    if a.kind in ("none", "optional") or b.kind in ("none", "optional"):
        inner_a = a.args[0] if a.kind == "optional" else a
        inner_b = b.args[0] if b.kind == "optional" else b
        if inner_a.kind == "none":
            return optional(inner_b)
        if inner_b.kind == "none":
            return optional(inner_a)
        return optional(merge(inner_a, inner_b))
    joined: dict[str, PyType] = {}
    for t in (*_alternatives(a), *_alternatives(b)):
        f = family(t)
        joined[f] = _merge_same(joined[f], t) if f in joined else t
    return union(list(joined.values()))


def _merge_all(types: Iterable[PyType]) -> PyType:
    result = UNKNOWN
    for t in types:
        result = merge(result, t)
    return result


def _alternatives(t: PyType) -> tuple[PyType, ...]:
    return t.args if t.kind == "union" else (t,)


def _merge_same(a: PyType, b: PyType) -> PyType:
    """Two types of one family: elements joined (tuples of different lengths: a variable one)."""
    if a == b:
        return a
    if a.kind == b.kind and a.kind in ("list", "dict"):
        return PyType(a.kind, tuple(merge(x, y) for x, y in zip(a.args, b.args, strict=True)))
    if a.kind == b.kind == "tuple" and len(a.args) == len(b.args):
        return PyType("tuple", tuple(merge(x, y) for x, y in zip(a.args, b.args, strict=True)))
    return PyType("vartuple", (_merge_all([*a.args, *b.args]),))  # tuples of any length


def _has_any(t: PyType) -> bool:
    return t.kind == "any" or any(_has_any(a) for a in t.args)


def _without_any(t: PyType) -> PyType:
    if t.kind == "any":
        return UNKNOWN
    return PyType(t.kind, tuple(_without_any(a) for a in t.args))


def unions_in(t: PyType) -> list[PyType]:
    """Every Union inside ``t`` (itself included), outermost first, each once."""
    found: list[PyType] = []
    pending = [t]
    while pending:
        current = pending.pop(0)
        if current.kind == "union" and current not in found:
            found.append(current)
        pending.extend(current.args)
    return found
