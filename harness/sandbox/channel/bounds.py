"""What one decoded value may cost the trusted process, and the charging of it (stdlib only).

Every superlinear step on a decoded value (gcd, int <-> str, division, sorting, hashing into a
set or dict) is C code that no signal interrupts, so each must stay cheap on any value the
decoder accepts: a value over a bound raises ``TooLarge`` ("value too large: ...").
"""

from __future__ import annotations

import collections
import json
from typing import Any

if __name__.startswith("harness."):  # imported by the trusted side, as the package
    from harness.sandbox.channel import encoder, wire
# Otherwise codec.py loaded this file by path (the fork server) and put ``wire`` and
# ``encoder`` here first.

TooLarge = wire.TooLarge
_json_dumps = json.dumps
_encode_value = encoder.encode_value

# Bounds on what the trusted process decodes, and so later compares: every superlinear step
# there (gcd, int <-> str, division, sorting, hashing into a set or dict) is C code that no
# signal interrupts, so each must stay cheap on any value the decoder accepts.
MAX_INT_BITS, MAX_TOTAL_INT_BITS = wire.MAX_INT_BITS, wire.MAX_TOTAL_INT_BITS
MAX_UNITS, MAX_SAMPLE_UNITS = wire.MAX_UNITS, wire.MAX_SAMPLE_UNITS
MAX_DECIMAL_TEXT, MAX_DECIMAL_EXPONENT = wire.MAX_DECIMAL_TEXT, wire.MAX_DECIMAL_EXPONENT
MAX_ARRAY_NDIM = 32
# Extra equality tests a set or dict of the value's parts would make (parts that share one
# hash but differ): a crafted flood costs n**2 of them, honest data ~0.
MAX_FLOOD_COST = 2_000_000
_FLOOD_MIN_PARTS = 64  # fewer parts cannot cost much, whatever their hashes


def int_bits(digits: int, budget: list[Any]) -> None:
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


def units(count: int, budget: list[Any], what: str) -> None:
    """Charge ``count`` elements, characters or bytes (of ``what``) to the value."""
    budget[1] -= count
    if budget[1] < 0:
        raise TooLarge(
            f"value too large: over {budget[4]} elements and characters in all "
            f"(at {what} of {count})"
        )


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
            seen.add(_json_dumps(_encode_value(parts[i])))
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
