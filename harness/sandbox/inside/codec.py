"""The value channel: plain data out of the child, checked strictly on the way in.

Stdlib only: this file is loaded by path inside the sandbox (by the fork server) and imported
normally by the trusted side. Values become tagged JSON (``[tag, payload...]``) and are rebuilt
on the trusted side by trusted constructors, so that the check's own expression treats them as
plain Python would have treated the candidate's value, without ever running candidate code:

==============  ==========================================  ==================================
tag             sent for                                    rebuilt as
==============  ==========================================  ==================================
n b i f c s y   None, bool, int, float, complex, str, bytes  the same
Y               bytearray                                   bytearray
l t S F d       list, tuple, set, frozenset, dict           the same
r               range                                       range
K V P           dict ``keys()``, ``values()``, ``items()``  views of a trusted dict
q               collections.deque                           deque (same maxlen)
C O dd          Counter, OrderedDict, defaultdict           the same type (see ``_FACTORIES``)
Q D             fractions.Fraction, decimal.Decimal         the same
date datetime   datetime.date, .datetime, .time,            the same (time zones: only None
time timedelta  .timedelta                                  or a fixed ``datetime.timezone``)
ar              array.array                                 array.array
I               any iterator (generators, map, zip, ...)    a trusted iterator of the items
N               a numpy scalar                              the numpy scalar of that dtype
nd              a numpy array                               ``numpy.array`` of that dtype/shape
o               anything else                               :class:`Opaque`
==============  ==========================================  ==================================

The encoder picks an encoding by type identity, never by asking the value: the exact type, or
the first type of its MRO that has an encoding (a subclass of list becomes a list, read with
``list``'s own unbound methods, so overriding ``__iter__`` or ``__eq__`` changes nothing; a
namedtuple becomes a tuple, which compares equal to it). Iterators are the one place candidate
code runs during encoding: they are consumed (that is the candidate's own code, in the sandbox,
inside the case's time limit), up to ``MAX_ITER_ITEMS`` items; an exception raised while
consuming travels too, and the trusted iterator raises it after the items (a builtin exception
as itself, anything else as :class:`CandidateError`). numpy is looked up lazily on both sides:
the fork server never imports it, and the trusted side imports it only to rebuild a numpy node.

The trusted side decodes a value, then the check's expression works on it there: decoding is
bounded (``MAX_INT_BITS`` and ``MAX_TOTAL_INT_BITS``, ``MAX_UNITS`` elements, characters and
range items per value and ``MAX_SAMPLE_UNITS`` per sample, ``MAX_DEPTH``, Decimal and array
bounds, and no hash flood: :func:`check_hash_flood`), so that C-level work on what it accepts
(gcd, sorting, hashing into a set) stays cheap; a value over a bound raises :class:`TooLarge`,
"value too large: ...", the case's failure.

Frames on the child's result pipe: a 13-byte header (magic, kind, case index, payload length)
and a JSON payload. The server reads headers only; the trusted side decodes payloads.
"""

from __future__ import annotations

import array
import binascii
import builtins
import collections
import datetime
import decimal
import fractions
import json
import math
import re
import struct
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

# Captured at import time (in the server, before any candidate code): a candidate may patch
# builtins or module attributes afterwards, and the encoder must not notice.
_type = builtins.type
_len = builtins.len
_range = builtins.range
_repr = builtins.repr
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
_b64decode = binascii.a2b_base64
_json_dumps = json.dumps
_json_loads = json.loads
_re_sub = re.compile(r"0x[0-9a-fA-F]+").sub
_pack = struct.Struct(">4sBII").pack
_unpack = struct.Struct(">4sBII").unpack

MAGIC = b"CEvF"
HEADER_SIZE = 13
KIND_READY = 1  # the module (program + test setup) executed, or failed
KIND_CASE = 2  # one case's outcome
KIND_END = 3  # end of the child's work (coverage data)
MAX_FRAME = 32 * 1024 * 1024
MAX_DEPTH = 100
MAX_NODES = 1_000_000
MAX_TEXT = 16 * 1024 * 1024
MAX_REPR = 200
MAX_MESSAGE = 2000
# An iterator is consumed up to this many items (an endless one would otherwise end as a
# timeout even where the check only takes ``next()`` of it); past it the trusted iterator
# raises TransferLimit, so a check that reads further fails instead of seeing a short iterator.
MAX_ITER_ITEMS = 100_000
MAX_NDIM = 64
MAX_DIM = 1 << 40

# Builtin exceptions an iterator may raise that the trusted side re-raises as themselves.
# StopIteration would end the trusted iterator early, and BaseException-only ones (SystemExit,
# KeyboardInterrupt) must not stop pytest: those arrive as CandidateError.
_RERAISABLE: dict[str, type[Exception]] = {
    name: cls
    for name, cls in vars(builtins).items()
    if isinstance(cls, type)
    and issubclass(cls, Exception)
    and not issubclass(cls, (StopIteration, StopAsyncIteration))
}
_RERAISABLE_IDS = {_id(cls): name for name, cls in _RERAISABLE.items()}
# defaultdict factories that are rebuilt as themselves; any other (a lambda of the candidate)
# is rebuilt as None: equality is the same, only a missing key raises KeyError here.
_FACTORIES: dict[str, type] = {
    c.__name__: c
    for c in (int, float, complex, str, bytes, list, tuple, dict, set, frozenset, bool)
}
_FACTORY_IDS = {_id(c): name for name, c in _FACTORIES.items()}
_ITER_KINDS = {_id(types.GeneratorType): "generator", _id(map): "map", _id(filter): "filter"}
_NP_KINDS = "biufcUSO"  # numpy dtype kinds that travel (not datetime64, void, structured)
_NP_MAX_ITEMSIZE = {"f": 8, "c": 16}


class ChannelError(Exception):
    """The bytes on the result channel are malformed, forged or out of order."""


class CandidateError(Exception):
    """A non-builtin exception the candidate's iterator raised (its type is in the message)."""


class TransferLimit(Exception):
    """The candidate's iterator yielded more than ``MAX_ITER_ITEMS`` items; the rest stayed."""


class TooLarge(ChannelError):
    """A value over a decoding bound: the case fails with "value too large: ..." (the
    candidate's failure, never the harness's)."""


class _Limit(Exception):
    """A value is too deep or too large to encode."""


class Opaque:
    """A value the child could not express as plain data: equal to nothing but itself."""

    __slots__ = ("type_name", "text")

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return _id(self)

    def __repr__(self) -> str:
        return f"<opaque {self.type_name}: {self.text}>"


class ReplayIterator:
    """The candidate's iterator as the check sees it: its items, then what ended it.

    Deliberately no ``__len__``, ``__eq__`` or ``__bool__``: ``len()`` raises TypeError, ``==``
    is identity and ``bool()`` is True, as for the candidate's own iterator.
    """

    __slots__ = ("_items", "_end", "_kind")

    def __init__(self, items: list[Any], end: BaseException | None, kind: str) -> None:
        self._items: Iterator[Any] = _iter(items)
        self._end = end
        self._kind = kind

    def __iter__(self) -> ReplayIterator:
        return self

    def __next__(self) -> Any:
        for item in self._items:
            return item
        end, self._end = self._end, None  # like a generator: it raises once, then stops
        if end is not None:
            raise end
        raise StopIteration

    def __repr__(self) -> str:
        return f"<{self._kind} from the sandbox>"


def _replay_generator(items: list[Any], end: BaseException | None) -> Iterator[Any]:
    yield from items
    if end is not None:
        raise end


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


def _type_name(value: Any) -> str:
    cls = _type(value)
    try:
        name = _type_getattr(cls, "__qualname__")
        if _type(name) is str:
            return name[:MAX_REPR]
    except BaseException:  # noqa: B036
        pass
    return "?"


# The object bridge (bridge.py) sets these in a judge's child and in the judge: an object with
# no plain encoding then travels as a handle (``["h", id, type]``) that the judge operates on
# through the bridge, instead of as an opaque snapshot. None everywhere else.
opaque_hook: Callable[[Any], list[Any]] | None = None
handle_hook: Callable[[list[Any]], Any] | None = None


def _opaque(value: Any) -> list[Any]:
    if opaque_hook is not None:
        return opaque_hook(value)
    return ["o", _type_name(value), _short_repr(value)]


def encode_value(value: Any) -> Any:
    """Turn a value into tagged plain data (JSON-able); never calls the value's own methods.

    The one exception is iteration of an iterator (the candidate's code, run in the sandbox).
    """
    budget = [MAX_NODES, MAX_TEXT]
    try:
        return _enc(value, 0, budget)
    except _Limit as exc:
        return ["o", _type_name(value), f"<not encoded: {exc.args[0]}>"]
    except RecursionError:
        return ["o", _type_name(value), "<not encoded: too deep>"]
    except BaseException as exc:  # noqa: B036 - a hostile object must not break the channel
        return ["o", _type_name(value), f"<not encoded: {_type(exc).__name__}>"]


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


def _text(text: str, budget: list[int]) -> str:
    _spend(_len(text), budget)
    return text


def _hex(value: Any, budget: list[int]) -> str:
    return _text(_int_to_hex(_int_int(value), "x"), budget)


def _enc_none(value: Any, depth: int, budget: list[int]) -> Any:
    return ["n"]


def _enc_bool(value: Any, depth: int, budget: list[int]) -> Any:
    return ["b", value is True]


def _enc_int(value: Any, depth: int, budget: list[int]) -> Any:
    text = _int_to_hex(_int_int(value), "x")  # inlined _hex: the hottest encoder
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
    budget[1] -= _len(text)
    if budget[1] < 0:
        raise _Limit("too large")
    return ["s", text]


def _b64(raw: bytes, budget: list[int]) -> str:
    _spend(_len(raw), budget)
    return _b64encode(raw, newline=False).decode("ascii")


def _enc_bytes(value: Any, depth: int, budget: list[int]) -> Any:
    return ["y", _b64(_bytes_getitem(value, slice(None)), budget)]


def _enc_bytearray(value: Any, depth: int, budget: list[int]) -> Any:
    return ["Y", _b64(_bytes(_bytearray_copy(value)), budget)]


def _each(values: Any, depth: int, budget: list[int]) -> list[Any]:
    return [_enc(v, depth + 1, budget) for v in values]


def _pairs(pairs: Any, depth: int, budget: list[int]) -> list[Any]:
    return [[_enc(k, depth + 1, budget), _enc(v, depth + 1, budget)] for k, v in pairs]


def _enc_list(value: Any, depth: int, budget: list[int]) -> Any:
    return ["l", _each(_list_copy(value), depth, budget)]


def _enc_tuple(value: Any, depth: int, budget: list[int]) -> Any:
    items = [_tuple_getitem(value, i) for i in _range(_tuple_len(value))]
    return ["t", _each(items, depth, budget)]


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
    return ["r", *[_hex(p, budget) for p in parts]]


def _enc_deque(value: Any, depth: int, budget: list[int]) -> Any:
    maxlen = _deque_maxlen(value)
    size = None if maxlen is None else _hex(maxlen, budget)
    return ["q", _each(_list(_deque_iter(value)), depth, budget), size]


def _enc_fraction(value: Any, depth: int, budget: list[int]) -> Any:
    return ["Q", _hex(_fraction_num(value), budget), _hex(_fraction_den(value), budget)]


def _enc_decimal(value: Any, depth: int, budget: list[int]) -> Any:
    return ["D", _text(_str_str(_decimal_str(value)), budget)]


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


def _raised(exc: BaseException) -> list[Any]:
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
    return ["raise", _type_name(exc), message, False]


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
            end = _raised(exc)
            break
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
    if dtype.subdtype is not None or dtype.itemsize > _NP_MAX_ITEMSIZE.get(kind, 1 << 30):
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
    text = _dtype_text(_type_getattr(ndarray, "dtype").__get__(base, ndarray), _NP_KINDS)
    if text is None:
        return _opaque(value)
    shape = [_int_int(n) for n in _type_getattr(ndarray, "shape").__get__(base, ndarray)]
    if _type_getattr(ndarray, "size").__get__(base, ndarray) > budget[0]:
        raise _Limit("too large")
    flat = _type_getattr(ndarray, "tolist")(_type_getattr(ndarray, "ravel")(base))
    return ["nd", text, shape, _each(flat, depth, budget)]


_ENCODERS: dict[int, _Encoder] = {
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
    _ENCODERS[_id(_type(_view.keys()))] = _enc_keys
    _ENCODERS[_id(_type(_view.values()))] = _enc_values
    _ENCODERS[_id(_type(_view.items()))] = _enc_items
_ENCODERS_get = _ENCODERS.get


_HEX_INT = re.compile(r"-?[0-9a-f]+\Z")
_FLOAT_TEXT = re.compile(r"(-?0x[0-9a-f](\.[0-9a-f]{1,13})?p[-+][0-9]{1,4}|-?inf|-?nan)\Z")
_DECIMAL_TEXT = re.compile(r"-?((\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|Infinity|s?NaN\d*)\Z", re.ASCII)
_NP_DTYPE = re.compile(r"[<>|=]?[biufcUSO][0-9]{0,6}\Z")
_NP_ITEM_TYPES: dict[str, tuple[type, ...]] = {
    "b": (bool,),
    "i": (int,),
    "u": (int,),
    "f": (float,),
    "c": (complex,),
    "U": (str,),
    "S": (bytes,),
}
_HASHABLE_TAGS = frozenset("n b i f c s y t F o r Q D N I date datetime time timedelta".split())
# Nodes whose hashes a candidate can steer into many collisions, which the flood check looks
# at: ints from 2**60 on (ints hash modulo 2**61 - 1; below it only -1 and -2 share one),
# and what hashes by combining numbers (tuples, complex, Fraction, ...). Not str, bytes or
# dates (salted hashes), nor floats (at most ~34 floats share a hash).
_FLOOD_TAGS = frozenset("t F c Q D N r timedelta".split())
_SMALL_INT_DIGITS = 15  # hex digits of an int below 2**60

# Bounds on what the trusted process decodes, and so later compares: every superlinear step
# there (gcd, int <-> str, division, sorting, hashing into a set or dict) is C code that no
# signal interrupts, so each must stay cheap on any value the decoder accepts.
MAX_INT_BITS = 1 << 17  # gcd or divmod of two such ints: ~20 ms; factorial(10_000) fits
MAX_TOTAL_INT_BITS = 1 << 25  # of all the ints beyond 64 bits of one value
# Elements, characters, bytes and range lengths of one value: sorting or hashing that many
# takes ~1 s; honest answers are far smaller (a 10**5-element list is 10**5).
MAX_UNITS = 4_000_000
MAX_SAMPLE_UNITS = 4 * MAX_UNITS  # of all the values of one sample (``decode_value``'s ``left``)
MAX_DECIMAL_TEXT = 10_000  # characters of a Decimal (its digits)
MAX_DECIMAL_EXPONENT = 100_000  # int(d) of a larger one is a huge int
MAX_ARRAY_NDIM = 32
# Extra equality tests a set or dict of the value's parts would make (parts that share one
# hash but differ): a crafted flood costs n**2 of them, honest data ~0.
MAX_FLOOD_COST = 2_000_000
_FLOOD_MIN_PARTS = 64  # fewer parts cannot cost much, whatever their hashes
_ITER_KIND_NAMES = frozenset(("generator", "map", "filter", "iterator"))
_TYPECODES = frozenset(array.typecodes)


def decode_value(data: Any, left: list[int] | None = None) -> Any:
    """Rebuild a value from tagged plain data, validating every tag, type, depth and size.

    A value over a bound (``MAX_*``) raises :class:`TooLarge`, anything malformed
    :class:`ChannelError`. ``left``, shared by the values of one sample, holds the units they
    may still use together (``MAX_SAMPLE_UNITS`` to start with).
    """
    units = MAX_UNITS if left is None else min(MAX_UNITS, left[0])
    if units <= 0:
        raise TooLarge(f"value too large: the sample's values are over {MAX_SAMPLE_UNITS} units")
    # nodes, units, int bits, the values the flood check looks at, and the units bound
    budget: list[Any] = [MAX_NODES, units, MAX_TOTAL_INT_BITS, [], units]
    try:
        value = _dec(data, 0, budget)
        check_hash_flood(budget[3])
        return value
    except ChannelError:
        raise
    except (RecursionError, MemoryError) as exc:
        raise ChannelError(f"undecodable value: {type(exc).__name__}") from None
    except Exception as exc:  # any surprise in forged data is a channel error, never a crash
        raise ChannelError(f"undecodable value: {type(exc).__name__}: {exc}") from None
    finally:
        if left is not None:  # what this value used, refused or not
            left[0] -= units - max(budget[1], 0)


def _float(text: Any) -> float:
    if type(text) is not str or not _FLOAT_TEXT.match(text):
        raise ChannelError("bad float")
    return float.fromhex(text)


def _int(text: Any, budget: list[Any]) -> int:
    if type(text) is not str or not _HEX_INT.match(text):
        raise ChannelError("bad int")
    _int_bits(len(text), budget)
    return int(text, 16)


def _int_bits(digits: int, budget: list[Any]) -> None:
    """Charge an int of ``digits`` hex digits (a sign counts as one: a bound, not a size);
    machine-size ints (up to 64 bits) only count as parts."""
    bits = 4 * digits
    if bits > MAX_INT_BITS + 4:
        raise TooLarge(
            f"value too large: an int of about {bits} bits (the bound is {MAX_INT_BITS})"
        )
    if digits <= 17:
        return
    budget[2] -= bits
    if budget[2] < 0:
        raise TooLarge(f"value too large: its ints have over {MAX_TOTAL_INT_BITS} bits in all")


def _units(count: int, budget: list[Any], what: str) -> None:
    """Charge ``count`` elements, characters or bytes (of ``what``) to the value."""
    budget[1] -= count
    if budget[1] < 0:
        raise TooLarge(
            f"value too large: over {budget[4]} elements and characters in all "
            f"(at {what} of {count})"
        )


def _str(text: Any, limit: int = MAX_TEXT) -> str:
    if type(text) is not str or len(text) > limit:
        raise ChannelError("bad text")
    return text


def _items(payload: Any, depth: int, budget: list[Any]) -> list[Any]:
    if type(payload) is not list:
        raise ChannelError("bad container")
    _units(len(payload), budget, "a container")
    return [_dec(v, depth + 1, budget) for v in payload]


def _hashable_items(payload: Any, depth: int, budget: list[Any]) -> list[Any]:
    items = _items(payload, depth, budget)
    if not all(type(v) is list and v and v[0] in _HASHABLE_TAGS for v in payload):
        raise ChannelError("unhashable set element")
    check_hash_flood(items)  # before a set is built of them
    return items


def _no_duplicates(items: list[Any], unique: int) -> None:
    if unique != len(items) and not any(v != v for v in items):
        raise ChannelError("duplicate elements")


def _dict(payload: Any, depth: int, budget: list[Any]) -> dict[Any, Any]:
    if type(payload) is not list:
        raise ChannelError("bad dict")
    _units(len(payload), budget, "a dict")
    keys, values = [], []
    for pair in payload:
        if type(pair) is not list or len(pair) != 2:
            raise ChannelError("bad dict item")
        if type(pair[0]) is not list or not pair[0] or pair[0][0] not in _HASHABLE_TAGS:
            raise ChannelError("unhashable dict key")
        keys.append(_dec(pair[0], depth + 1, budget))
        values.append(_dec(pair[1], depth + 1, budget))
    check_hash_flood(keys)  # before a dict is built of them
    out = dict(zip(keys, values, strict=True))
    _no_duplicates(keys, len(out))
    return out


def check_hash_flood(parts: list[Any]) -> None:
    """TooLarge if a set or dict of these decoded parts would cost more than
    ``MAX_FLOOD_COST`` extra equality tests: parts that share one hash and differ.

    Linear: the hashes are counted in a dict keyed by the hash, which cannot be flooded itself
    (a hash is below 2**63, and ints collide only modulo 2**61 - 1: a few per bucket).
    Whether the parts of a shared hash differ is decided on their encoding, as text (str
    hashes are salted per process), so equal duplicates, common in honest lists, cost nothing.
    """
    if len(parts) < _FLOOD_MIN_PARTS:
        return
    try:
        hashes: list[int | None] = list(map(hash, parts))
    except TypeError:  # a tuple holding a list: no set or dict can hold it
        hashes = [_hash_or_none(value) for value in parts]
    counts = collections.Counter(hashes)
    shared = {h: n for h, n in counts.items() if n > 1 and h is not None}
    if not shared:
        return
    groups: dict[int, list[int]] = {h: [] for h in shared}
    for index, h in enumerate(hashes):
        if h in shared:
            groups[h].append(index)
    cost = 0
    for members in groups.values():
        first = parts[members[0]]
        if all(parts[i] is first or parts[i] == first for i in members):
            continue  # one value, repeated
        seen: set[str] = set()
        for i in members:  # stops as soon as the group alone is over the bound
            seen.add(_json_dumps(encode_value(parts[i])))
            if cost + len(members) * (len(seen) - 1) > MAX_FLOOD_COST:
                raise TooLarge(
                    f"value too large: {len(members)} parts of it share one hash, and differ "
                    "(a set or dict of them would take quadratic time)"
                )
        cost += len(members) * (len(seen) - 1)


def _hash_or_none(value: Any) -> int | None:
    try:
        return hash(value)
    except TypeError:
        return None


def _known(name: Any, names: Any) -> bool:
    return type(name) is str and name in names


def _iso(kind: type[Any], text: Any) -> Any:
    value = kind.fromisoformat(_str(text, 64))
    if type(value) is not kind:
        raise ChannelError("bad date or time")
    return value


def _end_of_iterator(end: Any) -> BaseException | None:
    if end is None:
        return None
    if end == ["more"]:
        return TransferLimit(f"the candidate's iterator yielded more than {MAX_ITER_ITEMS} items")
    if type(end) is not list or len(end) != 4 or end[0] != "raise" or type(end[3]) is not bool:
        raise ChannelError("bad iterator end")
    name, message = _str(end[1], MAX_REPR), _str(end[2], MAX_MESSAGE)
    if not end[3]:
        return CandidateError(f"{name}: {message}" if message else name)
    cls = _RERAISABLE.get(name)
    if cls is None:
        raise ChannelError("unknown builtin exception")
    try:
        return cls(message)
    except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs five arguments
        return CandidateError(f"{name}: {message}")


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # pragma: no cover - the child had numpy, so this process has it
        raise ChannelError("a numpy value, but numpy is not installed here") from None
    return numpy


def _np_dtype(numpy: Any, text: Any, kinds: str) -> Any:
    if type(text) is not str or not _NP_DTYPE.match(text):
        raise ChannelError("bad dtype")
    dtype = numpy.dtype(text)
    if dtype.kind not in kinds or dtype.fields is not None or dtype.subdtype is not None:
        raise ChannelError("bad dtype")
    if dtype.itemsize > _NP_MAX_ITEMSIZE.get(dtype.kind, 1 << 30):
        raise ChannelError("bad dtype")
    return dtype


def _ndarray(data: list[Any], depth: int, budget: list[Any]) -> Any:
    numpy = _numpy()
    dtype = _np_dtype(numpy, data[1], _NP_KINDS)
    shape = data[2]
    if type(shape) is not list or len(shape) > MAX_NDIM:
        raise ChannelError("bad shape")
    if not all(type(n) is int and 0 <= n <= MAX_DIM for n in shape):
        raise ChannelError("bad shape")
    # An empty array's other axes are still iterated (list(a) of shape (2**40, 0)).
    if len(shape) > MAX_ARRAY_NDIM or math.prod(n for n in shape if n) > MAX_UNITS:
        raise TooLarge(f"value too large: an array of shape {tuple(shape)!r:.100}")
    items = _items(data[3], depth, budget)
    if math.prod(shape) != len(items):
        raise ChannelError("shape does not match the items")
    if dtype.kind == "O":
        flat = numpy.empty(len(items), dtype=object)
        for i, item in enumerate(items):  # one by one: a list item must stay one element
            flat[i] = item
    else:
        allowed = _NP_ITEM_TYPES[dtype.kind]
        if not all(type(item) in allowed for item in items):
            raise ChannelError("array items do not match the dtype")
        flat = numpy.array(items, dtype=dtype)
    return flat.reshape(shape)


def _np_scalar(data: list[Any], depth: int, budget: list[Any]) -> Any:
    dtype = _np_dtype(_numpy(), data[1], "biufcUS")
    item = _dec(data[2], depth + 1, budget)
    if type(item) not in _NP_ITEM_TYPES[dtype.kind]:
        raise ChannelError("scalar does not match the dtype")
    return dtype.type(item)


def _dec(data: Any, depth: int, budget: list[Any]) -> Any:
    if depth > MAX_DEPTH + 2:
        raise TooLarge(f"value too large: nested deeper than {MAX_DEPTH}")
    budget[0] -= 1
    if budget[0] < 0:
        raise TooLarge(f"value too large: over {MAX_NODES} parts")
    if type(data) is not list or not data or type(data[0]) is not str:
        raise ChannelError("bad value node")
    tag, size = data[0], len(data)
    if tag == "i" and size == 2:
        text = data[1]  # inlined _int: the hottest node
        if type(text) is not str or not _HEX_INT.match(text):
            raise ChannelError("bad int")
        if len(text) <= _SMALL_INT_DIGITS:
            return int(text, 16)
        _int_bits(len(text), budget)
        value = int(text, 16)
        budget[3].append(value)
        return value
    value = _dec_node(data, tag, size, depth, budget)
    if tag in _FLOOD_TAGS:
        budget[3].append(value)
    return value


def _dec_node(data: list[Any], tag: str, size: int, depth: int, budget: list[Any]) -> Any:
    if tag == "n" and size == 1:
        return None
    if tag == "b" and size == 2 and type(data[1]) is bool:
        return data[1]
    if tag == "f" and size == 2:
        return _float(data[1])
    if tag == "c" and size == 3:
        return complex(_float(data[1]), _float(data[2]))
    if tag == "s" and size == 2 and type(data[1]) is str:
        _units(len(data[1]), budget, "a string")
        return data[1]
    if tag in ("y", "Y") and size == 2 and type(data[1]) is str:
        try:
            raw = bytes(_b64decode(data[1].encode("ascii"), strict_mode=True))
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise ChannelError("bad bytes") from None
        _units(len(raw), budget, "a bytes value")
        return raw if tag == "y" else bytearray(raw)
    if tag == "l" and size == 2:
        items = _items(data[1], depth, budget)
        if items:  # a check may make it a tuple and hash that (set(map(tuple, v)))
            budget[3].append(tuple(items))
        return items
    if tag == "t" and size == 2:
        return tuple(_items(data[1], depth, budget))
    if tag in ("S", "F") and size == 2:
        items = _hashable_items(data[1], depth, budget)
        result = set(items) if tag == "S" else frozenset(items)
        _no_duplicates(items, len(result))
        return result
    if tag == "d" and size == 2:
        return _dict(data[1], depth, budget)
    if tag == "C" and size == 2:
        counter: collections.Counter[Any] = collections.Counter()
        dict.update(counter, _dict(data[1], depth, budget))  # not Counter.update: it adds
        return counter
    if tag == "O" and size == 2:
        return collections.OrderedDict(_dict(data[1], depth, budget))
    if tag == "dd" and size == 3 and (data[1] is None or _known(data[1], _FACTORIES)):
        factory = None if data[1] is None else _FACTORIES[data[1]]
        return collections.defaultdict(factory, _dict(data[2], depth, budget))
    if tag == "K" and size == 2:
        keys = _hashable_items(data[1], depth, budget)
        view = dict.fromkeys(keys)
        _no_duplicates(keys, len(view))
        return view.keys()
    if tag == "V" and size == 2:
        return dict(enumerate(_items(data[1], depth, budget))).values()
    if tag == "P" and size == 2:
        return _dict(data[1], depth, budget).items()
    if tag == "r" and size == 4:
        start, stop, step = _int(data[1], budget), _int(data[2], budget), _int(data[3], budget)
        if step == 0:
            raise ChannelError("range step is zero")
        value = range(start, stop, step)
        length = max(0, (stop - start + step - (1 if step > 0 else -1)) // step)
        _units(length, budget, "a range")
        # Its items hash alike when the step is a multiple of 2**61 - 1 (set(v) in a check).
        if length > 1 and step % sys.hash_info.modulus == 0 and length**2 > MAX_FLOOD_COST:
            raise TooLarge("value too large: a range whose items all share one hash")
        return value
    if tag == "q" and size == 3:
        items = _items(data[1], depth, budget)
        maxlen = None if data[2] is None else _int(data[2], budget)
        if maxlen is not None and not 0 <= len(items) <= maxlen:
            raise ChannelError("deque longer than its maxlen")
        return collections.deque(items, maxlen)
    if tag == "Q" and size == 3:
        numerator, denominator = _int(data[1], budget), _int(data[2], budget)
        if denominator <= 0 or math.gcd(numerator, denominator) != 1:
            raise ChannelError("fraction not in lowest terms")
        return fractions.Fraction(numerator, denominator)
    if tag == "D" and size == 2:
        text = _str(data[1])
        if len(text) > MAX_DECIMAL_TEXT:
            raise TooLarge(f"value too large: a Decimal of {len(text)} characters")
        if not _DECIMAL_TEXT.match(text):
            raise ChannelError("bad decimal")
        number = decimal.Decimal(text)
        if number.is_finite() and abs(number.adjusted()) > MAX_DECIMAL_EXPONENT:
            raise TooLarge(f"value too large: a Decimal of exponent {number.adjusted()}")
        return number
    if tag == "date" and size == 2:
        return _iso(datetime.date, data[1])
    if tag == "datetime" and size == 2:
        return _iso(datetime.datetime, data[1])
    if tag == "time" and size == 2:
        return _iso(datetime.time, data[1])
    if tag == "timedelta" and size == 4:
        days, seconds, micro = (_int(data[i], budget) for i in (1, 2, 3))
        if not (0 <= seconds < 86400 and 0 <= micro < 1_000_000):
            raise ChannelError("timedelta not normalized")
        return datetime.timedelta(days, seconds, micro)
    if tag == "ar" and size == 3 and _known(data[1], _TYPECODES):
        items = _items(data[2], depth, budget)
        kind = str if data[1] in "uw" else float if data[1] in "fd" else int
        if not all(type(item) is kind for item in items):
            raise ChannelError("array items do not match the typecode")
        return array.array(data[1], items)
    if tag == "I" and size == 4 and _known(data[1], _ITER_KIND_NAMES):
        items = _items(data[2], depth, budget)
        end = _end_of_iterator(data[3])
        if data[1] == "generator":
            return _replay_generator(items, end)
        replay = ReplayIterator(items, end, data[1])
        if data[1] == "map":
            return map(_same, replay)
        if data[1] == "filter":
            return filter(_keep, replay)
        return replay
    if tag == "N" and size == 3:
        return _np_scalar(data, depth, budget)
    if tag == "nd" and size == 4:
        return _ndarray(data, depth, budget)
    if tag == "o" and size == 3 and type(data[1]) is str and type(data[2]) is str:
        return Opaque(data[1][:MAX_REPR], data[2][: MAX_REPR + 3])
    if tag == "h" and handle_hook is not None:
        return handle_hook(data)
    raise ChannelError(f"bad value node with tag {tag[:10]!r}")


def _same(item: Any) -> Any:
    return item


def _keep(item: Any) -> bool:
    return True


def plain(value: Any) -> Any:
    """Encode then decode in-process: strips custom objects (``__plain__`` in checks)."""
    return decode_value(_json_loads(_json_dumps(encode_value(value))))


def _not_plain(value: Any) -> Any:
    raise TypeError(f"frame payloads are plain data, not {_type(value).__name__}")


try:  # json's C encoder, built once: it never looks builtins up (a candidate may patch them)
    from json.encoder import c_encode_basestring_ascii, c_make_encoder

    _c_encode = c_make_encoder(
        None, _not_plain, c_encode_basestring_ascii, None, ":", ",", False, False, True
    )
except (ImportError, TypeError):  # pragma: no cover - a Python without the C accelerator
    _c_encode = None
# Without the C encoder, json.dumps runs Python code that reads builtins: the child then puts
# the original builtins back while it builds a frame.
FRAME_NEEDS_BUILTINS = _c_encode is None
_join = "".join


def frame(kind: int, index: int, payload: dict[str, Any]) -> bytes:
    """A frame for the result pipe: header plus JSON payload."""
    if _c_encode is not None:
        text = _join(_c_encode(payload, 0))
    else:  # pragma: no cover
        text = _json_dumps(payload, separators=(",", ":"))
    body = text.encode("utf-8", "surrogatepass")
    return _pack(MAGIC, kind, index, _len(body)) + body


def parse_header(header: bytes) -> tuple[int, int, int]:
    """``(kind, index, length)`` of a frame header; ChannelError if it is not one."""
    if len(header) != HEADER_SIZE:
        raise ChannelError("short frame header")
    magic, kind, index, length = _unpack(header)
    if magic != MAGIC or kind not in (KIND_READY, KIND_CASE, KIND_END) or length > MAX_FRAME:
        raise ChannelError("bad frame header")
    return kind, index, length


def parse_payload(body: bytes) -> dict[str, Any]:
    """The JSON object of a frame payload; ChannelError for anything else."""
    try:
        data = json.loads(body.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ChannelError("payload is not JSON") from None
    if type(data) is not dict:
        raise ChannelError("payload is not an object")
    return data
