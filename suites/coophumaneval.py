"""CoopHumanEval: HumanEval-shaped problems written for two cooperating agents.

Hub name ``OpenMLRL/CoopHumanEval`` (82 problems). Each record has ``task_id``
("CoopHumanEval/N"), ``prompt``, ``test`` (``def check(candidate): ...``) and ``entry_point``;
``canonical_solution`` when present is the reference. There is no offline mirror, so the loader
reads a local JSONL file when one is given (``path``, ``data_dir`` or ``$CODEEVAL_DATA_DIR``)
and otherwise asks the hub through ``datasets``.

The cooperative roles the trainers use (a helper ``aux`` and the main function) are in each
problem's ``metadata["roles"]``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.jsonlines import read_objects
from harness.records import Problem
from suites import humaneval
from suites.hub import load_hub_dataset

SUITE = "coophumaneval"
HUB_NAME = "OpenMLRL/CoopHumanEval"
FILE_NAMES = ("CoopHumanEval.jsonl", "coophumaneval.jsonl", "CoopHumanEval.jsonl.gz")
REQUIRED_FIELDS = ("task_id", "prompt", "test", "entry_point")
HELPER_NAME = "aux"


class SuiteDataError(ValueError):
    """Data that cannot be turned into problems; the message names the file, line and field."""


def find_local_file(
    data_dir: str | Path | None, names: Iterable[str] = FILE_NAMES, prefix: str | None = SUITE
) -> Path | None:
    """A data file in ``data_dir`` (or ``$CODEEVAL_DATA_DIR``), else None.

    The known ``names`` come first; then any ``<prefix>*.jsonl`` (case-insensitive), so a small
    fixture such as ``coophumaneval_small.jsonl`` in a folder of fixtures is found too.
    """
    folders = [Path(d) for d in (data_dir, os.environ.get("CODEEVAL_DATA_DIR")) if d]
    for folder in folders:
        for name in names:
            if (folder / name).is_file():
                return folder / name
        if prefix and folder.is_dir():
            found = sorted(
                p
                for p in folder.iterdir()
                if p.is_file()
                and p.name.lower().startswith(prefix)
                and p.name.lower().endswith((".jsonl", ".jsonl.gz"))
            )
            if found:
                return found[0]
    return None


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` pairs of a JSONL file (``.gz`` too); blank lines are skipped."""
    try:
        return list(read_objects(path, SuiteDataError))
    except OSError as exc:
        raise SuiteDataError(f"{path}: cannot read ({exc.strerror})") from exc


def problem_from_record(record: Mapping[str, Any], where: str) -> Problem:
    """One :class:`Problem` from a HumanEval-shaped record; ``where`` is ``file:line``."""
    for name in REQUIRED_FIELDS:
        value = record.get(name)
        if not isinstance(value, str) or not value.strip():
            raise SuiteDataError(f"{where}: field {name!r} is missing or not a non-empty string")
    entry_point = record["entry_point"].strip()
    problem = humaneval.problem_from_record(
        {**record, "entry_point": entry_point},
        SUITE,
        {"roles": [HELPER_NAME, entry_point], "helper": HELPER_NAME, "source": where},
    )
    # Defects name the record they come from, so a user can find it in the file.
    return dataclasses.replace(problem, defects=tuple(f"{where}: {d}" for d in problem.defects))


def _from_hub() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    try:
        import datasets  # noqa: F401 - missing, it has a message of its own
    except ImportError as exc:  # pragma: no cover - datasets is a train dependency
        raise SuiteDataError(
            f"{SUITE}: no local file and `datasets` is not installed; set "
            "CODEEVAL_DATA_DIR to a folder with CoopHumanEval.jsonl"
        ) from exc
    try:
        loaded = load_hub_dataset(HUB_NAME)
    except Exception as exc:  # the hub raises many kinds; all mean "not available here"
        raise SuiteDataError(
            f"{SUITE}: no local file (looked for {', '.join(FILE_NAMES)} in data_dir and "
            f"$CODEEVAL_DATA_DIR) and the hub dataset {HUB_NAME} could not be loaded: {exc}"
        ) from exc
    return {
        name: [(f"{HUB_NAME}[{name}]:{i}", dict(row)) for i, row in enumerate(rows)]
        for name, rows in loaded.items()
    }


def load(
    data_dir: str | Path | None = None, path: str | Path | None = None
) -> dict[str, list[Problem]]:
    """CoopHumanEval's splits (the registry slices them).

    A local JSONL file (``path``, or a known file name in ``data_dir`` / ``$CODEEVAL_DATA_DIR``)
    is the split ``test``; otherwise every split of the hub data set is returned.
    """
    local = Path(path) if path else find_local_file(data_dir)
    if local is not None:
        splits = {"test": [(f"{local}:{n}", r) for n, r in read_jsonl(local)]}
    else:
        splits = _from_hub()
    result: dict[str, list[Problem]] = {}
    for split, rows in splits.items():
        problems = [problem_from_record(record, where) for where, record in rows]
        seen: set[str] = set()
        for problem, (where, _) in zip(problems, rows, strict=True):
            if problem.task_id in seen:
                raise SuiteDataError(f"{where}: field 'task_id': {problem.task_id!r} appears twice")
            seen.add(problem.task_id)
        result[split] = problems
    return result
