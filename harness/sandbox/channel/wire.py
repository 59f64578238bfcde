"""The value channel's vocabulary: its frames, bounds, errors and hooks (stdlib only).

Values travel as tagged JSON (``[tag, payload...]``, :mod:`encoder` and :mod:`decoder`):

==============  ==========================================  ==================================
tag             sent for                                    rebuilt as
==============  ==========================================  ==================================
n b i f c s y   None, bool, int, float, complex, str, bytes  the same
Y               bytearray                                   bytearray
l t S F d       list, tuple, set, frozenset, dict           the same
v               a list or tuple of plain numbers and None,  the same (the items as JSON
                or of strings                               scalars: no node each)
vf              a long list or tuple of floats (few ints)   the same (float64s, little-endian,
                                                            base64: :func:`float64_bytes`)
r               range                                       range
#               a value over the bounds (top level only)    :class:`standins.Digest`
K V P           dict ``keys()``, ``values()``, ``items()``  views of a trusted dict
q               collections.deque                           deque (same maxlen)
C O dd          Counter, OrderedDict, defaultdict           the same type (see ``FACTORIES``)
Q D             fractions.Fraction, decimal.Decimal         the same
date datetime   datetime.date, .datetime, .time,            the same (time zones: only None
time timedelta  .timedelta                                  or a fixed ``datetime.timezone``)
ar              array.array                                 array.array
I               any iterator (generators, map, zip, ...)    a trusted iterator of the items
N               a numpy scalar                              the numpy scalar of that dtype
nd              a numpy array                               ``numpy.array`` of that dtype/shape
o               anything else                               :class:`decoder.Opaque`
h               an object of the other side (bridge.py)     what ``hooks.handle`` makes of it
==============  ==========================================  ==================================

Frames on the child's result pipe: a 13-byte header (magic, kind, case index, payload length)
and a JSON payload. The server reads headers only; the trusted side decodes payloads.
"""

from __future__ import annotations

import array
import builtins
import json
import struct
import sys
from collections.abc import Callable
from typing import Any

# Captured at import time (in the server, before any candidate code): a candidate may patch
# builtins or module attributes afterwards, and frames must not notice.
_type = builtins.type
_len = builtins.len
_json_dumps = json.dumps
_pack = struct.Struct(">4sBII").pack
_unpack = struct.Struct(">4sBII").unpack
_array = array.array
_BIG_ENDIAN = sys.byteorder == "big"

MAGIC = b"CEvF"
HEADER_SIZE = 13
KIND_READY = 1  # the module (program + test setup) executed, or failed
KIND_CASE = 2  # one case's outcome
KIND_END = 3  # end of the child's work (coverage data)
MAX_FRAME = 32 * 1024 * 1024
# Of all the frames' payloads of one reply (a sample's, or a part's): the most the trusted side
# reads and parses for one sample, whatever frames a candidate forges.
MAX_REPLY = 4 * MAX_FRAME
MAX_DEPTH = 100
MAX_NODES = 1_000_000
MAX_TEXT = 16 * 1024 * 1024
MAX_REPR = 200
MAX_MESSAGE = 2000
# An iterator is consumed up to this many items (an endless one would otherwise end as a
# timeout even where the check only takes ``next()`` of it); past it the trusted iterator
# raises TransferLimit, so a check that reads further fails instead of seeing a short iterator.
MAX_ITER_ITEMS = 100_000
# What one value may cost the trusted process that decodes it (bounds.py charges them; the
# encoder sends a value over them as its digest instead, canonical.py).
MAX_INT_BITS = 1 << 17  # gcd or divmod of two such ints: ~20 ms; factorial(10_000) fits
MAX_TOTAL_INT_BITS = 1 << 25  # of all the ints beyond 64 bits of one value
# Elements, characters, bytes and range lengths of one value: sorting or hashing that many
# takes ~1 s; honest answers are far smaller (a 10**5-element list is 10**5).
MAX_UNITS = 4_000_000
MAX_SAMPLE_UNITS = 4 * MAX_UNITS  # of all the values of one sample (``decode_value``'s ``left``)
MAX_DECIMAL_TEXT = 10_000  # characters of a Decimal (its digits)
MAX_DECIMAL_EXPONENT = 100_000  # int(d) of a larger one is a huge int
MAX_NDIM = 64
MAX_DIM = 1 << 40

# Builtin exceptions an iterator may raise that the trusted side re-raises as themselves.
# StopIteration would end the trusted iterator early, and BaseException-only ones (SystemExit,
# KeyboardInterrupt) must not stop pytest: those arrive as CandidateError.
RERAISABLE: dict[str, type[Exception]] = {
    name: cls
    for name, cls in vars(builtins).items()
    if isinstance(cls, type)
    and issubclass(cls, Exception)
    and not issubclass(cls, (StopIteration, StopAsyncIteration))
}
# defaultdict factories that are rebuilt as themselves; any other (a lambda of the candidate)
# is rebuilt as None: equality is the same, only a missing key raises KeyError here.
FACTORIES: dict[str, type] = {
    c.__name__: c
    for c in (int, float, complex, str, bytes, list, tuple, dict, set, frozenset, bool)
}
NP_KINDS = "biufcUSO"  # numpy dtype kinds that travel (not datetime64, void, structured)
NP_MAX_ITEMSIZE = {"f": 8, "c": 16}


class ChannelError(Exception):
    """The bytes on the result channel are malformed, forged or out of order."""


class CandidateError(Exception):
    """A non-builtin exception the candidate's iterator raised (its type is in the message)."""


class TransferLimit(Exception):
    """The candidate's iterator yielded more than ``MAX_ITER_ITEMS`` items; the rest stayed."""


class TooLarge(ChannelError):
    """A value over a decoding bound: the case fails with "value too large: ..." (the
    candidate's failure, never the harness's)."""


class Hooks:
    """What the object bridge (bridge.py) sets in a judge's child and in the judge: an object
    with no plain encoding then travels as a handle (``["h", id, type]``) that the judge
    operates on through the bridge, instead of as an opaque snapshot. None everywhere else.

    ``opaque`` encodes such an object (the encoder's fallback); ``handle`` rebuilds an ``h``
    node (the decoder's).
    """

    __slots__ = ("opaque", "handle")

    def __init__(self) -> None:
        self.opaque: Callable[[Any], list[Any]] | None = None
        self.handle: Callable[[list[Any]], Any] | None = None


hooks = Hooks()


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


def float64_bytes(values: array.array[float]) -> bytes:
    """The bytes of float64s as they travel (a ``vf`` node's, the digest's form): little-endian
    on any host. ``values`` itself keeps the host's order."""
    if not _BIG_ENDIAN:
        return values.tobytes()
    swapped = _array("d", values)
    swapped.byteswap()
    return swapped.tobytes()


def float64s(raw: bytes) -> array.array[float]:
    """The float64s of travelling bytes (:func:`float64_bytes`'), in the host's order."""
    values = _array("d")
    values.frombytes(raw)
    if _BIG_ENDIAN:
        values.byteswap()
    return values


def compact_json(data: Any) -> str:
    """Plain data as the frames' JSON writes it (no spaces; NaN as ``NaN``)."""
    if _c_encode is not None:
        return _join(_c_encode(data, 0))
    return _json_dumps(data, separators=(",", ":"))  # pragma: no cover


def frame(kind: int, index: int, payload: dict[str, Any]) -> bytes:
    """A frame for the result pipe: header plus JSON payload."""
    body = compact_json(payload).encode("utf-8", "surrogatepass")
    return _pack(MAGIC, kind, index, _len(body)) + body


_float_repr = float.__repr__  # captured: a candidate may patch builtins.repr, not float's own


def values_frame(index: int, values: list[Any], duration_s: float, nonce: str) -> bytes:
    """The frame :func:`frame` writes for a compare case that ran (``{"status": "ok", "values":
    values, "duration_s": duration_s, "n": nonce, "i": index}``: the same bytes), built
    without a JSON object: the child sends one per input, and this is a third of its cost.
    ``duration_s`` is a finite float and ``nonce`` a hex string (the child's own)."""
    body = b'{"status":"ok","values":%s,"duration_s":%s,"n":"%s","i":%d}' % (
        compact_json(values).encode("utf-8", "surrogatepass"),
        _float_repr(duration_s).encode(),
        nonce.encode(),
        index,
    )
    return _pack(MAGIC, KIND_CASE, index, _len(body)) + body


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
