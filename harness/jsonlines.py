"""Reading JSON-lines files whose bad lines are reported by file and line."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


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
