"""The input domain of one argument, inferred from the values a benchmark's checks pass it.

A benchmark's literal check inputs are the best description of what its function accepts: their
types, ranges, lengths, alphabets and nesting. A :class:`Domain` records that (and, where a
position has no literal inputs, what its annotation says), so generation stays inside it:
hypothesis draws from it (:mod:`harness.plus.strategies`), mutation keeps to it
(:mod:`harness.plus.input_mutation`), and shrinking never leaves it (:meth:`Domain.contains`).

Conservative where it matters: an input outside what a function is specified for turns the
reference's arbitrary answer into an expected value, and a correct program would then fail.
So a scalar integer argument whose literal inputs are all non-negative stays non-negative (it is
usually a count, an index or "the n-th"); integers *inside* containers may go negative (lists
of "numbers" rarely exclude them, and "wrong on negative numbers" is a bug class worth
catching); lists are generated sorted (or without repeats) only when every longer literal input
is and the problem's text says so ("sorted array", "distinct"). A problem whose docstring states
more than its checks show gets a contract (:mod:`harness.plus.contracts`).
"""

from __future__ import annotations

import ast
import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_LIST = 24  # longest generated list, set or dict
MAX_TEXT = 40  # longest generated string


class Domain:
    """Values one argument may take."""

    def contains(self, value: Any) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class NoneDomain(Domain):
    def contains(self, value: Any) -> bool:
        return value is None


@dataclass(frozen=True)
class BoolDomain(Domain):
    def contains(self, value: Any) -> bool:
        return type(value) is bool


@dataclass(frozen=True)
class IntDomain(Domain):
    lo: int
    hi: int

    def contains(self, value: Any) -> bool:
        return type(value) is int and self.lo <= value <= self.hi


@dataclass(frozen=True)
class FloatDomain(Domain):
    lo: float
    hi: float

    def contains(self, value: Any) -> bool:
        return (
            type(value) in (float, int)
            and type(value) is not bool
            and math.isfinite(value)
            and self.lo <= value <= self.hi
        )


@dataclass(frozen=True)
class TextDomain(Domain):
    alphabet: str
    max_len: int
    min_len: int = 0

    def contains(self, value: Any) -> bool:
        return (
            type(value) is str
            and self.min_len <= len(value) <= self.max_len
            and all(ch in self.alphabet for ch in value)
        )


@dataclass(frozen=True)
class ListDomain(Domain):
    """Lists (or sets, with ``kind="set"``) whose elements lie in ``element``."""

    element: Domain
    max_len: int
    min_len: int = 0
    sorted: bool = False
    unique: bool = False
    kind: str = "list"

    def contains(self, value: Any) -> bool:
        expected = set if self.kind == "set" else list
        if type(value) is not expected or not self.min_len <= len(value) <= self.max_len:
            return False
        if not all(self.element.contains(v) for v in value):
            return False
        if type(value) is set:
            return True
        items = list(value)
        return not (self.sorted and not _sorted(items)) and not (
            self.unique and not _all_distinct(items)
        )


@dataclass(frozen=True)
class TupleDomain(Domain):
    items: tuple[Domain, ...]

    def contains(self, value: Any) -> bool:
        return (
            type(value) is tuple
            and len(value) == len(self.items)
            and all(d.contains(v) for d, v in zip(self.items, value, strict=False))
        )


@dataclass(frozen=True)
class DictDomain(Domain):
    key: Domain
    value: Domain
    max_len: int

    def contains(self, value: Any) -> bool:
        return (
            type(value) is dict
            and len(value) <= self.max_len
            and all(self.key.contains(k) and self.value.contains(v) for k, v in value.items())
        )


@dataclass(frozen=True)
class UnionDomain(Domain):
    options: tuple[Domain, ...]

    def contains(self, value: Any) -> bool:
        return any(d.contains(value) for d in self.options)


_SORTED_HINT = re.compile(r"\bsorted\s+(?:array|list|sequence|tuple)|\bin sorted\b", re.I)
_UNIQUE_HINT = re.compile(r"\b(?:distinct|unique)\b", re.I)


@dataclass(frozen=True)
class Hints:
    """What the problem's text says about its inputs (read by :func:`infer`)."""

    sorted: bool = False
    unique: bool = False

    @classmethod
    def from_text(cls, text: str) -> Hints:
        return cls(bool(_SORTED_HINT.search(text)), bool(_UNIQUE_HINT.search(text)))


def infer(
    values: Sequence[Any],
    annotation: ast.expr | None = None,
    hints: Hints = Hints(),
    nested: bool = False,
) -> Domain:
    """The domain of an argument that the checks passed ``values`` (and annotated so)."""
    groups: dict[str, list[Any]] = {}
    for value in values:
        groups.setdefault(_kind(value), []).append(value)
    groups.pop("other", None)
    if "int" in groups and "float" in groups:
        groups["float"] += groups.pop("int")
    if not groups:
        return from_annotation(annotation)
    options = tuple(
        _infer_kind(kind, vals, annotation, hints, nested) for kind, vals in sorted(groups.items())
    )
    return options[0] if len(options) == 1 else UnionDomain(options)


def _kind(value: Any) -> str:
    kinds = {
        type(None): "none",
        bool: "bool",
        int: "int",
        float: "float",
        str: "str",
        list: "list",
        tuple: "tuple",
        dict: "dict",
        set: "set",
    }
    kind = kinds.get(type(value), "other")
    if kind == "float" and not math.isfinite(value):
        return "other"
    return kind


def _infer_kind(
    kind: str, values: list[Any], annotation: ast.expr | None, hints: Hints, nested: bool
) -> Domain:
    if kind == "none":
        return NoneDomain()
    if kind == "bool":
        return BoolDomain()
    if kind in ("int", "float"):
        return _number_domain(kind, values, nested)
    if kind == "str":
        return _text_domain(values)
    if kind in ("list", "set"):
        return _list_domain(values, kind, _element_annotation(annotation, 0), hints)
    if kind == "tuple":
        return _tuple_domain(values, annotation, hints)
    keys = [k for v in values for k in v]
    items = [x for v in values for x in v.values()]
    return DictDomain(
        infer(keys, _element_annotation(annotation, 0), hints, True),
        infer(items, _element_annotation(annotation, 1), hints, True),
        min(MAX_LIST, max(len(v) for v in values) * 2 + 2),
    )


def _number_domain(kind: str, values: list[Any], nested: bool) -> IntDomain | FloatDomain:
    """Room around the seen numbers: up past twice the largest, down to negatives where the
    seeds go negative (or always, inside a container)."""
    if kind == "int":
        lo, hi = min(values), max(values)
        top = max(2 * hi + 2, hi + 10, 10)
        if nested:
            return IntDomain(min(2 * lo, -10, -(top // 2)), top)
        return IntDomain(lo if lo >= 0 else min(2 * lo, -10), top)
    flo, fhi = float(min(values)), float(max(values))
    ftop = max(2 * fhi + 2, 10.0)
    if nested:
        return FloatDomain(min(2 * flo, -10.0, -ftop / 2), ftop)
    return FloatDomain(flo if flo >= 0 else min(2 * flo, -10.0), ftop)


def _tuple_domain(values: list[Any], annotation: ast.expr | None, hints: Hints) -> Domain:
    """A tuple of per-position domains when the tuples share a length, else a list's."""
    lengths = {len(v) for v in values}
    if len(lengths) == 1:
        (length,) = lengths
        return TupleDomain(
            tuple(
                infer([v[i] for v in values], _element_annotation(annotation, i), hints, True)
                for i in range(length)
            )
        )
    return _list_domain([list(v) for v in values], "list", None, hints)


def _text_domain(values: list[str]) -> TextDomain:
    seen = set("".join(values))
    alphabet = set(seen)
    for family in (string.ascii_lowercase, string.ascii_uppercase, string.digits):
        if seen & set(family):
            alphabet |= set(family)
    if not alphabet:
        alphabet = set(string.ascii_letters)
    longest = max(len(v) for v in values)
    return TextDomain("".join(sorted(alphabet)), min(MAX_TEXT, max(2 * longest + 2, 4)))


def _list_domain(
    values: list[Any], kind: str, element_annotation: ast.expr | None, hints: Hints
) -> ListDomain:
    elements = [x for v in values for x in v]
    element = infer(elements, element_annotation, hints, True)
    longest = max(len(v) for v in values)
    telling = [v for v in values if len(v) >= 3]
    is_sorted = hints.sorted and kind == "list" and bool(telling) and all(map(_sorted, telling))
    unique = hints.unique and kind == "list" and bool(telling) and all(map(_all_distinct, telling))
    return ListDomain(
        element,
        min(MAX_LIST, max(2 * longest + 2, 4)),
        sorted=is_sorted,
        unique=unique,
        kind=kind,
    )


def _sorted(values: list[Any]) -> bool:
    try:
        return all(a <= b for a, b in zip(values, values[1:], strict=False))
    except TypeError:
        return False


def _all_distinct(values: list[Any]) -> bool:
    try:
        return len(set(values)) == len(values)
    except TypeError:
        return all(values.count(v) == 1 for v in values)


# -- annotations --------------------------------------------------------------------------------
_SCALARS: dict[str, Domain] = {
    "int": IntDomain(-20, 100),
    "float": FloatDomain(-100.0, 100.0),
    "str": TextDomain(string.ascii_letters + string.digits + " ", 12),
    "bool": BoolDomain(),
    "None": NoneDomain(),
}


def from_annotation(annotation: ast.expr | None) -> Domain:
    """A domain for an annotation like ``List[int]``, ``Tuple[int, str]`` or ``Optional[str]``."""
    if annotation is None:
        return IntDomain(-20, 100)
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return IntDomain(-20, 100)
    name = _annotation_name(annotation)
    if name in _SCALARS:
        return _SCALARS[name]
    if name in ("list", "List", "Sequence", "Iterable"):
        return ListDomain(from_annotation(_element_annotation(annotation, 0)), 10)
    if name in ("set", "Set"):
        return ListDomain(from_annotation(_element_annotation(annotation, 0)), 10, kind="set")
    if name in ("tuple", "Tuple") and isinstance(annotation, ast.Subscript):
        parts = _subscript_parts(annotation)
        return TupleDomain(tuple(from_annotation(p) for p in parts if not _is_ellipsis(p)))
    if name in ("dict", "Dict"):
        return DictDomain(
            from_annotation(_element_annotation(annotation, 0)),
            from_annotation(_element_annotation(annotation, 1)),
            6,
        )
    if name == "Optional" and isinstance(annotation, ast.Subscript):
        return UnionDomain((NoneDomain(), from_annotation(_subscript_parts(annotation)[0])))
    if name == "Union" and isinstance(annotation, ast.Subscript):
        return UnionDomain(tuple(from_annotation(p) for p in _subscript_parts(annotation)))
    return IntDomain(-20, 100)


def _annotation_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return ""


def _subscript_parts(node: ast.Subscript) -> list[ast.expr]:
    inner = node.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _element_annotation(annotation: ast.expr | None, index: int) -> ast.expr | None:
    if not isinstance(annotation, ast.Subscript):
        return None
    parts = _subscript_parts(annotation)
    return parts[index] if index < len(parts) and not _is_ellipsis(parts[index]) else None


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def with_edges(domain: Domain) -> Domain:
    """``domain`` reaching down to its edges: a non-negative number from 0, a string or list
    from empty. For a problem whose contract is checked (:mod:`harness.plus.contracts`): the
    contract, not the checks' smallest input, then says where the problem's inputs end."""
    if isinstance(domain, IntDomain) and domain.lo > 0:
        return IntDomain(0, domain.hi)
    if isinstance(domain, FloatDomain) and domain.lo > 0:
        return FloatDomain(0.0, domain.hi)
    if isinstance(domain, TextDomain):
        return TextDomain(domain.alphabet, domain.max_len)
    if isinstance(domain, ListDomain):
        return ListDomain(
            with_edges(domain.element),
            domain.max_len,
            sorted=domain.sorted,
            unique=domain.unique,
            kind=domain.kind,
        )
    if isinstance(domain, TupleDomain):
        return TupleDomain(tuple(with_edges(d) for d in domain.items))
    if isinstance(domain, UnionDomain):
        return UnionDomain(tuple(with_edges(d) for d in domain.options))
    return domain
