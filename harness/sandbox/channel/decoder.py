"""The decoder: untrusted tagged data back into values, within bounds (stdlib only).

It runs in the trusted process (and in the judge, on the bridge's replies), on bytes the
candidate wrote. Each node is rebuilt by a trusted constructor, so that the check's own
expression treats it as plain Python would have treated the candidate's value, without ever
running candidate code. Decoding is bounded (``MAX_INT_BITS`` and ``MAX_TOTAL_INT_BITS``,
``MAX_UNITS`` elements, characters and range items per value and ``MAX_SAMPLE_UNITS`` per
sample, ``MAX_DEPTH``, Decimal and array bounds, and no hash flood: :func:`check_hash_flood`),
so that C-level work on what it accepts (gcd, sorting, hashing into a set) stays cheap; a value
over a bound raises ``TooLarge``, "value too large: ...", the case's failure (an honest encoder
sends such a value as its digest, a ``#`` node: :class:`standins.Digest`). numpy is imported
only to rebuild a numpy node. The tags are listed in :mod:`wire`; one function per tag
rebuilds a node (``_NODES``; the leaves are in :mod:`leaves`).
"""

from __future__ import annotations

import array
import binascii
import collections
import math
import operator
import re
from collections.abc import Callable
from itertools import compress, repeat
from typing import Any

if __name__.startswith("harness."):  # imported by the trusted side, as the package
    from harness.sandbox.channel import bounds, leaves, standins, wire
# Otherwise codec.py loaded this file by path (the fork server) and put ``wire``,
# ``bounds``, ``standins`` and ``leaves`` here first.

ChannelError, TooLarge = wire.ChannelError, wire.TooLarge
CandidateError, TransferLimit = wire.CandidateError, wire.TransferLimit
MAX_DEPTH, MAX_NODES, MAX_TEXT = wire.MAX_DEPTH, wire.MAX_NODES, wire.MAX_TEXT
MAX_REPR, MAX_MESSAGE, MAX_ITER_ITEMS = wire.MAX_REPR, wire.MAX_MESSAGE, wire.MAX_ITER_ITEMS
MAX_NDIM, MAX_DIM = wire.MAX_NDIM, wire.MAX_DIM
RERAISABLE, NP_KINDS, NP_MAX_ITEMSIZE = wire.RERAISABLE, wire.NP_KINDS, wire.NP_MAX_ITEMSIZE
Opaque, ReplayIterator, Digest = standins.Opaque, standins.ReplayIterator, standins.Digest
end_of_iterator, replay_generator = standins.end_of_iterator, standins.replay_generator
_int_bits, _units, check_hash_flood = bounds.int_bits, bounds.units, bounds.check_hash_flood
MAX_TOTAL_INT_BITS, MAX_UNITS = bounds.MAX_TOTAL_INT_BITS, bounds.MAX_UNITS
MAX_SAMPLE_UNITS, MAX_FLOOD_COST = bounds.MAX_SAMPLE_UNITS, bounds.MAX_FLOOD_COST
MAX_DECIMAL_TEXT, MAX_DECIMAL_EXPONENT = bounds.MAX_DECIMAL_TEXT, bounds.MAX_DECIMAL_EXPONENT
MAX_ARRAY_NDIM = bounds.MAX_ARRAY_NDIM

FACTORIES, hooks = wire.FACTORIES, wire.hooks
_bad, _known, _int = leaves.bad, leaves.known, leaves.parse_int
_HEX_INT = leaves.HEX_INT


_VECTOR_KINDS = frozenset(("l", "t"))
_VECTOR_NUMBERS = frozenset((int, bool, float, type(None)))
_STR_ONLY = frozenset((str,))
_INT_ONLY = frozenset((int,))
_VECTOR_INT = 1 << 60  # as the encoder's: such ints hash as themselves and parse linearly
b64decode = binascii.a2b_base64
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
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


def _items(payload: Any, depth: int, budget: list[Any]) -> list[Any]:
    if type(payload) is not list:
        raise ChannelError("bad container")
    _units(len(payload), budget, "a container")
    return [_dec(v, depth + 1, budget) for v in payload]


def _hashable_items(payload: Any, depth: int, budget: list[Any]) -> list[Any]:
    items = _items(payload, depth, budget)
    if not all(map(_hashable_node, payload)):
        raise ChannelError("unhashable set element")
    check_hash_flood(items)  # before a set is built of them
    return items


def _hashable_node(node: Any) -> bool:
    """Whether a node rebuilds as a hashable value (a tuple vector does, a list one not)."""
    if type(node) is not list or not node:
        return False
    return node[0] in _HASHABLE_TAGS or (node[0] == "v" and len(node) == 3 and node[1] == "t")


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
        if not _hashable_node(pair[0]):
            raise ChannelError("unhashable dict key")
        keys.append(_dec(pair[0], depth + 1, budget))
        values.append(_dec(pair[1], depth + 1, budget))
    check_hash_flood(keys)  # before a dict is built of them
    out = dict(zip(keys, values, strict=True))
    _no_duplicates(keys, len(out))
    return out


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
    if dtype.itemsize > NP_MAX_ITEMSIZE.get(dtype.kind, 1 << 30):
        raise ChannelError("bad dtype")
    return dtype


def _ndarray(data: list[Any], depth: int, budget: list[Any]) -> Any:
    numpy = _numpy()
    dtype = _np_dtype(numpy, data[1], NP_KINDS)
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
    """One node: its depth and part count charged, then rebuilt by its tag's function."""
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
    entry = _NODES_get(tag)
    if entry is None:
        raise _bad(tag)
    arity, rebuild = entry
    if arity != size and arity is not None:
        raise _bad(tag)
    value = rebuild(data, depth, budget)
    if tag in _FLOOD_TAGS:
        budget[3].append(value)
    return value


# One function per tag, each given a node of its tag and length (``_NODES``); it checks the
# rest of the node and charges what it builds.
_Node = Callable[[list[Any], int, list[Any]], Any]


def _list(data: list[Any], depth: int, budget: list[Any]) -> Any:
    items = _items(data[1], depth, budget)
    if items:  # a check may make it a tuple and hash that (set(map(tuple, v)))
        budget[3].append(tuple(items))
    return items


def _tuple(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return tuple(_items(data[1], depth, budget))


def _set(data: list[Any], depth: int, budget: list[Any]) -> Any:
    items = _hashable_items(data[1], depth, budget)
    result = set(items) if data[0] == "S" else frozenset(items)
    _no_duplicates(items, len(result))
    return result


def _dict_node(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return _dict(data[1], depth, budget)


def _counter(data: list[Any], depth: int, budget: list[Any]) -> Any:
    counter: collections.Counter[Any] = collections.Counter()
    dict.update(counter, _dict(data[1], depth, budget))  # not Counter.update: it adds
    return counter


def _ordered_dict(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return collections.OrderedDict(_dict(data[1], depth, budget))


def _defaultdict(data: list[Any], depth: int, budget: list[Any]) -> Any:
    if data[1] is not None and not _known(data[1], FACTORIES):
        raise _bad("dd")
    factory = None if data[1] is None else FACTORIES[data[1]]
    return collections.defaultdict(factory, _dict(data[2], depth, budget))


def _keys(data: list[Any], depth: int, budget: list[Any]) -> Any:
    keys = _hashable_items(data[1], depth, budget)
    view = dict.fromkeys(keys)
    _no_duplicates(keys, len(view))
    return view.keys()


def _values(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return dict(enumerate(_items(data[1], depth, budget))).values()


def _dict_items(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return _dict(data[1], depth, budget).items()


def _deque(data: list[Any], depth: int, budget: list[Any]) -> Any:
    items = _items(data[1], depth, budget)
    maxlen = None if data[2] is None else _int(data[2], budget)
    if maxlen is not None and not 0 <= len(items) <= maxlen:
        raise ChannelError("deque longer than its maxlen")
    return collections.deque(items, maxlen)


def _array(data: list[Any], depth: int, budget: list[Any]) -> Any:
    if not _known(data[1], _TYPECODES):
        raise _bad("ar")
    items = _items(data[2], depth, budget)
    kind = str if data[1] in "uw" else float if data[1] in "fd" else int
    if not all(type(item) is kind for item in items):
        raise ChannelError("array items do not match the typecode")
    return array.array(data[1], items)


def _iterator(data: list[Any], depth: int, budget: list[Any]) -> Any:
    if not _known(data[1], _ITER_KIND_NAMES):
        raise _bad("I")
    items = _items(data[2], depth, budget)
    end = end_of_iterator(data[3])
    if data[1] == "generator":
        return replay_generator(items, end)
    replay = ReplayIterator(items, end, data[1])
    if data[1] == "map":
        return map(_same, replay)
    if data[1] == "filter":
        return filter(_keep, replay)
    return replay


def _handle(data: list[Any], depth: int, budget: list[Any]) -> Any:
    handle = hooks.handle
    if handle is None:
        raise _bad("h")
    return handle(data)


def _same(item: Any) -> Any:
    return item


def _keep(item: Any) -> bool:
    return True


def _vector(data: list[Any], depth: int, budget: list[Any]) -> Any:
    """A list or tuple of plain numbers (ints within +-2**60) and None, or of strings, as
    JSON scalars: the JSON parser already built the items; they are checked and charged as
    the same items one node each would be."""
    kind, items = data[1], data[2]
    if kind not in _VECTOR_KINDS or type(items) is not list:
        raise _bad("v")
    if depth + 1 > MAX_DEPTH + 2:
        raise TooLarge(f"value too large: nested deeper than {MAX_DEPTH}")
    count = len(items)
    budget[0] -= count
    if budget[0] < 0:
        raise TooLarge(f"value too large: over {MAX_NODES} parts")
    _units(count, budget, "a container")
    types = set(map(type, items))
    if types == _INT_ONLY:
        if not (-_VECTOR_INT < min(items) and max(items) < _VECTOR_INT):
            raise ChannelError("bad int in a vector")
    elif types <= _VECTOR_NUMBERS:
        if int in types:
            ints = list(compress(items, map(operator.is_, map(type, items), repeat(int))))
            if not (-_VECTOR_INT < min(ints) and max(ints) < _VECTOR_INT):
                raise ChannelError("bad int in a vector")
    elif types == _STR_ONLY:
        _units(sum(map(len, items)), budget, "strings")
    elif items:
        raise _bad("v")
    value = items if kind == "l" else tuple(items)
    if items:  # a check may hash it (a list as a tuple: set(map(tuple, v)))
        budget[3].append(tuple(items) if kind == "l" else value)
    return value


def _doubles(data: list[Any], depth: int, budget: list[Any]) -> Any:
    """A list or tuple of floats (and, at the indexes given, ints) as little-endian float64s,
    charged as the items one node each would be."""
    kind, text, positions = data[1], data[2], data[3]
    if kind not in _VECTOR_KINDS or type(text) is not str or type(positions) is not list:
        raise _bad("vf")
    if depth + 1 > MAX_DEPTH + 2:
        raise TooLarge(f"value too large: nested deeper than {MAX_DEPTH}")
    if len(text) > 4 * (MAX_NODES * 8 + 2) // 3 + 4:  # more parts than the bound, at a glance
        raise TooLarge(f"value too large: over {MAX_NODES} parts")
    try:
        raw = b64decode(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ChannelError("bad float64s") from None
    if len(raw) % 8:
        raise ChannelError("bad float64s")
    count = len(raw) // 8
    budget[0] -= count
    if budget[0] < 0:
        raise TooLarge(f"value too large: over {MAX_NODES} parts")
    _units(count, budget, "a container")
    items = wire.float64s(raw).tolist()
    if positions:
        if not all(type(i) is int for i in positions) or positions != sorted(set(positions)):
            raise ChannelError("bad int positions")
        if positions[0] < 0 or positions[-1] >= count:
            raise ChannelError("bad int positions")
        for i in positions:
            number = items[i]
            if not (math.isfinite(number) and number.is_integer()):
                raise ChannelError("an int position holds no int")
            items[i] = int(number)
    value = items if kind == "l" else tuple(items)
    if items:
        budget[3].append(tuple(items) if kind == "l" else value)
    return value


def _digest(data: list[Any], depth: int, budget: list[Any]) -> Any:
    """A value over the bounds, sent as its digest by equality: a whole value only."""
    sha, summary, comparable = data[1], data[2], data[3]
    if depth or type(sha) is not str or not _SHA256.match(sha) or type(comparable) is not bool:
        raise _bad("#")
    if type(summary) is not str:
        raise _bad("#")
    return Digest(sha, summary[:MAX_REPR], comparable)


# tag -> (the node's length, its function); a length of None: any (a handle is the hook's).
_NODES: dict[str, tuple[int | None, _Node]] = {
    **leaves.LEAVES,
    "l": (2, _list),
    "t": (2, _tuple),
    "S": (2, _set),
    "F": (2, _set),
    "d": (2, _dict_node),
    "C": (2, _counter),
    "O": (2, _ordered_dict),
    "dd": (3, _defaultdict),
    "K": (2, _keys),
    "V": (2, _values),
    "P": (2, _dict_items),
    "q": (3, _deque),
    "ar": (3, _array),
    "I": (4, _iterator),
    "N": (3, _np_scalar),
    "nd": (4, _ndarray),
    "h": (None, _handle),
    "v": (3, _vector),
    "vf": (4, _doubles),
    "#": (4, _digest),
}
_NODES_get = _NODES.get
