"""What the decoder builds where a value cannot be rebuilt as itself (stdlib only): an opaque
stand-in, a value over the bounds known by its digest, and a trusted iterator that replays the
candidate's items and how its iterator ended.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

if __name__.startswith("harness."):  # imported by the trusted side, as the package
    from harness.sandbox.channel import canonical, encoder, wire
# Otherwise codec.py loaded this file by path (the fork server) and put ``wire``,
# ``canonical`` and ``encoder`` here first.

_id = builtins.id
_iter = builtins.iter


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


class Digest:
    """A value over the channel's bounds, as its digest by equality (:mod:`canonical`): the
    candidate's child sent ``sha256`` of its canonical form instead of the value. It equals
    what the value would equal (``==``: another digest of the same form, or a value whose
    form has that digest, computed here), and nothing else works on it. ``comparable`` is
    False for a value holding a NaN, which equals nothing.

    Its hash is its digest's: a set or dict does not find it by an equal plain value.
    """

    __slots__ = ("sha256", "summary", "comparable")

    def __init__(self, sha256: str, summary: str, comparable: bool) -> None:
        self.sha256 = sha256
        self.summary = summary
        self.comparable = comparable

    def __eq__(self, other: object) -> bool:
        if not self.comparable:
            return False
        if type(other) is Digest:
            return other.comparable and other.sha256 == self.sha256
        found = canonical.digest(other)
        return found is not None and found[1] and found[0] == self.sha256

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.sha256)

    def __repr__(self) -> str:
        return f"<value too large to send, compared by digest: {self.summary}>"


def _encode_digest(value: Digest, depth: int, budget: list[int]) -> list[Any]:
    """A digest travels as itself (the trusted side keeps expected outputs encoded); only a
    whole value is one."""
    if depth:
        return ["o", "Digest", repr(value)[: wire.MAX_REPR]]
    return ["#", value.sha256, value.summary, value.comparable]


encoder.ENCODERS[_id(Digest)] = _encode_digest


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


def replay_generator(items: list[Any], end: BaseException | None) -> Iterator[Any]:
    yield from items
    if end is not None:
        raise end


def end_of_iterator(end: Any) -> BaseException | None:
    if end is None:
        return None
    if end == ["more"]:
        return wire.TransferLimit(
            f"the candidate's iterator yielded more than {wire.MAX_ITER_ITEMS} items"
        )
    if type(end) is not list or len(end) != 4 or end[0] != "raise" or type(end[3]) is not bool:
        raise wire.ChannelError("bad iterator end")
    name, message = _text(end[1], wire.MAX_REPR), _text(end[2], wire.MAX_MESSAGE)
    if not end[3]:
        return wire.CandidateError(f"{name}: {message}" if message else name)
    cls = wire.RERAISABLE.get(name)
    if cls is None:
        raise wire.ChannelError("unknown builtin exception")
    try:
        return cls(message)
    except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs five arguments
        return wire.CandidateError(f"{name}: {message}")


def _text(text: Any, limit: int) -> str:
    if type(text) is not str or len(text) > limit:
        raise wire.ChannelError("bad text")
    return text
