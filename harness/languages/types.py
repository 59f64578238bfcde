"""The Python-side type model every language translates from.

A :class:`PyType` is what a benchmark value is, as far as a typed language needs to know:
``int``, ``float``, ``bool``, ``str``, ``list[T]``, fixed ``tuple[A, B, ...]``, variable
``tuple[T, ...]`` (``vartuple``), ``dict[K, V]``, ``Optional[T]`` and ``Union[A, B, ...]``
(values of different types in one place; at most one alternative of each :func:`family`).
Types come from a prompt's annotations (:func:`from_annotation`) or from values (:func:`infer`,
:func:`unify`; :mod:`harness.languages.unions` where one place holds different types), as
MultiPL-E does for benchmarks without annotations. :func:`decode` turns the plain JSON a driver
sent back into the Python value the benchmark's check expects, strictly: a value of the wrong
shape is an error, never a silent coercion the check would then accept.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.sandbox.channel import codec

SCALARS = ("int", "float", "bool", "str")


class Untranslatable(ValueError):
    """A type (or value) this translation cannot express; the problem becomes a data defect."""


class DecodeError(ValueError):
    """A value from a driver that does not have the declared type."""


@dataclass(frozen=True)
class PyType:
    # int float bool str none list tuple vartuple dict optional union unknown any
    kind: str
    args: tuple[PyType, ...] = ()

    def __str__(self) -> str:
        if self.kind == "vartuple":
            return f"tuple[{self.args[0]}, ...]"
        if self.kind == "optional":
            return f"Optional[{self.args[0]}]"
        if self.kind == "union":
            return f"Union[{', '.join(map(str, self.args))}]"
        if self.kind == "any":
            return "Any"
        if self.args:
            return f"{self.kind}[{', '.join(map(str, self.args))}]"
        return self.kind

    @property
    def complete(self) -> bool:
        """No ``unknown``, ``Any`` or bare ``none`` left anywhere inside."""
        if self.kind in ("unknown", "none", "any"):
            return False
        return all(a.complete for a in self.args)


INT, FLOAT, BOOL, STR = PyType("int"), PyType("float"), PyType("bool"), PyType("str")
NONE, UNKNOWN, ANY = PyType("none"), PyType("unknown"), PyType("any")

# The families a Union keeps apart, in the order its alternatives are listed. A family is what
# a driver's type tag names: a fixed and a variable tuple are one family (they unify).
FAMILIES = ("int", "float", "bool", "str", "list", "tuple", "dict")


def list_of(t: PyType) -> PyType:
    return PyType("list", (t,))


def optional(t: PyType) -> PyType:
    return t if t.kind in ("optional", "none") else PyType("optional", (t,))


def family(t: PyType) -> str:
    """The tag of ``t``'s values inside a Union: its kind, ``tuple`` for either tuple."""
    return "tuple" if t.kind == "vartuple" else t.kind


def union(alternatives: list[PyType] | tuple[PyType, ...]) -> PyType:
    """The Union of ``alternatives``: nested Unions flattened, None made Optional, one
    alternative left alone. Two different alternatives of one family are Untranslatable here
    (:func:`harness.languages.unions.merge` joins them first where values are concerned)."""
    flat: list[PyType] = []
    has_none = False
    pending = list(alternatives)
    while pending:
        t = pending.pop(0)
        if t.kind == "any":
            return ANY
        if t.kind in ("union", "optional"):
            has_none = has_none or t.kind == "optional"
            pending[:0] = t.args
        elif t.kind == "none":
            has_none = True
        elif t.kind != "unknown" and t not in flat:
            flat.append(t)
    families = [family(t) for t in flat]
    if len(set(families)) != len(families):
        raise Untranslatable(f"Union of {', '.join(map(str, flat))}: two of one kind")
    flat.sort(key=lambda t: FAMILIES.index(family(t)))
    if not flat:
        return NONE
    single = flat[0] if len(flat) == 1 else PyType("union", tuple(flat))
    return optional(single) if has_none else single


def alternative_for(value: Any, t: PyType) -> PyType | None:
    """The alternative of Union ``t`` that ``value`` is (an int fits a float alternative)."""
    by_family = {family(a): a for a in t.args}
    kind = type(value)
    if kind is int:
        return by_family.get("int") or by_family.get("float")
    names = {bool: "bool", float: "float", str: "str", tuple: "tuple", dict: "dict"}
    if kind is list:
        alt = by_family.get("list") or by_family.get("tuple")
        return alt if alt is None or alt.kind != "tuple" else None
    return by_family.get(names[kind]) if kind in names else None


_NAMES = {"int": INT, "float": FLOAT, "bool": BOOL, "str": STR, "None": NONE, "Any": ANY}
_GENERIC = {"List": "list", "list": "list", "Tuple": "tuple", "tuple": "tuple"}
_GENERIC |= {"Dict": "dict", "dict": "dict", "Optional": "optional", "Union": "union"}


def from_annotation(node: ast.expr | None) -> PyType:
    """The type an annotation names (``UNKNOWN`` for none); Untranslatable for what has none."""
    if node is None:
        return UNKNOWN
    if isinstance(node, ast.Constant) and node.value is None:
        return NONE
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # int | str
        return union([from_annotation(node.left), from_annotation(node.right)])
    if isinstance(node, ast.Name):
        if node.id in _NAMES:
            return _NAMES[node.id]
        if node.id in ("list", "List"):
            return list_of(UNKNOWN)
        if node.id in ("tuple", "Tuple"):
            return PyType("vartuple", (UNKNOWN,))
        if node.id in ("dict", "Dict"):
            return PyType("dict", (UNKNOWN, UNKNOWN))
        raise Untranslatable(f"type {node.id} has no translation")
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        kind = _GENERIC.get(node.value.id)
        if kind is None:
            raise Untranslatable(f"type {ast.unparse(node)} has no translation")
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if kind == "tuple" and len(elts) == 2 and isinstance(elts[1], ast.Constant):
            if elts[1].value is Ellipsis:
                return PyType("vartuple", (from_annotation(elts[0]),))
        args = tuple(from_annotation(e) for e in elts)
        if kind == "optional":
            return optional(args[0])
        if kind == "union":
            return union(args)
        if (kind == "list" and len(args) != 1) or (kind == "dict" and len(args) != 2):
            raise Untranslatable(f"type {ast.unparse(node)} has the wrong number of arguments")
        return PyType(kind, args)
    raise Untranslatable(f"type {ast.unparse(node)} has no translation")


def infer(value: Any) -> PyType:
    """The type of a plain benchmark value (arguments, reference results).

    An int beside floats widens to ``float`` only where a float64 holds it exactly: past
    2**53 the widened value would be another number, so such a value has no type here
    (:func:`harness.languages.unions.type_of_values` then gives its exact Union)."""
    t = _infer(value)
    if not conforms(value, t):
        raise Untranslatable(f"{value!r:.80} mixes floats with an int no float holds exactly")
    return t


def _infer(value: Any) -> PyType:
    if value is None:
        return NONE
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise Untranslatable(f"integer {value} does not fit in 64 bits")
        return INT
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STR
    if isinstance(value, list):
        return list_of(_unify_all([_infer(v) for v in value]))
    if isinstance(value, tuple):
        return PyType("tuple", tuple(_infer(v) for v in value))
    if isinstance(value, dict):
        keys = _unify_all([_infer(k) for k in value])
        return PyType("dict", (keys, _unify_all([_infer(v) for v in value.values()])))
    raise Untranslatable(f"a value of type {type(value).__name__} has no translation")


def _unify_all(types: list[PyType]) -> PyType:
    result = UNKNOWN
    for t in types:
        result = unify(result, t)
    return result


def unify(a: PyType, b: PyType) -> PyType:
    """The least type both values fit (int widens to float, None makes Optional)."""
    if a == b:
        return a
    if a.kind == "unknown":
        return b
    if b.kind == "unknown":
        return a
    if a.kind == "none":
        return optional(b)
    if b.kind == "none":
        return optional(a)
    if a.kind == "optional" or b.kind == "optional":
        inner_a = a.args[0] if a.kind == "optional" else a
        inner_b = b.args[0] if b.kind == "optional" else b
        return optional(unify(inner_a, inner_b))
    if {a.kind, b.kind} == {"int", "float"}:
        return FLOAT
    if a.kind == b.kind and a.kind in ("list", "dict", "vartuple"):
        return PyType(a.kind, tuple(unify(x, y) for x, y in zip(a.args, b.args, strict=True)))
    if a.kind == b.kind == "tuple":
        if len(a.args) == len(b.args):
            return PyType("tuple", tuple(unify(x, y) for x, y in zip(a.args, b.args, strict=True)))
        return PyType("vartuple", (_unify_all([*a.args, *b.args]),))
    if {a.kind, b.kind} == {"tuple", "vartuple"}:
        return PyType("vartuple", (_unify_all([*a.args, *b.args]),))
    raise Untranslatable(f"values of types {a} and {b} in the same place")


def resolve(t: PyType) -> PyType:
    """Fill what the values left open: an element never seen is ``int`` (MultiPL-E's choice)."""
    if t.kind in ("unknown", "any"):
        return INT
    if t.kind == "none":
        raise Untranslatable("a value that is always None")
    return PyType(t.kind, tuple(resolve(a) for a in t.args))


def conforms(value: Any, t: PyType) -> bool:
    """Whether ``value`` can be written as a literal of type ``t`` (an int fits float where a
    float64 holds it exactly)."""
    kind = t.kind
    if kind == "unknown":  # the items of an empty container: none to check
        return True
    if kind == "none":
        return value is None
    if kind == "optional":
        return value is None or conforms(value, t.args[0])
    if kind == "union":
        alt = alternative_for(value, t)
        return alt is not None and conforms(value, alt)
    if kind == "int":
        return type(value) is int and -(2**63) <= value < 2**63
    if kind == "float":
        return type(value) is float or (type(value) is int and _exact_float(value))
    if kind == "bool":
        return type(value) is bool
    if kind == "str":
        return type(value) is str
    if kind == "list":
        return type(value) is list and all(conforms(v, t.args[0]) for v in value)
    if kind == "vartuple":
        return type(value) in (tuple, list) and all(conforms(v, t.args[0]) for v in value)
    if kind == "tuple":
        return (
            type(value) is tuple
            and len(value) == len(t.args)
            and all(conforms(v, a) for v, a in zip(value, t.args, strict=True))
        )
    if kind == "dict":
        return type(value) is dict and all(
            conforms(k, t.args[0]) and conforms(v, t.args[1]) for k, v in value.items()
        )
    return False


def _exact_float(value: int) -> bool:
    try:
        return float(value) == value  # an exact comparison of int and float
    except OverflowError:
        return False


def decode(data: Any, t: PyType, where: str = "value") -> Any:
    """The Python value of type ``t`` that a driver's JSON ``data`` stands for.

    Drivers send lists for lists and tuples, ``[[key, value], ...]`` for dicts, ``null`` for
    an empty Optional, numbers for numbers (JavaScript has only one kind: an integral float is
    accepted for ``int``) and ``[family, value]`` for a Union's value: the tag picks the
    alternative, and the value must then decode as that alternative, so a tag that lies is an
    error, never a value of another type.
    """
    decoder = _DECODERS.get(t.kind)
    if decoder is None:
        raise DecodeError(f"{where}: no decoding for type {t}")
    return decoder(data, t, where)


# One decoder per kind (a table, not a chain of tests: decoding a big value calls it often).
# A container looks its items' decoder up once, not once per item.
Decoder = Callable[[Any, PyType, str], Any]


def _decode_optional(data: Any, t: PyType, where: str) -> Any:
    return None if data is None else decode(data, t.args[0], where)


def _decode_int(data: Any, t: PyType, where: str) -> int:
    if type(data) is int:
        return data
    if type(data) is float and data.is_integer() and abs(data) < 2**53:
        return int(data)
    raise DecodeError(f"{where}: expected an int, got {data!r}"[:200])


def _decode_float(data: Any, t: PyType, where: str) -> float:
    if type(data) in (int, float):
        return float(data)
    if data in ("NaN", "Infinity", "-Infinity"):
        return float(data.replace("Infinity", "inf"))
    raise DecodeError(f"{where}: expected a float, got {data!r}"[:200])


def _decode_exact(data: Any, t: PyType, where: str) -> Any:
    """``bool`` and ``str``: JSON's own value of exactly that type."""
    if type(data) is _EXACT[t.kind]:
        return data
    raise DecodeError(f"{where}: expected a {t.kind}, got {data!r}"[:200])


_EXACT = {"bool": bool, "str": str}


def _json_list(data: Any, t: PyType, where: str) -> list[Any]:
    if type(data) is not list:
        raise DecodeError(f"{where}: expected {t} (a JSON list), got {data!r}"[:200])
    return data


def _item_decoder(t: PyType) -> Decoder:
    return _DECODERS.get(t.kind, decode)


def _decode_list(data: Any, t: PyType, where: str) -> list[Any]:
    element, item = t.args[0], _item_decoder(t.args[0])
    return [item(v, element, f"{where}[{i}]") for i, v in enumerate(_json_list(data, t, where))]


def _decode_vartuple(data: Any, t: PyType, where: str) -> tuple[Any, ...]:
    return tuple(_decode_list(data, t, where))


def _decode_tuple(data: Any, t: PyType, where: str) -> tuple[Any, ...]:
    data = _json_list(data, t, where)
    if len(data) != len(t.args):
        raise DecodeError(f"{where}: expected {len(t.args)} items, got {len(data)}")
    return tuple(
        decode(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(data, t.args, strict=True))
    )


def _decode_dict(data: Any, t: PyType, where: str) -> dict[Any, Any]:
    key_type, value_type = t.args
    key_of, value_of = _item_decoder(key_type), _item_decoder(value_type)
    pairs = []
    for i, pair in enumerate(_json_list(data, t, where)):
        if type(pair) is not list or len(pair) != 2:
            raise DecodeError(f"{where}: dict entry {i} is not a [key, value] pair")
        pairs.append((key_of(pair[0], key_type, f"{where} key"), pair[1]))
    # Keys that share one hash would make the dict quadratic to build (ints collide modulo
    # 2**61 - 1, and tuples of them): refused first, as the Python value channel does.
    try:
        codec.check_hash_flood([key for key, _ in pairs])
    except codec.TooLarge as exc:
        raise DecodeError(f"{where}: {exc}") from None
    return {key: value_of(value, value_type, where) for key, value in pairs}


def _decode_tagged(data: Any, t: PyType, where: str) -> Any:
    if type(data) is not list or len(data) != 2 or type(data[0]) is not str:
        raise DecodeError(f"{where}: expected a tagged {t} value [kind, value], got {data!r}"[:200])
    by_family = {family(a): a for a in t.args}
    alt = by_family.get(data[0])
    if alt is None and data[0] == "int":
        alt = by_family.get("float")  # an int where a float is declared, as Python's == takes it
    if alt is None:
        raise DecodeError(f"{where}: a value tagged {data[0]!r} where {t} is declared"[:200])
    return decode(data[1], alt, where)


_DECODERS: dict[str, Decoder] = {
    "optional": _decode_optional,
    "union": _decode_tagged,
    "int": _decode_int,
    "float": _decode_float,
    "bool": _decode_exact,
    "str": _decode_exact,
    "list": _decode_list,
    "vartuple": _decode_vartuple,
    "tuple": _decode_tuple,
    "dict": _decode_dict,
}


def parse_type(text: str) -> PyType:
    """A type from its ``str`` form (as stored in problem metadata)."""
    return from_annotation(ast.parse(text, mode="eval").body)


def is_finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))
