"""The report's plus section: per problem, how many samples the generated plus cases took away.

A suite with plus cases (``harness.plus``) judges every sample twice: on the benchmark's original
checks alone (``base_passed`` in results.jsonl) and on original + plus (``passed``). The drop per
problem says where the original checks were too weak, and the first plus case a sample failed
shows the input that told it apart (small, by construction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import harness.report.html as h
from harness.report.rundata import RunData, not_run


def plus_section(run: RunData) -> str | None:
    """The section, or ``None`` when no suite of the run has plus cases."""
    suites: dict[str, list[Mapping[str, Any]]] = {}
    for row in run.rows:
        if "base_passed" in row:
            suites.setdefault(str(row.get("suite", "")), []).append(row)
    if not suites:
        return None
    parts = [
        h.paragraph(
            "Samples that pass the original checks but fail a generated plus case (input and "
            "expected value from the reference solution), per problem, largest drop first.",
            "muted",
        )
    ]
    for suite, rows in suites.items():
        parts.append(f"<h3>{h.escape(suite)}</h3>")
        parts.append(_suite_table(rows, run.summary.get("suites", {}).get(suite, {})))
    return h.section("Plus cases: drop per problem", *parts, anchor="plus")


def _suite_table(rows: Sequence[Mapping[str, Any]], entry: Mapping[str, Any]) -> str:
    per_task: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("status") == "error":
            continue
        stats = per_task.setdefault(
            str(row["task_id"]), {"samples": 0, "base": 0, "plus": 0, "example": ""}
        )
        stats["samples"] += 1
        stats["base"] += bool(row.get("base_passed"))
        stats["plus"] += bool(row.get("passed"))
        if row.get("base_passed") and not row.get("passed") and not stats["example"]:
            stats["example"] = _first_plus_failure(row)
    base = entry.get("base", {})
    lines = [
        f"{key}: {base[key]:.4f} on the original checks, {entry[key]:.4f} with plus cases"
        for key in base
        if key.startswith("pass@") and key in entry
    ]
    table = []
    for task, stats in sorted(
        per_task.items(), key=lambda item: (item[1]["plus"] - item[1]["base"], item[0])
    ):
        drop = stats["base"] - stats["plus"]
        if drop <= 0:
            continue
        table.append(
            [
                task,
                stats["samples"],
                stats["base"],
                stats["plus"],
                drop / stats["samples"],
                stats["example"],
            ]
        )
    summary = h.paragraph("; ".join(lines)) if lines else ""
    if not table:
        return summary + h.paragraph(
            "No sample that passed the original checks failed a plus case.", "muted"
        )
    return summary + h.table(
        ["problem", "samples", "pass original", "pass with plus", "drop", "first plus failure"],
        table,
    )


def _first_plus_failure(row: Mapping[str, Any]) -> str:
    for case in row.get("cases") or []:
        if case.get("plus") and case.get("status") != "passed" and not not_run(case):
            message = str(case.get("message") or case.get("status") or "").strip()
            line = message.splitlines()[0] if message else ""
            return line[:160]
    return ""
