"""Oracles: named judges of a compare case's values, run in the trusted process.

A :class:`~harness.records.CheckCase` whose ``oracle`` names one here is judged by it instead
of by a ``check`` expression: the oracle gets the values the sandbox sent back (plain data,
already decoded) and the case's ``expected`` (JSON text, parsed once and kept), and says why
the case failed, or ``None`` when it passed. Benchmarks whose expected outputs are data (one
per input, hundreds per problem) use this, so their generated modules stay short.

Oracles register by name (:func:`register_oracle`), lazily as ``"module:function"`` or by
value; ``equal`` is the default: the first value equals the decoded expected output.
"""

from __future__ import annotations

import functools
import importlib
import math
import reprlib
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from harness.jsonlines import loads
from harness.sandbox.channel.codec import decode_value, encode_value


class Oracle(Protocol):
    """Why ``values`` fail the case described by ``expected`` (parsed JSON); None: passed.

    A pure function of both, which only reads them: values it passed are kept and handed to
    later samples that send the same bytes, without asking it again
    (:mod:`harness.pipeline.known_values`)."""

    def __call__(self, values: Sequence[Any], expected: Any) -> str | None: ...


class OracleError(LookupError):
    """A case names an oracle that is not registered."""


def equal(values: Sequence[Any], expected: Any) -> str | None:
    """The default oracle: ``values[0] == decode(expected["out"])``."""
    want = decoded(expected["out"])
    got = values[0] if values else None
    try:
        same = bool(got == want)
    except Exception as exc:  # noqa: BLE001 - a comparison that raises is a failed case
        return f"comparing the output raised {type(exc).__name__}"
    return None if same else mismatch(got, want)


JSON_INT_BITS = 14_000  # about 4200 decimal digits

_ORACLES: dict[str, Oracle | str] = {
    "equal": equal,
    "evalplus": "harness.oracles.evalplus:evalplus",
}
_LOCK = threading.Lock()


def register_oracle(name: str, oracle: Oracle | str) -> None:
    """Register (or replace) an oracle: a callable, or ``"module:function"`` for later."""
    with _LOCK:
        _ORACLES[name] = oracle


def get_oracle(name: str) -> Oracle:
    """The oracle registered as ``name`` (imported on first use when registered lazily)."""
    found = _ORACLES.get(name)  # one dict read is atomic: the lock is for the first import
    if found is not None and not isinstance(found, str):
        return found
    with _LOCK:
        found = _ORACLES.get(name)
        if isinstance(found, str):
            module, _, attr = found.partition(":")
            found = _ORACLES[name] = getattr(importlib.import_module(module), attr)
    if found is None:
        raise OracleError(f"no oracle named {name!r} (known: {', '.join(sorted(_ORACLES))})")
    return found


def judge(name: str, values: Sequence[Any], expected_json: str) -> str | None:
    """Run oracle ``name`` on ``values`` against the case's ``expected`` JSON text."""
    if not expected_json:
        return f"the case has no expected output for oracle {name!r}: the suite was not prepared"
    return get_oracle(name)(values, parsed(expected_json))


@functools.lru_cache(maxsize=1 << 16)
def parsed(expected_json: str) -> Any:
    """The case's expected JSON, parsed (kept: every sample of a problem reads it again), by
    orjson where it gives json's values (each judging process parses every case it judges:
    165,000 on HumanEval+)."""
    return loads(expected_json)


def prepare(expected_json: str) -> None:
    """Parse a case's expected JSON and decode the values in it now, once per process: the
    trusted data's cost then stays out of the checks' CPU budget (harness.pipeline.cpu_budget), which
    bounds what a candidate's values cost (EvalPlus's outputs can be 10**5 parts)."""
    data = parsed(expected_json)  # this module's own copy: the decodings are kept in it
    if type(data) is dict:
        for value in data.values():
            if type(value) is dict and "tagged" in value and _DECODED not in value:
                decoding = decode_value(value["tagged"])
                if not hasattr(type(decoding), "__next__"):  # a check would consume it
                    value[_DECODED] = decoding


def encoded(value: Any) -> Any:
    """``value`` as JSON-safe data for ``expected``: ``{"json": value}`` when JSON gives it
    back exactly (lists, str-keyed dicts, str, int, finite float, bool, None: compact, as
    outputs of hundreds of inputs need), else ``{"tagged": ...}``, the channel's encoding."""
    return {"json": value} if _json_exact(value) else {"tagged": encode_value(value)}


def decoded(data: Any) -> Any:
    """A value stored with :func:`encoded`. A JSON one is the parsed object itself, shared by
    every sample judged against it: oracles only read it. A tagged one is decoded anew, unless
    :func:`prepare` kept its decoding."""
    if "json" in data:
        return data["json"]
    if _DECODED in data:
        return data[_DECODED]
    return decode_value(data["tagged"])


# The key a tagged value's decoding is kept under (encoded() writes only "json" or "tagged").
_DECODED = "\0decoded"


def _json_exact(value: Any, depth: int = 0) -> bool:
    kind = type(value)
    if value is None or kind in (bool, str):
        return True
    if kind is int:  # Python refuses to write or read ints of more than 4300 digits
        return value.bit_length() <= JSON_INT_BITS
    if kind is float:
        return math.isfinite(value)
    if depth > 90:
        return False
    if kind is list:
        return all(_json_exact(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(k) is str and _json_exact(v, depth + 1) for k, v in value.items())
    return False


def mismatch(got: Any, want: Any, limit: int = 120) -> str:
    """``expected X, got Y`` with both shortened."""
    return f"expected {brief(want, limit)}, got {brief(got, limit)}"


def brief(value: Any, limit: int = 120) -> str:
    """``repr(value)`` cut to ``limit`` characters, at a cost bounded by ``limit`` too: a
    decoded value can be a million items long, and an int too long for ``repr``."""
    text = _short_repr(value)
    if text is None:
        try:
            text = _BRIEF.repr(value)
        except Exception:  # noqa: BLE001 - decoded values are plain data; still, never raise
            text = "<unprintable>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_repr(value: Any) -> str | None:
    """``_BRIEF.repr(value)`` of a number, None or short string, by ``repr`` alone (what it
    gives them when it cuts nothing); None for anything else. A failed case's message names
    its two values: every input judged, that is half a million messages on HumanEval+."""
    kind = type(value)
    if kind is float or kind is bool or value is None:
        return repr(value)
    if kind is int and -_SHORT_INT < value < _SHORT_INT:
        return repr(value)
    if kind is str and len(value) <= _BRIEF.maxstring:
        text = repr(value)
        return text if len(text) <= _BRIEF.maxstring else None
    return None


class _Brief(reprlib.Repr):
    """reprlib's shortened repr (the first items of a container), with big ints by size."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 4
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 24
        self.maxarray = self.maxdict = 24
        self.maxstring = self.maxother = 160
        self.maxlong = 60

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 10_000:  # decimal digits of a huge int cost quadratic time
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_BRIEF = _Brief()
_SHORT_INT = 10 ** (_BRIEF.maxlong - 1)  # its repr fits reprlib's maxlong: not cut
