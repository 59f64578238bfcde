"""The report page of one run (``codeeval report`` and ``OUT/report.html`` after a run)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import harness.report.html as h
import harness.report.plots as plots
from harness import gate
from harness.history import History
from harness.pipeline.results import breakdown, row_language, suite_language
from harness.report.plus import plus_section
from harness.report.rundata import RunData, has_pass_at, not_run

STATUSES = ("passed", "failed", "timeout", "error")


def _by_suite(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        out.setdefault(str(row.get("suite", "")), []).append(row)
    return out


def _pass_at_keys(summary: Mapping[str, Any]) -> list[str]:
    keys = {
        k for stats in summary.get("suites", {}).values() for k in stats if k.startswith("pass@")
    }
    return sorted(keys, key=lambda k: int(k[5:]) if k[5:].isdigit() else 10**9)


def _first_line(text: Any, width: int = 120) -> str:
    line = str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


_EXCEPTION = re.compile(
    r"^(?:E\s+|candidate raised )?([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))\b"
)

# an assert's line, or a judge's comparison (harness.oracles: "expected 3, got 4", "not within
# atol=1e-06: expected 0.5, got 6.5")
_WRONG_ANSWER = re.compile(r"assert |AssertionError|(?:not within [^:]*: )?expected ")


def failure_kind(case: Mapping[str, Any]) -> str:
    """A coarse kind of a case that did not pass: timeout, wrong answer, or the exception raised."""
    status = str(case.get("status"))
    if status in ("timeout", "error", "skipped"):
        return status
    message = str(case.get("message") or "").strip()
    message = message.removeprefix("Failed: ")  # pytest.fail's line: a verdict of the judge
    found = _EXCEPTION.match(message)
    if found and found.group(1) != "AssertionError":
        return found.group(1).rsplit(".", 1)[-1]
    if _WRONG_ANSWER.match(message):
        return "wrong answer"
    return "other failure"


NOT_RUN_STATUS = "not run"  # the case status the report shows for rundata.not_run's cases


def _classified(case: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(status shown, failure kind, first line of the message)`` of a case; the kind and
    the line are empty for a case that passed or was not run."""
    status = str(case.get("status"))
    if status == "passed":
        return status, "", ""
    if not_run(case):
        return NOT_RUN_STATUS, "", ""
    return status, failure_kind(case), _first_line(case.get("message")) or f"({status})"


def run_overview(run: RunData) -> str:
    settings = run.summary.get("settings") or {}
    facts: list[tuple[str, Any]] = [("source", run.source)]
    for key, value in (
        ("model", run.model or settings.get("model")),
        ("recorded", run.created_at),
        ("history run", run.run_id),
        ("code version", run.extra.get("code_version")),
    ):
        if value:
            facts.append((key, value))
    for key, value in settings.items():
        facts.append((f"settings.{key}", json.dumps(value, default=str)[:200]))
    return h.section("Run", h.table(["", ""], facts), anchor="run")


COUNTS = ("problems", "samples", "passed", "failed", "timeout", "errors", "data_errors")
NO_PASS_AT = "n/a"  # a suite none of whose samples could be judged has no pass@k


def _count_cells(stats: Mapping[str, Any], keys: Sequence[str]) -> list[Any]:
    # A k above a suite's samples per problem leaves its cell empty; no pass@k at all is n/a.
    missing = None if has_pass_at(stats) else NO_PASS_AT
    return [int(stats.get(c, 0)) for c in COUNTS] + [
        float(stats[k]) if k in stats else missing for k in keys
    ]


def languages_of(run: RunData) -> dict[str, Any]:
    """The run's per-language entries (summary.json's, else computed from its rows: runs
    recorded before summaries had them)."""
    found = run.summary.get("languages")
    if isinstance(found, dict) and found:
        return found
    if not run.rows:
        return {}
    ks = [int(k[5:]) for k in _pass_at_keys(run.summary) if k[5:].isdigit()] or [1]
    return breakdown(run.rows, ks)["languages"]


def pass_at_table(run: RunData) -> str:
    keys = _pass_at_keys(run.summary) or ["pass@1"]  # a column that says n/a, not none
    rows = []
    unjudged = []
    for suite, stats in run.summary.get("suites", {}).items():
        language = stats.get("language") or suite_language(suite)
        version = stats.get("data_version")  # a published benchmark's release, named
        label = f"{suite} ({version})" if version else suite
        rows.append([label, language, *_count_cells(stats, keys)])
        if not has_pass_at(stats):
            unjudged.append(suite)
    headers = ["suite", "language", *COUNTS, *keys]
    parts = [h.table(headers, rows)]
    if unjudged:
        parts.append(
            h.paragraph(
                f"No pass@k for {', '.join(unjudged)}: no sample could be judged (every one an "
                "error or a data error, see below), or fewer samples per problem than any k.",
                "muted",
            )
        )
    languages = languages_of(run)
    if languages:
        by_language = [
            [language, ", ".join(stats.get("suites", [])), *_count_cells(stats, keys)]
            for language, stats in languages.items()
        ]
        parts.append(h.paragraph("By language (the problems of all its suites pooled):"))
        parts.append(h.table(["language", "suites", *COUNTS, *keys], by_language))
    return h.section("pass@k", *parts, anchor="passk")


def failure_kinds(run: RunData) -> str:
    counts: dict[str, Counter[str]] = {}
    error_kinds: Counter[str] = Counter()
    case_status: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    # EvalPlus's rows hold hundreds of thousands of cases but few distinct ones: cases are
    # counted by (status, message, weaker) first, and each distinct one classified once.
    distinct: Counter[tuple[str, str, bool]] = Counter()
    for row in run.rows:
        counts.setdefault(str(row.get("suite", "")), Counter())[str(row.get("status"))] += 1
        if row.get("status") == "error":
            error_kinds[str(row.get("error_kind") or "unknown")] += 1
        cases = row.get("cases")
        if cases:
            distinct.update(
                (str(case.get("status")), str(case.get("message") or ""), bool(case.get("weaker")))
                for case in cases
            )
    weaker = 0
    for (status, message, is_weaker), number in distinct.items():
        weaker += number if is_weaker else 0
        shown_status, kind, first_line = _classified({"status": status, "message": message})
        case_status[shown_status] += number
        if kind:
            kinds[kind] += number
            messages[first_line] += number
    parts = []
    if counts:
        parts.append(h.image(plots.status_bars(counts), "sample verdicts per suite"))
        parts.append(
            h.table(
                ["suite", *STATUSES],
                [[s, *(c.get(k, 0) for k in STATUSES)] for s, c in counts.items()],
            )
        )
    if error_kinds:
        parts.append(h.table(["error kind", "samples"], error_kinds.most_common()))
    if case_status:
        parts.append(h.table(["case status", "cases"], case_status.most_common()))
        if case_status.get(NOT_RUN_STATUS):
            parts.append(
                h.paragraph(
                    f"{case_status[NOT_RUN_STATUS]} case(s) were not run: their sample's verdict "
                    "was already known (an earlier case failed or timed out, and only the "
                    "verdict was asked for; --llm-every-case runs them). They are left out of "
                    "the failure kinds below.",
                    "muted",
                )
            )
        parts.append(
            h.paragraph(
                f"{weaker} case(s) are weaker: their verdict came from a process that ran "
                "the candidate's code (a mined repository's own tests).",
                "muted",
            )
        )
    if kinds:
        parts.append(h.table(["failure kind", "cases"], kinds.most_common()))
    if messages:
        parts.append(h.table(["most common failure", "cases"], messages.most_common(15)))
    return h.section("Failure kinds", *parts, anchor="failures")


def reward_section(run: RunData) -> str | None:
    parts: dict[str, list[float]] = {}
    rewards: list[float] = []
    for row in run.rows:
        if isinstance(row.get("reward"), (int, float)):
            rewards.append(float(row["reward"]))
        for name, value in (row.get("reward_parts") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                parts.setdefault(str(name), []).append(float(value))
    if not parts and not rewards:
        return None
    series = {"reward": rewards, **parts} if rewards else parts
    stats = [[name, len(v), sum(v) / len(v), min(v), max(v)] for name, v in series.items() if v]
    return h.section(
        "Reward parts",
        h.image(plots.reward_parts(parts, rewards), "reward part distributions"),
        h.table(["part", "samples", "mean", "min", "max"], stats),
        *_reward_groups(run.rows),
        anchor="rewards",
    )


def _reward_groups(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Mean reward and parts per language and suite, and the parts named missing (never
    scored: see ``reward_missing``), per language."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    missing: dict[tuple[str, str], int] = {}
    for row in rows:
        language = row_language(dict(row))
        groups.setdefault((language, str(row.get("suite", ""))), []).append(row)
        for part in row.get("reward_missing") or {}:
            missing[(language, str(part))] = missing.get((language, str(part)), 0) + 1
    names = sorted({str(p) for row in rows for p in row.get("reward_parts") or {}})
    table = []
    for (language, suite), members in sorted(groups.items()):
        scored = [float(r["reward"]) for r in members if isinstance(r.get("reward"), (int, float))]
        cells: list[Any] = [language, suite, len(scored)]
        cells.append(sum(scored) / len(scored) if scored else None)
        for name in names:
            values = [
                float(r["reward_parts"][name])
                for r in members
                if isinstance((r.get("reward_parts") or {}).get(name), (int, float))
            ]
            cells.append(sum(values) / len(values) if values else None)
        table.append(cells)
    out = []
    if len(table) > 1:
        out.append(h.paragraph("Mean reward and parts by language and suite:"))
        out.append(h.table(["language", "suite", "scored", "reward", *names], table))
    if missing:
        out.append(h.paragraph("Parts named missing (left out of the reward, not scored 0):"))
        out.append(
            h.table(["language", "part", "samples"], [[*k, n] for k, n in sorted(missing.items())])
        )
    return out


def problem_grid(run: RunData) -> str:
    parts = [
        h.paragraph(
            "One cell per problem, coloured by its pass@1 (red 0, green 1, grey: only errors). "
            "Hover for details.",
            "muted",
        )
    ]
    rates: dict[str, list[float]] = {}
    for suite, rows in _by_suite(run.rows).items():
        results = gate.problem_results(rows)
        tasks = list(dict.fromkeys(str(r["task_id"]) for r in rows))
        cells = []
        for task in tasks:
            res = results.get(task)
            tip = f"{task}: " + (f"{res.passed}/{res.samples} passed" if res else "errors only")
            cells.append((task, res.rate if res else None, tip))
        rates[suite] = [r.rate for r in results.values()]
        parts.append(f"<h3>{h.escape(suite)}</h3>" + h.grid(cells))
        parts.append(_not_passing(rows, results))
    if any(rates.values()):
        parts.append(h.image(plots.rate_histogram(rates), "per-problem pass rate histogram"))
    return h.section("Problems", *parts, anchor="problems")


def _not_passing(rows: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> str:
    """A folded table of the problems that did not always pass, with their first failure."""
    first: dict[str, str] = {}
    for row in rows:
        task = str(row["task_id"])
        if row.get("status") == "passed" or task in first:
            continue
        cases = row.get("cases") or []
        bad = [c for c in cases if c.get("status") != "passed" and not not_run(c)]
        why = _first_line(bad[0].get("message")) if bad else ""
        first[task] = f"{row.get('status')}: {why}" if why else str(row.get("status"))
    table = []
    for task, why in list(first.items())[:500]:
        res = results.get(task)
        table.append([task, f"{res.passed}/{res.samples}" if res else "errors only", why])
    if not table:
        return h.paragraph("Every sample of every problem passed.", "muted")
    return (
        f"<details><summary>{len(first)} problem(s) with failing samples</summary>"
        + h.table(["problem", "passed", "first failure"], table)
        + "</details>"
    )


def data_errors(summary: Mapping[str, Any]) -> str | None:
    """Problems left out as data errors, and samples-file problems, when the summary has them."""
    items = [
        [str(d.get("suite", "")), str(d.get("task_id", "")), str(d.get("reason", ""))]
        for d in summary.get("data_errors") or []
        if isinstance(d, Mapping)
    ]
    inputs = [[str(e)] for e in summary.get("input_errors") or []]
    if not items and not inputs:
        return None
    parts = []
    if items:
        parts.append(h.paragraph("Problems with known data defects (not counted as failures):"))
        parts.append(h.table(["suite", "problem", "reason"], items))
    if inputs:
        parts.append(h.paragraph("Problems in the samples file:"))
        parts.append(h.table(["input error"], inputs))
    return h.section("Data and input errors", *parts, anchor="data-errors")


def history_section(run: RunData, history: History | None) -> str | None:
    if history is None or not history.path.exists():
        return None
    settings = run.summary.get("settings") or {}
    model = run.model or str(settings.get("model") or "")
    split = run.extra.get("split", settings.get("split"))
    series = {}
    for suite in run.suites:
        points = history.series(model=model, suite=suite, split=split)
        if points:
            series[suite] = points
    if not series:
        return None
    rows = [
        [suite, run_id, when, value]
        for suite, points in series.items()
        for when, run_id, value in points[-10:]
    ]
    return h.section(
        "History",
        h.paragraph(f"Comparable runs of model '{model or '(none)'}' in {history.path}.", "muted"),
        h.image(plots.history_lines(series), "pass@1 over time"),
        h.table(["suite", "run", "recorded", "pass@1"], rows),
        anchor="history",
    )


def gate_section(summary: Mapping[str, Any]) -> str | None:
    info = summary.get("gate")
    if not isinstance(info, dict):
        return None
    text = "\n".join(info.get("report") or [])
    verdict = "passed" if info.get("passed") else "FAILED"
    css = "ok" if info.get("passed") else "bad"
    return h.section(
        "CI gate", f'<p class="{css}">gate {verdict}</p>', h.preformatted(text), anchor="gate"
    )


def report_page(run: RunData, history: History | None = None) -> str:
    """The HTML page of one run."""
    sections = [
        run_overview(run),
        pass_at_table(run),
        gate_section(run.summary),
        failure_kinds(run),
        data_errors(run.summary),
        reward_section(run),
        plus_section(run),
        problem_grid(run),
        history_section(run, history),
    ]
    return h.page(f"codeeval report: {run.label}", [s for s in sections if s])
