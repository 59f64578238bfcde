"""The encoder: values of the candidate's process as tagged plain data (stdlib only).

It runs in the candidate's child (and the judge), so it picks an encoding by type identity,
never by asking the value: the exact type, or the first type of its MRO that has an encoding
(a subclass of list becomes a list, read with ``list``'s own unbound methods, so overriding
``__iter__`` or ``__eq__`` changes nothing; a namedtuple becomes a tuple, which compares equal
to it). Iterators are the one place candidate code runs during encoding: they are consumed
(that is the candidate's own code, in the sandbox, inside the case's time limit), up to
``MAX_ITER_ITEMS`` items; an exception raised while consuming travels too, and the trusted
iterator raises it after the items (a builtin exception as itself, anything else as
``CandidateError``). numpy is looked up lazily: the fork server never imports it.
The tags are listed in :mod:`wire`.

Encoding counts what decoding will charge (parts, units, int bits: the bounds of
:mod:`bounds`), so a value the trusted side would refuse is never sent: where it has a
canonical form (:mod:`canonical`: strings, bytes, numbers, lists and tuples of them) its
digest is sent instead (``["#", sha256, summary, comparable]``), which the trusted side
compares by equality; anything else over the bounds is opaque, as before.
"""

from __future__ import annotations

import array
import binascii
import builtins
import collections
import datetime
import decimal
import fractions
import itertools
import operator
import re
import sys
import types
from collections.abc import Callable
from typing import Any

if __name__.startswith("harness."):  # imported by the trusted side, as the package
    from harness.sandbox.channel import canonical, wire
# Otherwise codec.py loaded this file by path (the fork server) and put ``wire`` and
# ``canonical`` here first.

MAX_DEPTH, MAX_NODES, MAX_TEXT = wire.MAX_DEPTH, wire.MAX_NODES, wire.MAX_TEXT
MAX_UNITS, MAX_INT_BITS = wire.MAX_UNITS, wire.MAX_INT_BITS
MAX_TOTAL_INT_BITS = wire.MAX_TOTAL_INT_BITS
MAX_DECIMAL_TEXT, MAX_DECIMAL_EXPONENT = wire.MAX_DECIMAL_TEXT, wire.MAX_DECIMAL_EXPONENT
MAX_REPR, MAX_MESSAGE, MAX_ITER_ITEMS = wire.MAX_REPR, wire.MAX_MESSAGE, wire.MAX_ITER_ITEMS
NP_KINDS, NP_MAX_ITEMSIZE = wire.NP_KINDS, wire.NP_MAX_ITEMSIZE
hooks = wire.hooks

# Captured at import time (in the server, before any candidate code): a candidate may patch
# builtins or module attributes afterwards, and the encoder must not notice.
_type = builtins.type
_len = builtins.len
_range = builtins.range
_id = builtins.id
_bytes = builtins.bytes
_list = builtins.list
_iter = builtins.iter
_next = builtins.next
_type_mro = _type.__dict__["__mro__"].__get__
_type_vars = _type.__dict__["__dict__"].__get__
_type_getattr = _type.__getattribute__
_module_getattr = types.ModuleType.__getattribute__
_dict_get = dict.get
_modules = sys.modules
_int_int = int.__int__
_float_float = float.__float__
_float_hex = float.hex
_str_str = str.__str__
_bytes_getitem = bytes.__getitem__
_bytearray_copy = bytearray.copy
_list_copy = list.copy
_tuple_getitem = tuple.__getitem__
_tuple_len = tuple.__len__
_dict_items = dict.items
_dict_getitem = dict.__getitem__
_set_copy = set.copy
_frozenset_copy = frozenset.copy
_complex_real = complex.real.__get__
_complex_imag = complex.imag.__get__
_int_to_hex = int.__format__
_exc_str = BaseException.__str__
_range_start = range.__dict__["start"].__get__
_range_stop = range.__dict__["stop"].__get__
_range_step = range.__dict__["step"].__get__
_deque_iter = collections.deque.__iter__
_deque_maxlen = collections.deque.__dict__["maxlen"].__get__
_odict_iter = collections.OrderedDict.__iter__
_dd_factory = collections.defaultdict.__dict__["default_factory"].__get__
_fraction_num = fractions.Fraction.__dict__["_numerator"].__get__
_fraction_den = fractions.Fraction.__dict__["_denominator"].__get__
_decimal_str = decimal.Decimal.__str__
_decimal_finite = decimal.Decimal.is_finite
_decimal_adjusted = decimal.Decimal.adjusted
_date_iso = datetime.date.isoformat
_datetime_iso = datetime.datetime.isoformat
_datetime_tz = datetime.datetime.__dict__["tzinfo"].__get__
_time_iso = datetime.time.isoformat
_time_tz = datetime.time.__dict__["tzinfo"].__get__
_td_days = datetime.timedelta.__dict__["days"].__get__
_td_seconds = datetime.timedelta.__dict__["seconds"].__get__
_td_micro = datetime.timedelta.__dict__["microseconds"].__get__
_timezone = datetime.timezone
_array_typecode = array.array.__dict__["typecode"].__get__
_array_tolist = array.array.tolist
_b64encode = binascii.b2a_base64
_re_sub = re.compile(r"0x[0-9a-fA-F]+").sub

_range_len = range.__len__
_set = builtins.set
_map = builtins.map
_min, _max, _sum = builtins.min, builtins.max, builtins.sum
_compress, _repeat = itertools.compress, itertools.repeat
_is = operator.is_
# Vectors (``_vector``): the item types sent as JSON scalars, and the ints' bound (below it
# ints hash as themselves, so no hash flood; JSON reads them in linear time).
_VECTOR_NUMBERS = frozenset((int, bool, float, _type(None)))
_STR_ONLY = frozenset((str,))
_INT_ONLY = frozenset((int,))
_INT_FLOAT = frozenset((int, float))
_VECTOR_INT = 1 << 60
_DOUBLES_MIN = 64  # items of a float vector sent as float64s (shorter ones: JSON)
_DOUBLE_INT = 1 << 53  # an int up to this is exactly a float64
_array = array.array
_float64_bytes = wire.float64_bytes
_digest, _summary = canonical.digest, canonical.summary

_RERAISABLE_IDS = {_id(cls): name for name, cls in wire.RERAISABLE.items()}
_FACTORY_IDS = {_id(c): name for name, c in wire.FACTORIES.items()}
_ITER_KINDS = {_id(types.GeneratorType): "generator", _id(map): "map", _id(filter): "filter"}


class _Limit(Exception):
    """A value is too deep or too large to encode."""


def _short_repr(value: Any) -> str:
    """A bounded repr that never trusts a non-str result; addresses are masked for stability."""
    try:
        text = _type(value).__repr__(value)
        if _type(text) is not str:
            return "<unrepresentable>"
    except BaseException:  # noqa: B036 - a candidate's __repr__ may raise anything
        return "<unrepresentable>"
    if _len(text) > MAX_REPR:
        text = text[:MAX_REPR] + "..."
    return _re_sub("0x...", text)


def type_name(value: Any) -> str:
    cls = _type(value)
    try:
        name = _type_getattr(cls, "__qualname__")
        if _type(name) is str:
            return name[:MAX_REPR]
    except BaseException:  # noqa: B036
        pass
    return "?"


def _opaque(value: Any) -> list[Any]:
    hook = hooks.opaque
    if hook is not None:
        return hook(value)
    return ["o", type_name(value), _short_repr(value)]


def encode_value(value: Any) -> Any:
    """Turn a value into tagged plain data (JSON-able); never calls the value's own methods.

    The one exception is iteration of an iterator (the candidate's code, run in the sandbox).
    A value over the decoding bounds goes as its digest where it has a canonical form.
    """
    # parts, characters of text, units (as the decoder counts them), bits of big ints
    budget = [MAX_NODES, MAX_TEXT, MAX_UNITS, MAX_TOTAL_INT_BITS]
    try:
        return _enc(value, 0, budget)
    except _Limit as exc:
        return _too_large(value, exc.args[0])
    except RecursionError:
        return ["o", type_name(value), "<not encoded: too deep>"]
    except BaseException as exc:  # noqa: B036 - a hostile object must not break the channel
        return ["o", type_name(value), f"<not encoded: {_type(exc).__name__}>"]


def _too_large(value: Any, why: str) -> list[Any]:
    """A value over the bounds: its digest by equality, or opaque where it has none."""
    try:
        found = _digest(value)
        if found is not None:
            return ["#", found[0], _summary(value)[:MAX_REPR], found[1]]
    except BaseException:  # noqa: B036 - a hostile object: opaque, as before
        pass
    return ["o", type_name(value), f"<not encoded: value {why}>"]


_Encoder = Callable[[Any, int, list[int]], Any]


def _enc(value: Any, depth: int, budget: list[int]) -> Any:
    if depth > MAX_DEPTH:
        raise _Limit("too deep")
    budget[0] -= 1
    if budget[0] < 0:
        raise _Limit("too large")
    cls = _type(value)
    encoder = _ENCODERS_get(_id(cls))
    if encoder is not None:
        return encoder(value, depth, budget)
    return _enc_other(value, cls, depth, budget)


def _enc_other(value: Any, cls: type, depth: int, budget: list[int]) -> Any:
    """Values whose exact type has no encoding: numpy, subclasses, iterators, the rest."""
    mro = _type_mro(cls)
    numpy_types = _numpy_types()
    if numpy_types is not None:
        ndarray, generic = numpy_types
        for base in mro:
            if base is ndarray:
                return _enc_ndarray(value, ndarray, depth, budget)
            if base is generic:
                return _enc_np_scalar(value, generic, depth, budget)
    for base in mro:
        encoder = _ENCODERS_get(_id(base))
        if encoder is not None:
            return encoder(value, depth, budget)
    for base in mro:
        if "__next__" in _type_vars(base):
            return _enc_iterator(value, depth, budget)
    return _opaque(value)


def _spend(size: int, budget: list[int]) -> None:
    budget[1] -= size
    if budget[1] < 0:
        raise _Limit("too large")


def _units(count: int, budget: list[int]) -> None:
    """Elements, characters or bytes, as the decoder charges them (bounds.units)."""
    budget[2] -= count
    if budget[2] < 0:
        raise _Limit("too large")


def _text(text: str, budget: list[int]) -> str:
    _spend(_len(text), budget)
    return text


def _hex(value: Any, budget: list[int]) -> str:
    return _int_text(_int_to_hex(_int_int(value), "x"), budget)


def _int_text(text: str, budget: list[int]) -> str:
    """An int's hex digits, charged as the decoder charges them (bounds.int_bits)."""
    digits = _len(text)
    budget[1] -= digits
    if budget[1] < 0 or 4 * digits > MAX_INT_BITS + 4:
        raise _Limit("too large")
    if digits > 17:
        budget[3] -= 4 * digits
        if budget[3] < 0:
            raise _Limit("too large")
    return text


def _enc_none(value: Any, depth: int, budget: list[int]) -> Any:
    return ["n"]


def _enc_bool(value: Any, depth: int, budget: list[int]) -> Any:
    return ["b", value is True]


def _enc_int(value: Any, depth: int, budget: list[int]) -> Any:
    text = _int_to_hex(_int_int(value), "x")  # inlined _hex: the hottest encoder
    if _len(text) > 15:
        return ["i", _int_text(text, budget)]
    budget[1] -= _len(text)
    if budget[1] < 0:
        raise _Limit("too large")
    return ["i", text]


def _enc_float(value: Any, depth: int, budget: list[int]) -> Any:
    return ["f", _float_hex(_float_float(value))]


def _enc_complex(value: Any, depth: int, budget: list[int]) -> Any:
    return ["c", _float_hex(_complex_real(value)), _float_hex(_complex_imag(value))]


def _enc_str(value: Any, depth: int, budget: list[int]) -> Any:
    text = _str_str(value)
    size = _len(text)
    budget[1] -= size
    budget[2] -= size
    if budget[1] < 0 or budget[2] < 0:
        raise _Limit("too large")
    return ["s", text]


def _b64(raw: bytes, budget: list[int]) -> str:
    _spend(_len(raw), budget)
    _units(_len(raw), budget)
    return _b64encode(raw, newline=False).decode("ascii")


def _enc_bytes(value: Any, depth: int, budget: list[int]) -> Any:
    return ["y", _b64(_bytes_getitem(value, slice(None)), budget)]


def _enc_bytearray(value: Any, depth: int, budget: list[int]) -> Any:
    return ["Y", _b64(_bytes(_bytearray_copy(value)), budget)]


def _each(values: Any, depth: int, budget: list[int]) -> list[Any]:
    _units(_len(values), budget)
    if _len(values) > budget[0]:  # each is a part at least: over before any is encoded
        raise _Limit("too large")
    return [_enc(v, depth + 1, budget) for v in values]


def _pairs(pairs: Any, depth: int, budget: list[int]) -> list[Any]:
    _units(_len(pairs), budget)
    if 2 * _len(pairs) > budget[0]:
        raise _Limit("too large")
    return [[_enc(k, depth + 1, budget), _enc(v, depth + 1, budget)] for k, v in pairs]


def _enc_list(value: Any, depth: int, budget: list[int]) -> Any:
    items = _list_copy(value)
    return _vector("l", items, depth, budget) or ["l", _each(items, depth, budget)]


def _enc_tuple(value: Any, depth: int, budget: list[int]) -> Any:
    if _type(value) is tuple:
        items = _list(value)  # the exact type iterates in C
    else:
        items = [_tuple_getitem(value, i) for i in _range(_tuple_len(value))]
    return _vector("t", items, depth, budget) or ["t", _each(items, depth, budget)]


def _vector(kind: str, items: list[Any], depth: int, budget: list[int]) -> list[Any] | None:
    """``["v", kind, items]`` when the items are all plain numbers (ints within +-2**60, bools,
    floats) and None, or all strings: the frame's JSON carries them as they are, and neither
    side spends a node of Python code per item (EvalPlus's outputs are lists of thousands).
    Charged as the items one by one would be (a part each, units, text): only the form
    changes. None: item by item."""
    if not items or depth >= MAX_DEPTH:
        return None
    count = _len(items)
    if count > budget[0] or count > budget[2]:  # past the bounds however it is sent: a
        raise _Limit("too large")  # digest then, without building a form first
    types = _set(_map(_type, items))
    if types == _INT_ONLY:  # the common case: no filtering
        if not (-_VECTOR_INT < _min(items) and _max(items) < _VECTOR_INT):
            return None
        size = count
    elif types <= _VECTOR_NUMBERS:
        if count >= _DOUBLES_MIN and types <= _INT_FLOAT and float in types:
            doubles = _doubles(kind, items, types)
            if doubles is not None:
                _units(count, budget)
                budget[0] -= count
                budget[1] -= count
                if budget[0] < 0 or budget[1] < 0:
                    raise _Limit("too large")
                return doubles
        if int in types:
            ints = _list(_compress(items, _map(_is, _map(_type, items), _repeat(int))))
            if not (-_VECTOR_INT < _min(ints) and _max(ints) < _VECTOR_INT):
                return None
        size = count
    elif types == _STR_ONLY:
        size = _sum(_map(_len, items))
        _units(size, budget)
    else:
        return None
    _units(count, budget)
    budget[0] -= count
    budget[1] -= size
    if budget[0] < 0 or budget[1] < 0:
        raise _Limit("too large")
    return ["v", kind, items]


def _doubles(kind: str, items: list[Any], types: Any) -> list[Any] | None:
    """``["vf", kind, base64 of the float64s, the indexes of the ints]``: a long list of floats
    with few ints as raw float64s, converted in C on both sides (JSON spends ~300 ns a float
    writing and reading it back; HumanEval/130 answers a hundred lists of 100,000). Only
    where each int is exactly a float64; None: the JSON vector."""
    positions: list[int] = []
    if int in types:
        positions = _list(
            _compress(_range(_len(items)), _map(_is, _map(_type, items), _repeat(int)))
        )
        if _len(positions) > _len(items) // 8:
            return None
        ints = [items[i] for i in positions]
        if not (-_DOUBLE_INT <= _min(ints) and _max(ints) <= _DOUBLE_INT):
            return None
    raw = _float64_bytes(_array("d", items))
    return ["vf", kind, _b64encode(raw, newline=False).decode("ascii"), positions]


def _enc_set(value: Any, depth: int, budget: list[int]) -> Any:
    return ["S", _each(_set_copy(value), depth, budget)]


def _enc_frozenset(value: Any, depth: int, budget: list[int]) -> Any:
    return ["F", _each(_frozenset_copy(value), depth, budget)]


# Dicts are read through a view of their own storage: ``dict.copy`` of a subclass that
# overrides ``__iter__`` would call its ``keys()`` and ``__getitem__``.
def _enc_dict(value: Any, depth: int, budget: list[int]) -> Any:
    return ["d", _pairs(_list(_dict_items(value)), depth, budget)]


def _enc_counter(value: Any, depth: int, budget: list[int]) -> Any:
    return ["C", _pairs(_list(_dict_items(value)), depth, budget)]


def _enc_ordered_dict(value: Any, depth: int, budget: list[int]) -> Any:
    # The OrderedDict's own order (move_to_end changes it, not the plain dict's order).
    keys = _list(_odict_iter(value))
    return ["O", _pairs([(k, _dict_getitem(value, k)) for k in keys], depth, budget)]


def _enc_defaultdict(value: Any, depth: int, budget: list[int]) -> Any:
    factory = _FACTORY_IDS.get(_id(_dd_factory(value)))
    return ["dd", factory, _pairs(_list(_dict_items(value)), depth, budget)]


def _enc_keys(value: Any, depth: int, budget: list[int]) -> Any:
    return ["K", _each(_list(value), depth, budget)]  # exact view types: C iteration


def _enc_values(value: Any, depth: int, budget: list[int]) -> Any:
    return ["V", _each(_list(value), depth, budget)]


def _enc_items(value: Any, depth: int, budget: list[int]) -> Any:
    return ["P", _pairs(_list(value), depth, budget)]


def _enc_range(value: Any, depth: int, budget: list[int]) -> Any:
    parts = (_range_start(value), _range_stop(value), _range_step(value))
    try:
        _units(_range_len(value), budget)
    except OverflowError:  # more items than an index holds
        raise _Limit("too large") from None
    return ["r", *[_hex(p, budget) for p in parts]]


def _enc_deque(value: Any, depth: int, budget: list[int]) -> Any:
    maxlen = _deque_maxlen(value)
    size = None if maxlen is None else _hex(maxlen, budget)
    return ["q", _each(_list(_deque_iter(value)), depth, budget), size]


def _enc_fraction(value: Any, depth: int, budget: list[int]) -> Any:
    return ["Q", _hex(_fraction_num(value), budget), _hex(_fraction_den(value), budget)]


def _enc_decimal(value: Any, depth: int, budget: list[int]) -> Any:
    text = _str_str(_decimal_str(value))
    if _len(text) > MAX_DECIMAL_TEXT:  # as bounds.py refuses it
        raise _Limit("too large")
    if _decimal_finite(value) and abs(_decimal_adjusted(value)) > MAX_DECIMAL_EXPONENT:
        raise _Limit("too large")
    return ["D", _text(text, budget)]


def _fixed_zone(zone: Any) -> bool:
    return zone is None or _type(zone) is _timezone


def _enc_date(value: Any, depth: int, budget: list[int]) -> Any:
    return ["date", _str_str(_date_iso(value))]


def _enc_datetime(value: Any, depth: int, budget: list[int]) -> Any:
    if not _fixed_zone(_datetime_tz(value)):  # utcoffset() of another tzinfo is its own code
        return _opaque(value)
    return ["datetime", _str_str(_datetime_iso(value))]


def _enc_time(value: Any, depth: int, budget: list[int]) -> Any:
    if not _fixed_zone(_time_tz(value)):
        return _opaque(value)
    return ["time", _str_str(_time_iso(value))]


def _enc_timedelta(value: Any, depth: int, budget: list[int]) -> Any:
    parts = (_td_days(value), _td_seconds(value), _td_micro(value))
    return ["timedelta", *[_hex(p, budget) for p in parts]]


def _enc_array(value: Any, depth: int, budget: list[int]) -> Any:
    return ["ar", _str_str(_array_typecode(value)), _each(_array_tolist(value), depth, budget)]


def raised(exc: BaseException) -> list[Any]:
    """How the candidate's iterator ended: a builtin exception by name, anything else by type."""
    name = _RERAISABLE_IDS.get(_id(_type(exc)))
    try:
        message = _exc_str(exc)
        if _type(message) is not str:
            message = "<unprintable>"
    except BaseException:  # noqa: B036 - str() of the exception's argument is candidate code
        message = "<unprintable>"
    message = message[:MAX_MESSAGE]
    if name is not None:
        return ["raise", name, message, True]
    return ["raise", type_name(exc), message, False]


def _enc_iterator(value: Any, depth: int, budget: list[int]) -> Any:
    """Consume an iterator (the candidate's own code runs here, inside the case's time limit)."""
    try:
        iterator = _iter(value)
    except BaseException:  # noqa: B036 - not iterable after all (no usable __iter__)
        return _opaque(value)
    items: list[Any] = []
    end: list[Any] | None = None
    while True:
        if _len(items) >= MAX_ITER_ITEMS:
            end = ["more"]
            break
        try:
            item = _next(iterator)
        except StopIteration:
            break
        except BaseException as exc:  # noqa: B036 - travels: the trusted iterator raises it
            end = raised(exc)
            break
        _units(1, budget)
        items.append(_enc(item, depth + 1, budget))
    return ["I", _ITER_KINDS.get(_id(_type(value)), "iterator"), items, end]


def _numpy_types() -> tuple[Any, Any] | None:
    """``(ndarray, generic)`` if the candidate imported numpy: no numpy, no numpy values.

    Whatever sits in ``sys.modules`` under that name is the candidate's to choose; that is
    harmless, since only plain data leaves here and the trusted side builds the real array.
    """
    numpy = _dict_get(_modules, "numpy")
    if numpy is None:
        return None
    try:
        return _module_getattr(numpy, "ndarray"), _module_getattr(numpy, "generic")
    except BaseException:  # noqa: B036
        return None


def _dtype_text(dtype: Any, kinds: str) -> str | None:
    """``dtype.str`` for the dtypes that travel, else None."""
    kind = dtype.kind
    if _type(kind) is not str or kind not in kinds or dtype.fields is not None:
        return None
    if dtype.subdtype is not None or dtype.itemsize > NP_MAX_ITEMSIZE.get(kind, 1 << 30):
        return None  # long doubles: item() gives a numpy scalar back, not a Python number
    text = dtype.str
    return text if _type(text) is str else None


def _enc_np_scalar(value: Any, generic: Any, depth: int, budget: list[int]) -> Any:
    dtype = _type_getattr(generic, "dtype").__get__(value, generic)
    text = _dtype_text(dtype, "biufcUS")
    if text is None:
        return _opaque(value)
    return ["N", text, _enc(_type_getattr(generic, "item")(value), depth + 1, budget)]


def _enc_ndarray(value: Any, ndarray: Any, depth: int, budget: list[int]) -> Any:
    # A view as the base class: a subclass's ravel/tolist/dtype overrides are never called.
    base = _type_getattr(ndarray, "view")(value, ndarray)
    text = _dtype_text(_type_getattr(ndarray, "dtype").__get__(base, ndarray), NP_KINDS)
    if text is None:
        return _opaque(value)
    shape = [_int_int(n) for n in _type_getattr(ndarray, "shape").__get__(base, ndarray)]
    if _type_getattr(ndarray, "size").__get__(base, ndarray) > budget[0]:
        raise _Limit("too large")
    flat = _type_getattr(ndarray, "tolist")(_type_getattr(ndarray, "ravel")(base))
    return ["nd", text, shape, _each(flat, depth, budget)]


ENCODERS: dict[int, _Encoder] = {
    _id(_type(None)): _enc_none,
    _id(bool): _enc_bool,
    _id(int): _enc_int,
    _id(float): _enc_float,
    _id(complex): _enc_complex,
    _id(str): _enc_str,
    _id(bytes): _enc_bytes,
    _id(bytearray): _enc_bytearray,
    _id(list): _enc_list,
    _id(tuple): _enc_tuple,
    _id(set): _enc_set,
    _id(frozenset): _enc_frozenset,
    _id(dict): _enc_dict,
    _id(collections.Counter): _enc_counter,
    _id(collections.OrderedDict): _enc_ordered_dict,
    _id(collections.defaultdict): _enc_defaultdict,
    _id(collections.deque): _enc_deque,
    _id(range): _enc_range,
    _id(fractions.Fraction): _enc_fraction,
    _id(decimal.Decimal): _enc_decimal,
    _id(datetime.date): _enc_date,
    _id(datetime.datetime): _enc_datetime,
    _id(datetime.time): _enc_time,
    _id(datetime.timedelta): _enc_timedelta,
    _id(array.array): _enc_array,
}
for _view in ({}, collections.OrderedDict()):
    ENCODERS[_id(_type(_view.keys()))] = _enc_keys
    ENCODERS[_id(_type(_view.values()))] = _enc_values
    ENCODERS[_id(_type(_view.items()))] = _enc_items
_ENCODERS_get = ENCODERS.get
