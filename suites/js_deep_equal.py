"""JavaScript's ``assert.deepEqual`` (node's legacy mode: ``==`` on primitives) on tagged values.

MultiPL-E's JavaScript tests compare with it, so the trusted process must too: the candidate's
value as the JS driver's encoder tags it (``harness.languages.multiple_e_templates``) against
the expected literal as :func:`suites.multiple_e_literals.js_tagged` tags it, or another
candidate value. Tags first, then by kind, in node's order (lib/internal/util/comparisons.js).
A malformed (forged) value equals nothing.
"""

from __future__ import annotations

import math
import re
from typing import Any

# ECMAScript's StringNumericLiteral (ASCII digits only: Number("١٢٣") is NaN) and the white
# space ToNumber trims (WhiteSpace: tab, VT, FF, ZWNBSP and every Zs space; LineTerminator).
_JS_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)", re.ASCII
)
_JS_WHITESPACE = (
    "\t\v\f \u00a0\ufeff\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u202f\u205f\u3000\n\r\u2028\u2029"
)


def _js_number(tagged: list[Any]) -> float:
    """ToNumber of a tagged primitive (NaN where JavaScript gives NaN): a double, as in
    JavaScript (a number past 2**53 is rounded, one past the largest double is infinite)."""
    kind = tagged[0]
    if kind == "n":
        value = tagged[1]
        if isinstance(value, str):
            return float(value.replace("Infinity", "inf"))
        return _double(value)
    if kind == "b":
        return 1.0 if tagged[1] else 0.0
    if kind == "s":
        text = tagged[1].strip(_JS_WHITESPACE)
        if not text:
            return 0.0
        if text in ("Infinity", "+Infinity", "-Infinity"):
            return float(text.replace("Infinity", "inf"))
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", text, re.ASCII):
            return _double(int(text, 0))
        return float(text) if _JS_NUMBER.fullmatch(text) else math.nan
    return math.nan


def _double(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer past the largest double
        return math.inf if value > 0 else -math.inf


def _js_string_to_bigint(text: str) -> int | None:
    """ECMAScript's StringToBigInt (``1n == " 0x1f "``), None where it gives undefined."""
    text = text.strip(_JS_WHITESPACE)
    if not text:
        return 0
    if re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII):
        return int(text, 10)
    if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", text, re.ASCII):
        return int(text, 0)
    return None


def _js_bigint_loose(big: int, other: list[Any]) -> bool:
    """``big == other`` for a BigInt ``big``: exact, never through a double."""
    kind = other[0]
    if kind == "B":
        return int(other[1]) == big
    if kind == "s":
        return _js_string_to_bigint(other[1]) == big
    if kind in ("n", "b"):
        number = _js_number(other)
        return math.isfinite(number) and number.is_integer() and int(number) == big
    return False


def _js_loose_primitive(a: list[Any], b: list[Any]) -> bool:
    ka, kb = a[0], b[0]
    nullish = ("null", "u")
    if ka in nullish or kb in nullish:
        return ka in nullish and kb in nullish
    if ka == "B" or kb == "B":
        return _js_bigint_loose(int(a[1]), b) if ka == "B" else _js_bigint_loose(int(b[1]), a)
    if ka == kb and ka in ("s", "b"):
        return a[1] == b[1]
    if ka in ("n", "s", "b") and kb in ("n", "s", "b"):
        x, y = _js_number(a), _js_number(b)
        return x == y or (math.isnan(x) and math.isnan(y) and ka == kb == "n")
    return False


def _js_strict(a: list[Any], b: list[Any], *, nan_equal: bool = False) -> bool:
    """``a === b`` on tagged primitives (SameValueZero with ``nan_equal``); objects are
    never the same reference once encoded."""
    kind = a[0]
    if kind != b[0] or kind not in ("null", "u", "n", "s", "b", "B"):
        return False
    if kind == "n":
        x, y = _js_number(a), _js_number(b)
        return x == y or (nan_equal and math.isnan(x) and math.isnan(y))
    return kind in ("null", "u") or a[1] == b[1]


_JS_OBJECTS = ("a", "o", "t")


def _js_tag(value: list[Any]) -> str:
    """``Object.prototype.toString`` of a tagged object."""
    if value[0] == "a":
        return value[3] if len(value) > 2 else "[object Array]"
    return "[object Object]" if value[0] == "o" else value[1]


def _js_own(value: list[Any]) -> list[tuple[str, Any]]:
    """The enumerable own string keys and values, in ``Object.keys`` order."""
    if value[0] == "o":
        return [(k, v) for k, v in value[1]]
    if value[0] == "t":
        return [(k, v) for k, v in value[4]]
    indexed = [(str(i), v) for i, v in enumerate(value[1]) if v != ["h"]]
    return indexed + [(k, v) for k, v in (value[2] if len(value) > 2 else [])]


def _js_keys_equal(xs: list[tuple[str, Any]], ys: list[tuple[str, Any]]) -> bool:
    """node's keyCheck on plain keys: the same keys, equal values."""
    theirs = dict(ys)
    return (
        len(xs) == len(theirs)
        and all(k in theirs for k, _ in xs)
        and all(_js_equal(v, theirs[k]) for k, v in xs)
    )


def _js_array_equal(a: list[Any], b: list[Any]) -> bool:
    """node's array branch: length, non-index keys, elements (holes too), non-index values."""
    xs, ys = a[1], b[1]
    extra_a = dict(a[2]) if len(a) > 2 else {}
    extra_b = dict(b[2]) if len(b) > 2 else {}
    if len(xs) != len(ys) or len(extra_a) != len(extra_b) or extra_a.keys() - extra_b.keys():
        return False
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if x != ["h"]:
            if y == ["h"] or not _js_equal(x, y):
                return False
        elif y != ["h"]:
            return False
        else:  # both sparse here: node walks Object.keys(a) from position i (sic)
            own_a, own_b = _js_own(a), dict(_js_own(b))
            for key, value in own_a[i:]:
                if key not in own_b or not _js_equal(value, own_b[key]):
                    return False
            return len(own_a) == len(own_b)
    return all(_js_equal(v, extra_b[k]) for k, v in extra_a.items())


def _js_loose_match(prim: list[Any]) -> bool | list[Any]:
    """node's findLooseMatchingPrimitives: whether a primitive missing from the other Set or
    Map may still match loosely (``True``/``False``), or the one value to look for instead."""
    kind = prim[0]
    if kind == "u":
        return ["null"]
    if kind == "null":
        return ["u"]
    if kind == "x":
        return prim[1] != "symbol"
    if kind in ("s", "n"):
        return not math.isnan(_js_number(prim))
    return True


def _js_has(items: list[Any], value: list[Any]) -> bool:
    return any(_js_strict(value, x, nan_equal=True) for x in items if x[0] not in _JS_OBJECTS)


def _js_get(entries: list[Any], key: list[Any]) -> Any:
    for k, v in entries:
        if k[0] not in _JS_OBJECTS and _js_strict(key, k, nan_equal=True):
            return v
    return None


def _js_set_equal(xs: list[Any], ys: list[Any]) -> bool:
    """node's setEquiv, loose mode."""
    if len(xs) != len(ys):
        return False
    pending: list[Any] = []
    for value in xs:
        if value[0] in _JS_OBJECTS:
            pending.append(value)
        elif not _js_has(ys, value):
            alternative = _js_loose_match(value)
            if isinstance(alternative, bool):
                if not alternative:
                    return False
            elif not (_js_has(ys, alternative) and not _js_has(xs, alternative)):
                return False
            pending.append(value)
    if not pending:
        return True
    for value in ys:
        if value[0] in _JS_OBJECTS or not _js_has(xs, value):
            match = next((i for i, x in enumerate(pending) if _js_equal(value, x)), None)
            if match is None:
                return False
            del pending[match]
    return not pending


def _js_map_equal(xs: list[Any], ys: list[Any]) -> bool:
    """node's mapEquiv, loose mode."""
    if len(xs) != len(ys):
        return False
    pending: list[Any] = []
    for key, item in xs:
        if key[0] in _JS_OBJECTS:
            pending.append((key, item))
            continue
        theirs = _js_get(ys, key)
        if theirs is not None and _js_equal(item, theirs):
            continue
        alternative = _js_loose_match(key)
        if isinstance(alternative, bool):
            if not alternative:
                return False
        else:
            theirs = _js_get(ys, alternative)
            if theirs is None or not _js_equal(item, theirs) or _js_get(xs, alternative):
                return False
        pending.append((key, item))
    if not pending:
        return True
    for key, item in ys:
        if key[0] not in _JS_OBJECTS:
            ours = _js_get(xs, key)
            if ours is not None and _js_equal(ours, item):
                continue
        match = next(
            (i for i, (k, v) in enumerate(pending) if _js_equal(key, k) and _js_equal(item, v)),
            None,
        )
        if match is None:
            return False
        del pending[match]
    return not pending


def _js_exotic_equal(a: list[Any], b: list[Any]) -> bool:
    """Two objects of one tag, neither an array nor tagged ``[object Object]``: node's
    branches by what ``a`` is (Date, RegExp, Error, Set, Map, boxed primitive, other)."""
    kind, data = a[2], a[3]
    if b[0] != "t" or b[2] != kind:
        return False
    theirs = b[3]
    if kind == "date":
        same = data is not None and theirs is not None and float(data) == float(theirs)
    elif kind == "regexp":
        same = data[:2] == theirs[:2] and _js_strict(data[2], theirs[2])
    elif kind == "error":
        same = _js_strict(data[0], theirs[0]) and _js_strict(data[1], theirs[1])
    elif kind == "set":
        same = _js_set_equal(data, theirs)
    elif kind == "map":
        same = _js_map_equal(data, theirs)
    elif kind == "boxed":  # Object.is on the primitive values
        if data[0] == "n" and theirs[0] == "n":
            x, y = _js_number(data), _js_number(theirs)
            same = (math.isnan(x) and math.isnan(y)) or (
                x == y and math.copysign(1, x) == math.copysign(1, y)
            )
        else:
            same = _js_strict(data, theirs)
    elif kind == "other":
        same = True
    else:  # typed arrays, DataViews, ArrayBuffers: not compared here (never a literal)
        return False
    return same and _js_keys_equal(_js_own(a), _js_own(b))


def _js_equal(actual: Any, expected: Any) -> bool:
    if not isinstance(actual, list) or not actual or not isinstance(expected, list):
        return False
    if not expected:
        return False
    ka, kb = actual[0], expected[0]
    if ka not in _JS_OBJECTS and kb not in _JS_OBJECTS:
        return _js_loose_primitive(actual, expected)
    if ka not in _JS_OBJECTS or kb not in _JS_OBJECTS or _js_tag(actual) != _js_tag(expected):
        return False
    if ka == "a":
        return kb == "a" and _js_array_equal(actual, expected)
    if ka == "o":  # tagged [object Object], whatever it is: keys only
        return _js_keys_equal(_js_own(actual), _js_own(expected))
    return _js_exotic_equal(actual, expected)


def js_deep_equal(actual: Any, expected: Any) -> bool:
    """Node's ``assert.deepEqual(actual, expected)`` on tagged values (see the module doc and
    the JS driver's encoder, ``harness.languages.multiple_e_templates.JS_ENCODER``): loose
    ``==`` on primitives, BigInt exactly; objects of one ``Object.prototype.toString`` tag
    only. A value the driver cannot have sent equals nothing."""
    try:
        return _js_equal(actual, expected)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, RecursionError):
        return False
