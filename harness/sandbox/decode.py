"""Turn the fork server's reply into a SampleExecution, checking every frame strictly.

The child's frames are the sample's own words: anything malformed, forged (wrong nonce),
out of order or duplicated makes the affected case ``crashed`` with "corrupted result
channel" (the sample's fault); a value over a decoding bound (``codec.MAX_*``: this process
decodes it and compares it) makes it ``crashed`` with "value too large: ...". A reply that is
not what our own server writes is an infrastructure fault (:class:`ReplyError`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any

from harness.gcpause import paused_gc
from harness.sandbox.api import (
    RESOURCE_KEYS,
    CaseExecution,
    KnownValues,
    SampleExecution,
    SampleRequest,
    empty_resources,
)
from harness.sandbox.channel import codec
from harness.sandbox.channel.wire import compact_json
from harness.sandbox.coverage_data import analyze

CORRUPTED = "corrupted result channel"
MAX_ARCS = 1_000_000  # a program has far fewer distinct arcs; more is a forged report
# A reply's frame payloads: the bytes after its JSON (the server's write_message), each slot
# saying where its payload is (``"at": [offset, length]``).
BLOB = "blob"
_VERDICTS = ("timeout", "crashed")
_FRAME_STATUSES = ("ok", "assertion", "raised")
# A compare case's payload as the child writes it (child.py's _run_case, then its sender):
# {"status":"ok","values":[...],"duration_s":D,"n":"...","i":I}. Its values' exact bytes lie
# between these marks: the first one after the start ends them, as a tagged value holds no
# JSON object (and the bytes are checked to be the values' own encoding before they count).
_VALUES_START = b'{"status":"ok","values":'
_VALUES_END = b',"duration_s":'
# The duration after the end mark, as JSON writes a number (then it parses to that float).
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_KEY_BYTES = 512  # a longer encoding is known by its sha256
# Values of more units are not known by their encoding: checking the bytes costs a JSON
# encoding of them each time, and a judging process keeps few such values anyway.
MAX_KNOWN_UNITS = 100_000


class ReplyError(Exception):
    """The fork server's reply is not in its own format (an infrastructure fault)."""


def _str(value: Any, limit: int = 10_000) -> str:
    if type(value) is not str:
        raise codec.ChannelError("expected a string")
    return value[:limit]


def _duration(value: Any) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise codec.ChannelError("bad duration")
    return float(value)


def _exception(value: Any) -> dict[str, str]:
    if type(value) is not dict or set(value) != {"type", "message"}:
        raise codec.ChannelError("bad exception record")
    return {"type": _str(value["type"], 200), "message": _str(value["message"], 4000)}


def _body(slot: dict[str, Any], blob: Any) -> bytes:
    """The payload bytes of a forwarded frame, from the reply's bytes."""
    at = slot.get("at")
    if type(at) is list and len(at) == 2:
        start, size = at
        if type(start) is int and type(size) is int and 0 <= start and 0 <= size:
            if start + size <= len(blob):
                return bytes(blob[start : start + size])
    raise ReplyError("reply has a frame outside its bytes")


def _payload(slot: dict[str, Any], index: int | None, body: bytes) -> dict[str, Any]:
    """The checked JSON payload of a forwarded frame (nonce and case index included)."""
    return _checked(codec.parse_payload(body), slot, index)


def _checked(payload: dict[str, Any], slot: dict[str, Any], index: int | None) -> dict[str, Any]:
    if payload.get("n") != slot.get("nonce") or type(payload.get("n")) is not str:
        raise codec.ChannelError("frame from an unknown writer")
    if index is not None and (type(payload.get("i")) is not int or payload["i"] != index):
        raise codec.ChannelError("frame out of order")
    return payload


def _encoding(body: bytes) -> tuple[bytes, int] | None:
    """Where a payload in the child's own layout has its values' bytes: ``(the bytes, the
    index of the mark after them)``; None for any other payload."""
    if not body.startswith(_VALUES_START):
        return None
    end = body.find(_VALUES_END, len(_VALUES_START))
    return None if end < 0 else (body[len(_VALUES_START) : end], end)


def encoding_key(values: bytes) -> bytes:
    """The key that :attr:`CaseExecution.encoding` and ``SampleRequest.known`` use for the
    exact bytes of a case's encoded values (a long encoding by its sha256)."""
    return values if len(values) <= _KEY_BYTES else b"#" + hashlib.sha256(values).digest()


def _known_case(
    case_id: str,
    index: int,
    slot: dict[str, Any],
    body: bytes,
    known: Mapping[bytes, KnownValues] | None,
    left: list[int],
) -> CaseExecution | None:
    """The case from values already decoded here from the same bytes, where its payload is
    in the child's own layout, the rest of it too (then the whole payload parses to those
    values and that rest), with this frame's nonce and index; None: decode it as usual."""
    found = _encoding(body) if known else None
    if found is None:
        return None
    raw, end = found
    seen = known.get(encoding_key(raw))  # type: ignore[union-attr]
    if seen is None or left[0] <= seen.units:  # the bounds decide anew near their end
        return None
    nonce = slot.get("nonce")
    if type(nonce) is not str or not (nonce.isascii() and nonce.isalnum()):
        return None  # JSON writes such a nonce as it is, between quotes
    # The rest as the child writes it for this nonce and index, after the duration:
    # ``,"n":"NONCE","i":INDEX}``.
    rest = b',"n":"%s","i":%d}' % (nonce.encode(), index)
    if not body.endswith(rest):
        return None
    number = body[end + len(_VALUES_END) : len(body) - len(rest)]
    if _NUMBER.fullmatch(number) is None:
        return None
    try:
        duration = _duration(float(number))
    except codec.ChannelError:
        return None
    left[0] -= seen.units
    return CaseExecution(case_id, "ok", values=list(seen.values), duration_s=duration, known=True)


def _case(
    case_id: str,
    mode: str,
    n_calls: int,
    index: int,
    slot: Any,
    left: list[int],
    blob: Any,
    known: Mapping[bytes, KnownValues] | None = None,
) -> CaseExecution:
    if type(slot) is not dict:
        raise ReplyError(f"case {case_id}: slot is not an object")
    kind = slot.get("kind")
    if kind == "verdict":
        status = slot.get("status")
        if status not in _VERDICTS:
            raise ReplyError(f"case {case_id}: unknown verdict {status!r}")
        return CaseExecution(
            case_id,
            status,
            message=str(slot.get("message", "")),
            duration_s=float(slot.get("duration_s", 0.0)),
        )
    if kind not in ("frame", "setup"):
        raise ReplyError(f"case {case_id}: unknown slot kind {kind!r}")
    try:
        body = _body(slot, blob)
        if kind == "setup":
            payload = _payload(slot, None, body)
            if payload.get("status") != "raised" or type(payload.get("i")) is not int:
                raise codec.ChannelError("bad setup frame")
            exc = _exception(payload.get("exception"))
            return CaseExecution(
                case_id,
                "raised",
                exception=exc,
                message=f"the program raised {exc['type']} while loading: {exc['message']}",
            )
        if mode == "compare":
            seen = _known_case(case_id, index, slot, body, known, left)
            if seen is not None:
                return seen
        payload = _payload(slot, index, body)
        status = payload.get("status")
        if status not in _FRAME_STATUSES:
            raise codec.ChannelError("bad case status")
        duration = _duration(payload.get("duration_s"))
        if status != "ok":
            exc = _exception(payload.get("exception"))
            return CaseExecution(
                case_id,
                status,
                exception=exc,
                duration_s=duration,
                message=f"{exc['type']}: {exc['message']}" if exc["message"] else exc["type"],
            )
        if mode != "compare":
            if "values" in payload:
                raise codec.ChannelError("values for a sandbox case")
            return CaseExecution(case_id, "ok", duration_s=duration)
        raw = payload.get("values")
        if type(raw) is not list or len(raw) != n_calls:
            raise codec.ChannelError("wrong number of values")
        before = left[0]
        values = [codec.decode_value(v, left) for v in raw]
        units = before - left[0]
        wanted = known is not None and units <= MAX_KNOWN_UNITS
        return CaseExecution(
            case_id,
            "ok",
            values=values,
            duration_s=duration,
            encoding=_own_encoding(body, raw) if wanted else None,
            units=units,
        )
    except codec.TooLarge as exc:  # over a decoding bound: the candidate's failure, said so
        return CaseExecution(case_id, "crashed", message=str(exc))
    except codec.ChannelError:
        return CaseExecution(case_id, "crashed", message=CORRUPTED)


def _own_encoding(body: bytes, raw: list[Any]) -> bytes | None:
    """The key of the values' bytes where they are exactly the encoding the child writes of
    what they parsed to (so they parse alone, and to that); None otherwise."""
    found = _encoding(body)
    if found is None:
        return None
    if compact_json(raw).encode("utf-8", "surrogatepass") != found[0]:
        return None
    return encoding_key(found[0])


def _merge_coverage(program: str, slots: Any, blob: Any) -> dict[str, Any] | None:
    """Line and branch coverage of solution.py, from the arcs every child of the sample ran."""
    if type(slots) is not list or not slots:
        return None
    arcs: set[tuple[int, int]] = set()
    reported = False
    for slot in slots:
        try:
            cov = _payload(slot, None, _body(slot, blob)).get("coverage")
            if type(cov) is not dict or type(cov.get("arcs")) is not list:
                continue
            for pair in cov["arcs"][:MAX_ARCS]:
                if type(pair) is list and len(pair) == 2 and all(type(n) is int for n in pair):
                    arcs.add((pair[0], pair[1]))
            reported = True
        except codec.ChannelError:
            continue
    return analyze(program, arcs) if reported else None


def _resources(value: Any) -> dict[str, float | int]:
    """The server's accounting, checked: exactly the documented keys, finite and >= 0.

    A reply without it (a hand-made one) counts zeros; a malformed one is our server's fault.
    """
    if value is None:
        return empty_resources()
    if type(value) is not dict or set(value) != set(RESOURCE_KEYS):
        raise ReplyError(f"reply has malformed resource accounting: {value!r:.200}")
    out: dict[str, float | int] = {}
    for key, kind in RESOURCE_KEYS.items():
        raw = value[key]
        if type(raw) not in (int, float) or not math.isfinite(raw) or raw < 0:
            raise ReplyError(f"reply has a bad {key!r}: {raw!r:.50}")
        out[key] = kind(raw)
    return out


def assemble(request: SampleRequest, reply: dict[str, Any], first: int = 0) -> SampleExecution:
    """The SampleExecution for ``request`` from the server's ``reply``: of its cases from
    ``first`` on, to the end or, for a part of a sample run in parts (``"part": true``), to
    where its next part starts."""
    if reply.get("infra"):
        raise ReplyError(str(reply["infra"]))
    slots = reply.get("slots")
    if reply.get("first", 0) != first or type(slots) is not list:
        raise ReplyError("reply is not for the cases asked for")
    end = first + len(slots)
    ends_well = end in request.pauses if reply.get("part") else end == len(request.cases)
    if not ends_well:
        raise ReplyError("reply has the wrong number of case slots")
    left = [codec.MAX_SAMPLE_UNITS]  # what all the values of the sample may use together
    with paused_gc():  # decoded values are trees: no cycles to collect
        known = request.known or {}  # a case without an entry: its encoding is not wanted
        blob = reply.get(BLOB, b"")
        cases = {
            case.case_id: _case(
                case.case_id,
                case.mode,
                len(case.calls),
                i,
                slots[i - first],
                left,
                blob,
                known.get(case.case_id),
            )
            for i, case in enumerate(request.cases[first:end], first)
        }
    return SampleExecution(
        cases=cases,
        stdout=str(reply.get("stdout", "")),
        stderr=str(reply.get("stderr", "")),
        duration_s=float(reply.get("duration_s", 0.0)),
        max_rss_kb=int(reply.get("max_rss_kb", 0)),
        coverage=_merge_coverage(request.program, reply.get("coverage"), blob)
        if request.coverage
        else None,
        notes=[str(n) for n in reply.get("notes", [])],
        resources=_resources(reply.get("resources")),
    )
