"""The decoder's leaves: numbers, text, bytes, ranges and dates, each checked and charged
(stdlib only). One function per tag, as :mod:`decoder`'s ``_NODES`` calls them; none recurses.
"""

from __future__ import annotations

import binascii
import datetime
import decimal
import fractions
import math
import re
import sys
from typing import Any

if __name__.startswith("harness."):  # imported by the trusted side, as the package
    from harness.sandbox.channel import bounds, standins, wire
# Otherwise codec.py loaded this file by path (the fork server) and put ``wire``,
# ``bounds`` and ``standins`` here first.

ChannelError, TooLarge = wire.ChannelError, wire.TooLarge
MAX_TEXT, MAX_REPR = wire.MAX_TEXT, wire.MAX_REPR
Opaque = standins.Opaque
_int_bits, _units, MAX_FLOOD_COST = bounds.int_bits, bounds.units, bounds.MAX_FLOOD_COST
MAX_DECIMAL_TEXT, MAX_DECIMAL_EXPONENT = bounds.MAX_DECIMAL_TEXT, bounds.MAX_DECIMAL_EXPONENT
_b64decode = binascii.a2b_base64

HEX_INT = re.compile(r"-?[0-9a-f]+\Z")
_FLOAT_TEXT = re.compile(r"(-?0x[0-9a-f](\.[0-9a-f]{1,13})?p[-+][0-9]{1,4}|-?inf|-?nan)\Z")
_DECIMAL_TEXT = re.compile(r"-?((\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|Infinity|s?NaN\d*)\Z", re.ASCII)
_ISO_KINDS = {"date": datetime.date, "datetime": datetime.datetime, "time": datetime.time}


def _float(text: Any) -> float:
    if type(text) is not str or not _FLOAT_TEXT.match(text):
        raise ChannelError("bad float")
    return float.fromhex(text)


def parse_int(text: Any, budget: list[Any]) -> int:
    if type(text) is not str or not HEX_INT.match(text):
        raise ChannelError("bad int")
    _int_bits(len(text), budget)
    return int(text, 16)


def _str(text: Any, limit: int = MAX_TEXT) -> str:
    if type(text) is not str or len(text) > limit:
        raise ChannelError("bad text")
    return text


def known(name: Any, names: Any) -> bool:
    return type(name) is str and name in names


# A UTC offset with microseconds, which fromisoformat drops before Python 3.12.
_FINE_OFFSET = re.compile(r"([-+])(\d\d):(\d\d):(\d\d)\.(\d{6})\Z")


def _iso(kind: type[Any], text: Any) -> Any:
    value = kind.fromisoformat(_str(text, 64))
    if type(value) is not kind:
        raise ChannelError("bad date or time")
    fine = _FINE_OFFSET.search(text) if kind is not datetime.date else None
    if fine is not None:
        sign = -1 if fine.group(1) == "-" else 1
        hours, minutes, seconds, micros = (int(g) for g in fine.groups()[1:])
        offset = datetime.timedelta(
            hours=hours, minutes=minutes, seconds=seconds, microseconds=micros
        )
        value = value.replace(tzinfo=datetime.timezone(sign * offset))
    return value


def _none(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return None


def _bool(data: list[Any], depth: int, budget: list[Any]) -> Any:
    if type(data[1]) is not bool:
        raise bad("b")
    return data[1]


def _float_node(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return _float(data[1])


def _complex(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return complex(_float(data[1]), _float(data[2]))


def _string(data: list[Any], depth: int, budget: list[Any]) -> Any:
    if type(data[1]) is not str:
        raise bad("s")
    _units(len(data[1]), budget, "a string")
    return data[1]


def _raw_bytes(data: list[Any], budget: list[Any]) -> bytes:
    if type(data[1]) is not str:
        raise bad(data[0])
    try:
        raw = bytes(_b64decode(data[1].encode("ascii"), strict_mode=True))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ChannelError("bad bytes") from None
    _units(len(raw), budget, "a bytes value")
    return raw


def _bytes(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return _raw_bytes(data, budget)


def _bytearray(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return bytearray(_raw_bytes(data, budget))


def _range(data: list[Any], depth: int, budget: list[Any]) -> Any:
    start, stop, step = (
        parse_int(data[1], budget),
        parse_int(data[2], budget),
        parse_int(data[3], budget),
    )
    if step == 0:
        raise ChannelError("range step is zero")
    value = range(start, stop, step)
    length = max(0, (stop - start + step - (1 if step > 0 else -1)) // step)
    _units(length, budget, "a range")
    # Its items hash alike when the step is a multiple of 2**61 - 1 (set(v) in a check).
    if length > 1 and step % sys.hash_info.modulus == 0 and length**2 > MAX_FLOOD_COST:
        raise TooLarge("value too large: a range whose items all share one hash")
    return value


def _fraction(data: list[Any], depth: int, budget: list[Any]) -> Any:
    numerator, denominator = parse_int(data[1], budget), parse_int(data[2], budget)
    if denominator <= 0 or math.gcd(numerator, denominator) != 1:
        raise ChannelError("fraction not in lowest terms")
    return fractions.Fraction(numerator, denominator)


def _decimal(data: list[Any], depth: int, budget: list[Any]) -> Any:
    text = _str(data[1])
    if len(text) > MAX_DECIMAL_TEXT:
        raise TooLarge(f"value too large: a Decimal of {len(text)} characters")
    if not _DECIMAL_TEXT.match(text):
        raise ChannelError("bad decimal")
    number = decimal.Decimal(text)
    if number.is_finite() and abs(number.adjusted()) > MAX_DECIMAL_EXPONENT:
        raise TooLarge(f"value too large: a Decimal of exponent {number.adjusted()}")
    return number


def _date_or_time(data: list[Any], depth: int, budget: list[Any]) -> Any:
    return _iso(_ISO_KINDS[data[0]], data[1])


def _timedelta(data: list[Any], depth: int, budget: list[Any]) -> Any:
    days, seconds, micro = (parse_int(data[i], budget) for i in (1, 2, 3))
    if not (0 <= seconds < 86400 and 0 <= micro < 1_000_000):
        raise ChannelError("timedelta not normalized")
    return datetime.timedelta(days, seconds, micro)


def _opaque(data: list[Any], depth: int, budget: list[Any]) -> Any:
    if type(data[1]) is not str or type(data[2]) is not str:
        raise bad("o")
    return Opaque(data[1][:MAX_REPR], data[2][: MAX_REPR + 3])


def bad(tag: str) -> ChannelError:
    return ChannelError(f"bad value node with tag {tag[:10]!r}")


# tag -> (the node's length, its function), for decoder's table.
LEAVES: dict[str, tuple[int, Any]] = {
    "n": (1, _none),
    "b": (2, _bool),
    "f": (2, _float_node),
    "c": (3, _complex),
    "s": (2, _string),
    "y": (2, _bytes),
    "Y": (2, _bytearray),
    "r": (4, _range),
    "Q": (3, _fraction),
    "D": (2, _decimal),
    "date": (2, _date_or_time),
    "datetime": (2, _date_or_time),
    "time": (2, _date_or_time),
    "timedelta": (4, _timedelta),
    "o": (3, _opaque),
}
