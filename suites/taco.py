"""TACO (``BAAI/TACO``): 25,443 train and 1,000 test problems in APPS's test format.

Each row has ``question``, ``solutions`` (a JSON list of Python programs), ``starter_code``,
``input_output`` (APPS's JSON: ``inputs``, ``outputs``, optional ``fn_name``), ``difficulty``
(EASY, MEDIUM, MEDIUM_HARD, HARD, VERY_HARD, UNKNOWN_DIFFICULTY), ``raw_tags``, ``name``,
``source``, ``tags``, ``skill_types`` (string forms of lists), ``url``, ``Expected Auxiliary
Space``, ``time_limit`` (text such as ``"1 seconds"``, or null), ``date``, ``picture_num``,
``memory_limit`` (text such as ``"256 megabytes"``, or null) and ``Expected Time Complexity``.
Rows have no id: a task id is ``taco/SPLIT/INDEX`` (the row's place in its split). A limit
given as text the loader cannot read keeps the default and is named in the metadata.

Splits: ``train``, ``test``, and per difficulty ``test_easy``, ``train_medium_hard``...
Data: a mirror folder ``taco/`` with ``train.jsonl``/``test.jsonl`` (rows as the hub gives
them) under ``data_dir`` or ``$CODEEVAL_DATA_DIR``, else the hub. ``taco@cpp``: programs in
another language.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.records import Problem
from suites.apps import io_tests, solutions
from suites.stdio_build import to_problem
from suites.stdio_data import (
    TRAINING_OPTIONS,
    Row,
    StdioDataError,
    StdioRecord,
    hub_rows,
    mirror_rows,
    no_more_options,
    read_options,
    suite_name,
    text_field,
    unique_ids,
)

SUITE = "taco"
HUB_NAME = "BAAI/TACO"
MIRROR = "taco"
SPLITS = ("train", "test")
DIFFICULTIES = ("EASY", "MEDIUM", "MEDIUM_HARD", "HARD", "VERY_HARD", "UNKNOWN_DIFFICULTY")
_SECONDS = {"": 1.0, "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "ms": 1e-3}
_SECONDS |= {"millisecond": 1e-3, "milliseconds": 1e-3}
_MEGABYTES = {"": 1.0, "mb": 1.0, "megabyte": 1.0, "megabytes": 1.0, "mib": 1.0}
_MEGABYTES |= {"kb": 1 / 1024, "kilobytes": 1 / 1024, "gb": 1024.0, "gigabytes": 1024.0}
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def read_limit(text: Any, units: dict[str, float]) -> float | None:
    """``"2 seconds"`` -> 2.0, ``"256 megabytes"`` -> 256.0 (in the table's unit); None when
    the text is missing or not a number and a known unit."""
    if not isinstance(text, str):
        return None
    match = _AMOUNT.match(text)
    if not match or match.group(2).lower() not in units:
        return None
    value = float(match.group(1)) * units[match.group(2).lower()]
    return value if value > 0 else None


def parse_row(
    where: str, row: dict[str, Any], split: str, index: int, suite: str = SUITE
) -> StdioRecord:
    """One TACO row as a :class:`StdioRecord`."""
    difficulty = text_field(row, "difficulty", where)
    if difficulty not in DIFFICULTIES:
        raise StdioDataError(where, "difficulty", f"{difficulty!r} is not one of {DIFFICULTIES}")
    tests, fn_name, defects = io_tests(row, where)
    programs = solutions(row, where)
    metadata: dict[str, Any] = {
        "difficulty": difficulty,
        "name": str(row.get("name") or ""),
        "source_site": str(row.get("source") or ""),
        "url": str(row.get("url") or ""),
        "tags": str(row.get("tags") or ""),
        "skill_types": str(row.get("skill_types") or ""),
        "date": str(row.get("date") or ""),
        "solutions": len(programs),
        "source": where,
    }
    time_limit = read_limit(row.get("time_limit"), _SECONDS)
    memory = read_limit(row.get("memory_limit"), _MEGABYTES)
    for name, value in (("time_limit", time_limit), ("memory_limit", memory)):
        if value is None and row.get(name) not in (None, "", "None"):
            metadata[f"unread_{name}"] = str(row[name])  # kept, the default limit applies
    return StdioRecord(
        suite=suite,
        task_id=f"taco/{split}/{index}",
        statement=text_field(row, "question", where),
        tests=tuple(tests),
        starter_code=text_field(row, "starter_code", where, required=False),
        fn_name=fn_name,
        time_limit_s=time_limit,
        memory_limit_mb=memory,
        reference=programs[0] if programs else "",
        defects=tuple(defects),
        metadata=metadata,
    )


def _rows(data_dir: Path | None) -> dict[str, list[Row]]:
    mirrored = mirror_rows(data_dir, MIRROR, SPLITS, SUITE)
    if mirrored is not None:
        return mirrored
    hint = f"a folder {MIRROR}/ with train.jsonl/test.jsonl in $CODEEVAL_DATA_DIR"
    # BAAI/TACO still ships its loading script (TACO.py), which datasets no longer runs; its
    # "ALL" configuration's parquet files hold the same rows.
    files = {split: f"hf://datasets/{HUB_NAME}/ALL/{split}-*" for split in SPLITS}
    return hub_rows(HUB_NAME, SUITE, hint, builder="parquet", data_files=files)


def load(data_dir: Path | None = None, option: str | None = None) -> dict[str, list[Problem]]:
    """TACO's splits, and each split per difficulty (``test_medium_hard``...)."""
    options = read_options(option, SUITE)
    no_more_options(options.rest, SUITE, TRAINING_OPTIONS)
    suite = suite_name(SUITE, option)
    splits: dict[str, list[Problem]] = {}
    for split, rows in _rows(data_dir).items():
        parsed = [(w, parse_row(w, r, split, i, suite)) for i, (w, r) in enumerate(rows)]
        splits[split] = [to_problem(r, options) for r in unique_ids(parsed)]
        for difficulty in DIFFICULTIES:
            splits[f"{split}_{difficulty.lower()}"] = [
                p for p in splits[split] if p.metadata["difficulty"] == difficulty
            ]
    return splits
