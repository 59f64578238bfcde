"""Loading a finished run, from an out dir, a ``summary.json`` or the run history.

Every problem with a file is a :class:`RunFileError` whose message names the file, the line
(for JSON and JSONL) and the field, because these files are often hand-picked CI baselines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.history import History
from harness.jsonlines import read_objects

# A case left unrun once its sample's verdict was known ("not run: an earlier case failed",
# "not run: the case before it timed out"): neither a failure of its own nor a kind of one.
_NOT_RUN = re.compile(r"(?:Failed: )?not run\b")


def not_run(case: Mapping[str, Any]) -> bool:
    """Whether a row's case was left unrun (its sample stopped at an earlier failure)."""
    return case.get("status") != "passed" and bool(
        _NOT_RUN.match(str(case.get("message") or "").lstrip())
    )


class RunFileError(ValueError):
    """A run's files are missing or malformed; the message says where and what."""


@dataclass
class RunData:
    """A finished run: its summary, its per-sample rows and where it came from."""

    label: str
    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    source: str
    run_id: int | None = None
    model: str = ""
    created_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def suites(self) -> list[str]:
        return list(self.summary.get("suites", {}))


def summary_path(path: Path) -> Path:
    """``summary.json`` of an out dir, or the path itself when it names a file."""
    return path / "summary.json" if path.is_dir() else path


def load_summary(path: Path) -> dict[str, Any]:
    """Read and validate a ``summary.json``."""
    if not path.exists():
        raise RunFileError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RunFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise RunFileError(
            f"{path}:{exc.lineno}: column {exc.colno}: not valid JSON: {exc.msg}"
        ) from None
    if not isinstance(data, dict):
        raise RunFileError(f"{path}: expected a JSON object at the top, got {type(data).__name__}")
    suites = data.get("suites")
    if suites is None:
        raise RunFileError(f"{path}: field 'suites' is missing (is this a summary.json?)")
    if not isinstance(suites, dict) or not suites:
        raise RunFileError(f"{path}: field 'suites' must be a non-empty object of suites")
    for name, stats in suites.items():
        if not isinstance(stats, dict):
            raise RunFileError(f"{path}: field 'suites.{name}' must be an object")
        _check_suite(path, str(name), stats)
    return data


COUNT_FIELDS = ("problems", "samples", "passed", "failed", "timeout", "errors", "data_errors")


def _check_suite(path: Path, name: str, stats: dict[str, Any]) -> None:
    """A suite's pass@k values and counts. pass@k may be absent, but then the counts must
    say why: a suite whose every sample was an error (e.g. every problem a data error, see
    docs/dependencies.md) has no pass@k, nor has one with fewer samples per problem than
    the smallest k asked for."""
    for key, value in stats.items():
        if not str(key).startswith("pass@"):
            continue
        if not str(key)[5:].isdigit() or int(str(key)[5:]) < 1:
            raise RunFileError(f"{path}: field 'suites.{name}.{key}': k must be an integer >= 1")
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0.0 <= float(value) <= 1.0
        ):
            raise RunFileError(f"{path}: field 'suites.{name}.{key}' must be a number in [0, 1]")
    for key in COUNT_FIELDS:
        value = stats.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise RunFileError(f"{path}: field 'suites.{name}.{key}' must be an integer >= 0")
    if not has_pass_at(stats) and "samples" not in stats:
        raise RunFileError(
            f"{path}: field 'suites.{name}.pass@1' is missing, and so are the counts that "
            "would say why (a suite without pass@k, e.g. one of only data errors, still "
            "gives 'samples')"
        )


def has_pass_at(stats: Any) -> bool:
    """Whether a suite's summary entry has any pass@k (none when no sample could be judged)."""
    return isinstance(stats, dict) and any(str(k).startswith("pass@") for k in stats)


def load_rows(path: Path) -> list[dict[str, Any]]:
    """Read and validate a ``results.jsonl`` (the keys the gate and reports rely on)."""
    if not path.exists():
        raise RunFileError(
            f"{path}: no such file (the per-sample verdicts must lie beside summary.json)"
        )
    rows = []
    for lineno, row in read_objects(path, RunFileError):
        for key in ("task_id", "status"):
            if key not in row:
                raise RunFileError(f"{path}:{lineno}: field '{key}' is missing")
        rows.append(row)
    return rows


def load_out_dir(path: Path | str, label: str | None = None) -> RunData:
    """A run from an out dir or from the path of its ``summary.json``."""
    spath = summary_path(Path(path))
    summary = load_summary(spath)
    rows = load_rows(spath.parent / "results.jsonl")
    settings = summary.get("settings") or {}
    history = summary.get("history") or {}
    return RunData(
        label=label or str(spath.parent),
        summary=summary,
        rows=rows,
        source=str(spath),
        run_id=history.get("run_id") if isinstance(history, dict) else None,
        model=str(settings.get("model") or ""),
        created_at=str(history.get("created_at", "")) if isinstance(history, dict) else "",
    )


def load_history_run(run_id: int, history: History | None = None) -> RunData:
    """A run recorded in the history database."""
    db = history or History()
    info = db.get(run_id)
    if info is None:
        raise RunFileError(f"{db.path}: no run with id {run_id} in the history")
    return RunData(
        label=f"run {run_id}",
        summary=db.summary(run_id),
        rows=db.rows(run_id),
        source=f"{db.path}#{run_id}",
        run_id=run_id,
        model=info.model,
        created_at=info.created_at,
        extra={"code_version": info.code_version, "split": info.split},
    )


def load_run(ref: str, history: History | None = None) -> RunData:
    """An out dir, a ``summary.json`` path, or a history run id (``12`` or ``history:12``)."""
    key = ref.removeprefix("history:")
    if key.isdigit() and (ref.startswith("history:") or not Path(ref).exists()):
        return load_history_run(int(key), history)
    return load_out_dir(ref)


def check_suites(run: RunData, suites: list[str]) -> None:
    """Raise when ``run`` (a baseline) lacks one of ``suites``."""
    missing = [s for s in suites if s not in run.summary.get("suites", {})]
    if missing:
        have = ", ".join(sorted(run.summary.get("suites", {}))) or "none"
        raise RunFileError(
            f"{run.source}: field 'suites' has no {', '.join(repr(s) for s in missing)} "
            f"(the baseline has: {have}); a baseline must be a run of the same suite"
        )
