"""Writing and parsing JSON fast, and reading JSON-lines files whose bad lines are reported by file and line."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import orjson
except ImportError:  # a platform without its wheel: json parses, to the same values
    orjson = None  # type: ignore[assignment]

# orjson reads an integer past 64 bits as a float, where json keeps it exact. Such an integer
# is a run of 19 digits or more at the text's start or after a byte that is neither a digit nor
# a dot (a float's fraction has a dot before it). Runs are found at C speed in the text's shape:
# each digit becomes "0", a dot stays, any other byte becomes "x". A text that may hold one is
# parsed by json; 19 digits in a string cost only speed.
_SHAPE = bytes(0x30 if 0x30 <= b <= 0x39 else 0x2E if b == 0x2E else 0x78 for b in range(256))
_RUN = b"0" * 19


def _may_hold_a_long_integer(data: bytes) -> bool:
    shape = data.translate(_SHAPE)
    at = shape.find(_RUN)
    while at >= 0:
        if at == 0 or shape[at - 1] == 0x78:  # a number starts here, not a float's fraction
            return True
        at = shape.find(_RUN, at + len(_RUN))  # past this run's start: its rest, or the next
    return False


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, parsed by orjson (2-3x faster) wherever it gives the same value.

    What orjson refuses and json reads (``NaN``, ``Infinity``, lone surrogates) is parsed by
    json, and a text neither reads raises json's ``JSONDecodeError``. One difference is kept:
    the deepest nesting each reads (orjson's fixed limit, json's near Python's recursion
    limit). So this parses what this program wrote; a user's file is read with json, whose
    "too deep" is that file's error (``read_objects``, ``harness.samples``).
    """
    if orjson is None:
        return json.loads(text)
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _may_hold_a_long_integer(data):
        return json.loads(text)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(text)


def dumps(value: Any) -> str:
    """``value`` as one line of JSON, written by orjson (several times faster than json: a
    results row of EvalPlus's thousand cases takes 4 ms in json), else by json.

    What orjson refuses (an integer past 64 bits, a key that is not a string, a lone
    surrogate) is written by json. orjson writes UTF-8 where json escapes (both read back
    alike), and writes a float that is NaN or infinite as ``null``: for data whose floats are
    finite (results rows, compiled problems: every float in them is checked or computed here).
    """
    if orjson is not None:
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            pass
    return json.dumps(value)


def read_objects(path: Path, error: type[Exception]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of ``path`` (``.gz`` too).

    A line that is not JSON, or not a JSON object, raises ``error`` with ``FILE:LINE:`` first.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{lineno}: not valid JSON: {exc.msg}") from None
            if not isinstance(row, dict):
                raise error(f"{path}:{lineno}: expected a JSON object per line")
            yield lineno, row
