"""Smaller versions of an input, for the failing case a person reads.

Hypothesis's shrinker needs its predicate answered one call at a time, and here every answer is
a sandbox run (the reference must run isolated); so shrinking proceeds in rounds, the way
hypothesis's shrink passes do (delete elements, halve and zero numbers, shorten text, simplify
characters), with each round's candidates answered by one sandbox batch. Candidates stay inside
the argument's domain, and :func:`size` is the order "smaller" means.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from harness.plus.domains import Domain

MAX_CANDIDATES = 24  # per input and round


def size(value: Any) -> int:
    """How big an input reads: collections count their items, numbers their digits."""
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        return len(str(abs(value))) + (value < 0)
    if isinstance(value, float):
        return len(repr(abs(value))) + (value < 0)
    if isinstance(value, str):
        return len(value) + 1
    if isinstance(value, dict):
        return 1 + sum(size(k) + size(v) for k, v in value.items())
    if isinstance(value, list | tuple | set):
        return 1 + sum(size(v) for v in value)
    return len(repr(value))


def smaller(args: tuple[Any, ...], domains: Sequence[Domain]) -> list[tuple[Any, ...]]:
    """Argument tuples one shrink step from ``args``, smallest first, inside ``domains``."""
    found: dict[str, tuple[Any, ...]] = {}
    for position, value in enumerate(args):
        for option in _shrinks(value):
            candidate = (*args[:position], option, *args[position + 1 :])
            if domains[position].contains(option) and size(candidate) < size(args):
                found.setdefault(repr(candidate), candidate)
    ordered = sorted(found.values(), key=size)
    return ordered[:MAX_CANDIDATES]


def _shrinks(value: Any) -> Iterator[Any]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        yield from (0, value // 2, value - 1 if value > 0 else value + 1, -value)
    elif isinstance(value, float):
        yield from (0.0, float(int(value)), round(value, 1), value / 2)
    elif isinstance(value, str):
        yield from _shrink_str(value)
    elif isinstance(value, list | tuple):
        yield from _shrink_sequence(value)
    elif isinstance(value, set):
        for item in list(value)[:8]:
            yield value - {item}
    elif isinstance(value, dict):
        for key in list(value)[:8]:
            yield {k: v for k, v in value.items() if k != key}


def _shrink_str(value: str) -> Iterator[str]:
    """Halves, one character fewer (among the first 8), and the last character made "a"."""
    if value:
        yield value[: len(value) // 2]
        yield value[len(value) // 2 :]
        for i in range(min(len(value), 8)):
            yield value[:i] + value[i + 1 :]
        yield value.replace(value[-1], "a") if value[-1] != "a" else value[:-1]


def _shrink_sequence(value: list[Any] | tuple[Any, ...]) -> Iterator[Any]:
    """Halves, one item fewer (among the first 8), and one of the first 4 items shrunk."""
    items = list(value)
    kind = type(value)
    if items:
        yield kind(items[: len(items) // 2])
        yield kind(items[len(items) // 2 :])
        for i in range(min(len(items), 8)):
            yield kind(items[:i] + items[i + 1 :])
        for i in range(min(len(items), 4)):
            for option in list(_shrinks(items[i]))[:2]:
                yield kind(items[:i] + [option] + items[i + 1 :])
