"""How the reports of generated tests travel from xdist workers to the controller.

xdist sends every report through execnet's serializer, which walks the report's nested data
in Python: for a sample item (three reports: setup, call, teardown) that costs more than
judging the sample. The report of a generated test travels instead as one JSON string
(encoded by json's C encoder) inside the usual report dictionary, and is rebuilt into the same
``TestReport`` on the controller. Reports of anything else keep pytest's own path.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.jsonlines import loads

PACKED = "codeeval_packed_report"


@pytest.hookimpl(tryfirst=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> dict[str, Any] | None:
    if not isinstance(report, pytest.TestReport) or not _is_generated(report):
        return None
    data = report._to_json()
    data["$report_type"] = "TestReport"
    try:
        return {PACKED: json.dumps(data, separators=(",", ":"))}
    except (TypeError, ValueError):  # a user property that is not plain JSON: pytest's path
        return None


@pytest.hookimpl(tryfirst=True)
def pytest_report_from_serializable(config: pytest.Config, data: dict[str, Any]) -> Any:
    if PACKED not in data:
        return None
    full = loads(data[PACKED])
    # xdist adds item_index, worker_id and testrun_uid next to the packed report.
    full.update((key, value) for key, value in data.items() if key != PACKED)
    del full["$report_type"]
    restore_tuples(full)
    return pytest.TestReport._from_json(full)


def restore_tuples(data: dict[str, Any]) -> None:
    """The tuples of a report that JSON turned into lists, back as pytest's own path (execnet)
    delivers them: its location, a skip's ``(path, line, reason)`` and the pairs of its
    sections and user properties (``-rs`` asserts a skip's is a tuple)."""
    for key in ("location", "longrepr"):
        if isinstance(data.get(key), list):
            data[key] = tuple(data[key])
    for key in ("sections", "user_properties"):
        if isinstance(data.get(key), list):
            data[key] = [tuple(pair) if isinstance(pair, list) else pair for pair in data[key]]


def _is_generated(report: pytest.TestReport) -> bool:
    """A report of a test of a compiled suite (they carry the ``llm_task`` marker)."""
    return "llm_task" in report.keywords
