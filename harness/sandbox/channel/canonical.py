"""A value's digest by equality: equal values (``==``) get the same digest (stdlib only).

A value over the channel's bounds (a string of millions of characters, a list of millions of
numbers) is not sent: the child sends its digest instead (:mod:`encoder`), and the trusted
side compares digests (:class:`standins.Digest`). For that to judge as ``==`` judges, the
digest is taken over a canonical form in which two values have the same bytes exactly when
they are equal:

- numbers by their exact value: the float64 that is exactly it where there is one (``1``,
  ``1.0``, ``True``, ``Fraction(1)``, ``Decimal(1)`` and ``1+0j`` are one number, as for
  ``==``; ``-0.0`` is ``0.0``), else ``p/q`` in lowest terms; a NaN equals nothing, so a
  value holding one is not comparable;
- strings and bytes by content (``bytearray`` as ``bytes``); each distinct one is written once,
  in a table in the order of first appearance, and referred to by its place there (EvalPlus's
  Mbpp/255 answers 1.6 M tuples of 77 references to five strings);
- lists and tuples by kind, length and items (a list never equals a tuple);
- anything else (dicts, sets, objects) has no canonical form here: :func:`digest` gives None.

Like the encoder, it runs in the candidate's child on hostile values: types are read by
identity (the exact type, or the first base of its MRO with a form) and values through the
builtins' own unbound methods captured at import, never through the value's own methods.
The one exception is the lookup of a string in the table, which may run a ``str`` subclass's
``__hash__``/``__eq__`` in the child: that is the candidate's own code in its own process,
and forging the digest needs the right answer either way.
"""

from __future__ import annotations

import array
import builtins
import decimal
import fractions
import functools
import hashlib
import itertools
import math
import operator
import struct
from typing import Any

if __name__.startswith("harness."):  # imported by the trusted side, as the package
    from harness.sandbox.channel import wire
# Otherwise codec.py loaded this file by path (the fork server) and put ``wire`` here first.

MAX_DEPTH = wire.MAX_DEPTH
VERSION = b"codeeval-digest-1\0"

_type = builtins.type
_len = builtins.len
_map = builtins.map
_set = builtins.set
_list = builtins.list
_bytes = builtins.bytes
_bytearray = builtins.bytearray
_any = builtins.any
_id = builtins.id
_range = builtins.range
_type_mro = _type.__dict__["__mro__"].__get__
_list_copy = list.copy
_tuple_getitem = tuple.__getitem__
_tuple_len = tuple.__len__
_str_str = str.__str__
_bytes_getitem = bytes.__getitem__
_bytearray_copy = bytearray.copy
_int_int = int.__int__
_float_float = float.__float__
_float_ratio = float.as_integer_ratio
_complex_real = complex.real.__get__
_complex_imag = complex.imag.__get__
_fraction_num = fractions.Fraction.__dict__["_numerator"].__get__
_fraction_den = fractions.Fraction.__dict__["_denominator"].__get__
_decimal_nan = decimal.Decimal.is_nan
_decimal_inf = decimal.Decimal.is_infinite
_decimal_signed = decimal.Decimal.is_signed
_decimal_ratio = decimal.Decimal.as_integer_ratio
_decimal_adjusted = decimal.Decimal.adjusted
_gcd = math.gcd
_isnan = math.isnan
_fsum = math.fsum
_add = operator.add
_filterfalse = itertools.filterfalse
_fromkeys = dict.fromkeys
_encode = str.encode
_zip = builtins.zip
_min, _max = builtins.min, builtins.max
_repeat = itertools.repeat
_compress = itertools.compress
_is = operator.is_
_doubles = array.array
_float64_bytes = wire.float64_bytes  # little-endian on any host, as _float's
_join = "".join
_bjoin = b"".join
_pack = struct.Struct("<Q").pack
_pack_index = struct.Struct("<I").pack
_pack_double = struct.Struct("<d").pack
_sha256 = hashlib.sha256
_INF = float("inf")

# Kinds by type (exact, or the first base of the MRO that has one).
_NONE, _NUMBER, _STR, _BYTES, _LIST, _TUPLE = _range(6)
_KINDS = {
    _id(_type(None)): _NONE,
    _id(bool): _NUMBER,
    _id(int): _NUMBER,
    _id(float): _NUMBER,
    _id(complex): _NUMBER,
    _id(fractions.Fraction): _NUMBER,
    _id(decimal.Decimal): _NUMBER,
    _id(str): _STR,
    _id(bytes): _BYTES,
    _id(bytearray): _BYTES,
    _id(list): _LIST,
    _id(tuple): _TUPLE,
}
# Item types whose numbers are read in C, as float64s (exactness checked).
_FAST_NUMBERS = frozenset((int, bool, float))
_NEGATIVE_ZERO = struct.pack("<d", -0.0)
# The top bytes of little-endian float64s (sign and the exponent's high 7 bits) that only
# numbers of magnitude below 2**49 have: such an int is exactly its float64, and such a float
# is no NaN and no infinity (whose exponent bits are all set).
_SMALL_TOP_BYTES = _bytes(b for b in _range(256) if b & 0x7F < 0x43)
_STR_ONLY = frozenset((str,))
_FLUSH = 1 << 16  # bytes of the form kept before they are hashed
_BLOCK = 4096  # rows of a container written at once


class NotCanonical(Exception):
    """The value has a part with no canonical form (or is nested too deep)."""


class _State:
    """One digest under way: the hash, the pending bytes, the table of strings and bytes
    (value -> its token; tokens are prefix-free: one byte for the first 96 entries, else
    five), and whether a NaN was seen."""

    __slots__ = ("hash", "pending", "size", "strings", "codes", "blobs", "table", "nan")

    def __init__(self) -> None:
        self.hash = _sha256(VERSION)
        self.pending: list[bytes] = []
        self.size = 0
        self.strings: dict[str, bytes] = {}
        self.codes: dict[str, int] = {}  # the strings whose token is one byte: that byte
        self.blobs: dict[bytes, bytes] = {}
        self.table: list[bytes] = []
        self.nan = False

    def write(self, data: bytes) -> None:
        if _len(data) > _FLUSH:  # a long string's bytes: hashed where they are, not copied
            self.flush()
            self.hash.update(data)
            return
        self.pending.append(data)
        self.size += _len(data)
        if self.size > _FLUSH:
            self.flush()

    def flush(self) -> None:
        self.hash.update(_bjoin(self.pending))
        self.pending.clear()
        self.size = 0

    def add_strings(self, items: list[str]) -> None:
        """Put the strings of ``items`` (exact ``str``) not in the table yet into it, in the
        order of first appearance, mostly in C: a million distinct strings cost a few passes."""
        new = _list(_filterfalse(self.strings.__contains__, _fromkeys(items)))
        if not new:
            return
        first = _len(self.table)
        raw = _map(_encode, new, _repeat("utf-8"), _repeat("surrogatepass"))
        self.table.extend(_map(b"s".__add__, raw))
        short = _max(0, _min(_len(new), 0x60 - first))  # the one-byte tokens (as token())
        for text, index in _zip(new[:short], _range(first, first + short)):
            self.codes[text] = 0x80 + index
            self.strings[text] = _bytes((0x80 + index,))
        rest = _range(first + short, first + _len(new))
        self.strings.update(_zip(new[short:], _map(b"S".__add__, _map(_pack_index, rest))))

    def token(self, entry: bytes) -> bytes:
        """The token of a new table entry (``entry``: its kind byte and content)."""
        index = _len(self.table)
        self.table.append(entry)
        return _bytes((0x80 + index,)) if index < 0x60 else b"S" + _pack_index(index)


def digest(value: Any) -> tuple[str, bool] | None:
    """``(sha256 hex, comparable)`` of ``value``'s canonical form, or None where it has
    none. ``comparable`` is False when the value holds a NaN (it equals nothing then)."""
    state = _State()
    try:
        _value(state, value, 0)
    except Exception:  # noqa: BLE001 - no form (NotCanonical), too deep, a forged object
        return None
    state.write(b"|")
    table = state.table
    for start in _range(0, _len(table), _BLOCK):  # each entry's length, then the entry
        block = table[start : start + _BLOCK]
        sizes = _list(_map(_len, block))
        if _max(sizes) <= _FLUSH:
            state.write(_bjoin(_map(_add, _map(_pack, sizes), block)))
            continue
        for size, entry in _zip(sizes, block):  # the same bytes, a long entry not copied again
            state.write(_pack(size))
            state.write(entry)
    state.flush()
    return state.hash.hexdigest(), not state.nan


def _kind(value: Any) -> int | None:
    kind = _KINDS.get(_id(_type(value)))
    if kind is not None:
        return kind
    for base in _type_mro(_type(value)):
        kind = _KINDS.get(_id(base))
        if kind is not None:
            return kind
    return None


def _value(state: _State, value: Any, depth: int) -> None:
    kind = _kind(value)
    if kind is None:
        raise NotCanonical(_type(value).__name__)
    if kind == _NONE:
        state.write(b"N")
    elif kind == _NUMBER:
        state.write(_number(state, value))
    elif kind == _STR:
        state.write(_string(state, value))
    elif kind == _BYTES:
        state.write(_blob(state, value))
    else:
        if depth >= MAX_DEPTH:
            raise NotCanonical("nested too deep")
        if _type(value) is list or _type(value) is tuple:
            items = _list(value)  # the exact types iterate in C
        elif kind == _LIST:
            items = _list_copy(value)
        else:
            items = [_tuple_getitem(value, i) for i in _range(_tuple_len(value))]
        state.write((b"L" if kind == _LIST else b"T") + _pack(_len(items)))
        _items(state, items, depth + 1)


def _items(state: _State, items: list[Any], depth: int) -> None:
    """A container's items: in C where they are all strings, all plain numbers or all rows
    of strings (the same bytes as item by item), else item by item."""
    if not items:
        return
    types = _set(_map(_type, items))
    if types == _STR_ONLY:
        state.add_strings(items)  # type: ignore[arg-type]
        try:
            state.write(_bytes(_map(state.codes.__getitem__, items)))
        except KeyError:  # a string of a five-byte token
            state.write(_bjoin(_map(state.strings.__getitem__, items)))
        return
    elif types <= _FAST_NUMBERS:
        fast = _doubles_form(items, types)
        if fast is not None:
            state.write(fast)
            return
    elif (types == {tuple} or types == {list}) and depth < MAX_DEPTH:
        _rows(state, items, depth, b"T" if types == {tuple} else b"L")
        return
    for item in items:
        _value(state, item, depth)


def _rows(state: _State, rows: list[Any], depth: int, tag: bytes) -> None:
    """Lists or tuples (exact types), in blocks written at once where every row has the same
    length and only strings with one-byte tokens (Mbpp/255: 1.6 M tuples of the same five
    strings), else row by row."""
    codes = functools.partial(_map, state.codes.__getitem__)
    for start in _range(0, _len(rows), _BLOCK):
        block = rows[start : start + _BLOCK]
        lengths = _set(_map(_len, block))
        if _len(lengths) == 1:
            header = tag + _pack(lengths.pop())
            try:
                state.write(header + header.join(_map(_bytes, _map(codes, block))))
                continue
            except (KeyError, TypeError):  # another item, or a string not seen yet
                pass
        for row in block:
            _value(state, row, depth)


def _doubles_form(items: list[Any], types: Any) -> bytes | None:
    """The tokens of plain ints, bools and floats, each ``d`` and its float64, when each is
    exactly a float64 (else None: item by item, where the others are written).

    In C but for one pass. Most lists hold only numbers below 2**49 in magnitude, which the
    top byte of each float64 shows (sign and high exponent bits): every int there is exactly
    its float64 and no item is a NaN or an infinity, so nothing else is checked (HumanEval/100
    and /130 answer lists of a million such numbers: the item-wise checks were half the
    digest). Otherwise the ints are checked against their float64s and the floats for a NaN
    (``fsum`` is NaN exactly when an item is, unless it meets infinities of both signs or
    overflows). ``-0.0`` (rare) is made ``0.0``."""
    try:
        values = _doubles("d", items)
    except OverflowError:  # an int beyond float64's range
        return None
    raw = _float64_bytes(values)
    if _NEGATIVE_ZERO in raw:  # a -0.0 (or those bytes across two numbers): 0.0 it is
        values = _doubles("d", _map(_add, items, _repeat(0.0)))
        raw = _float64_bytes(values)
    if raw[7::8].translate(None, _SMALL_TOP_BYTES) and not _exact_doubles(items, types, values):
        return None  # or a NaN (equal to nothing): item by item marks it
    count = _len(values)
    out = _bytearray(9 * count)
    out[0::9] = b"d" * count
    for byte in _range(8):
        out[1 + byte :: 9] = raw[byte::8]
    return _bytes(out)


def _exact_doubles(items: list[Any], types: Any, values: Any) -> bool:
    """Whether every int of ``items`` is exactly its float64 and no float is a NaN."""
    if int in types:  # an int a float64 rounds is not its float64 (a bool always is)
        ints = _list(_compress(items, _map(_is, _map(_type, items), _repeat(int))))
        if _doubles("d", ints).tolist() != ints:
            return False
    if float not in types:
        return True
    try:
        return not _isnan(_fsum(values))
    except (ValueError, OverflowError):  # inf and -inf, or a sum past float64's range
        return values.tolist() == items


def _string(state: _State, value: Any) -> bytes:
    text = _str_str(value)
    token = state.strings.get(text)
    if token is None:
        raw = text.encode("utf-8", "surrogatepass")
        token = state.strings[text] = state.token(b"s" + raw)
        if _len(token) == 1:
            state.codes[text] = token[0]
    return token


def _blob(state: _State, value: Any) -> bytes:
    if bytearray in _type_mro(_type(value)):
        raw = _bytes(_bytearray_copy(value))
    else:
        raw = _bytes_getitem(value, slice(None))
    token = state.blobs.get(raw)
    if token is None:
        token = state.blobs[raw] = state.token(b"y" + raw)
    return token


def _number(state: _State, value: Any) -> bytes:
    """A real number's token, ``d`` and the float64 that is exactly it, or ``n<p>/<q>;`` in
    lowest terms where no float64 is; a complex's ``c`` and its two parts (its real part's
    alone when the imaginary part is 0, as ``==`` has it); ``?`` for a NaN, marked."""
    mro = _type_mro(_type(value))
    if complex in mro:
        real, imag = _complex_real(value), _complex_imag(value)
        if imag == 0:
            return _float(state, real)
        return b"c" + _float(state, real) + _float(state, imag)
    if float in mro:
        return _float(state, _float_float(value))
    if fractions.Fraction in mro:
        num, den = _int_int(_fraction_num(value)), _int_int(_fraction_den(value))
        if den < 0:
            num, den = -num, -den
        common = _gcd(num, den) or 1
        return _exact(num // common, den // common)
    if decimal.Decimal in mro:
        if _decimal_nan(value):
            state.nan = True
            return b"?"
        if _decimal_inf(value):
            return b"d" + _pack_double(-_INF if _decimal_signed(value) else _INF)
        if abs(_decimal_adjusted(value)) > wire.MAX_DECIMAL_EXPONENT:
            raise NotCanonical("a Decimal beyond the decoder's exponent bound")
        num, den = _decimal_ratio(value)
        return _exact(num, den)
    return _exact(_int_int(value), 1)  # int and bool


def _float(state: _State, number: float) -> bytes:
    if _isnan(number):
        state.nan = True
        return b"?"
    return b"d" + _pack_double(number + 0.0)


def _exact(num: int, den: int) -> bytes:
    """``num/den`` (lowest terms, ``den > 0``) as the float64 equal to it, if there is one."""
    try:
        near = num / den  # correctly rounded
    except OverflowError:
        near = None
    if near is not None and _float_ratio(near) == (num, den):
        return b"d" + _pack_double(near + 0.0)
    return f"n{num:x}/{den:x};".encode()


def summary(value: Any) -> str:
    """What the value is, in a few words: its type and size (for messages)."""
    kind = _kind(value)
    name = _type(value).__name__ if _type(_type(value).__name__) is str else "?"
    try:
        if kind in (_LIST, _TUPLE):
            size = list.__len__(value) if kind == _LIST else _tuple_len(value)
            return f"{name[:40]} of {size} items"
        if kind == _STR:
            return f"{name[:40]} of {str.__len__(value)} characters"
        if kind == _BYTES:
            raw = _bytearray_copy(value) if bytearray in _type_mro(_type(value)) else value
            return f"{name[:40]} of {_len(_bytes(raw))} bytes"
        if kind == _NUMBER and int in _type_mro(_type(value)):
            return f"{name[:40]} of {int.bit_length(_int_int(value))} bits"
    except BaseException:  # noqa: B036 - a summary is a courtesy
        pass
    return name[:40]
