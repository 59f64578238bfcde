"""Run history: every evaluation run recorded in an embedded SQLite database.

The database lives at ``$CODEEVAL_HISTORY``, else ``$CODEEVAL_CACHE/history.sqlite``, else
``~/.cache/codeeval/history.sqlite``. One ``runs`` row per run (model, split, settings, code
version, the whole summary), one ``run_suites`` row per suite of a run (pass@k), one ``samples``
row per sample (verdict, reward and its parts, and since schema version 2 its prompt and
completion text) so that a later run can be gated against this one problem by problem, and a
value-based trainer (``trainers.dqn``) can learn offline from recorded evaluations. Since schema
version 3 suites and samples carry their language (``python``, ``js``, ``cpp``, ``java``,
``rs``), and samples the reward parts named missing (``reward_missing``):
:meth:`History.breakdown` gives a run's counts and pass@k per language and per suite.

A database of an older schema version is migrated in place when it is opened (columns are added;
old rows keep ``NULL`` there).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.pipeline.results import row_language, suite_language

SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    split TEXT NOT NULL DEFAULT '',
    code_version TEXT NOT NULL DEFAULT '',
    out_dir TEXT NOT NULL DEFAULT '',
    settings TEXT NOT NULL DEFAULT '{}',
    summary TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS run_suites (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    suite TEXT NOT NULL,
    problems INTEGER NOT NULL DEFAULT 0,
    samples INTEGER NOT NULL DEFAULT 0,
    passed INTEGER NOT NULL DEFAULT 0,
    pass_at TEXT NOT NULL DEFAULT '{}',
    language TEXT,
    PRIMARY KEY (run_id, suite)
);
CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    suite TEXT NOT NULL,
    task_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    status TEXT NOT NULL,
    passed INTEGER NOT NULL,
    error_kind TEXT,
    agent TEXT,
    reward REAL,
    reward_parts TEXT,
    prompt TEXT,
    completion TEXT,
    language TEXT,
    reward_missing TEXT
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id, suite);
CREATE INDEX IF NOT EXISTS run_suites_suite ON run_suites(suite);
"""

_SAMPLE_COLUMNS = (
    "run_id", "suite", "task_id", "sample_id", "status", "passed", "error_kind", "agent",
    "reward", "reward_parts", "prompt", "completion", "language", "reward_missing",
)  # fmt: skip
_JSON_COLUMNS = ("reward_parts", "reward_missing")
# Columns each schema version added to a table: ``version -> [(table, column, type)]``. A
# database of version v gets the columns of every later version.
_ADDED_COLUMNS: dict[int, list[tuple[str, str, str]]] = {
    2: [("samples", "prompt", "TEXT"), ("samples", "completion", "TEXT")],
    3: [
        ("run_suites", "language", "TEXT"),
        ("samples", "language", "TEXT"),
        ("samples", "reward_missing", "TEXT"),
    ],
}


def default_path() -> Path:
    """Where the history database lives, from the environment."""
    explicit = os.environ.get("CODEEVAL_HISTORY")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("CODEEVAL_CACHE")
    base = Path(cache).expanduser() if cache else Path.home() / ".cache" / "codeeval"
    return base / "history.sqlite"


@dataclass(frozen=True)
class RunInfo:
    """One recorded run, as listed by ``codeeval history``."""

    id: int
    created_at: str
    model: str
    split: str
    code_version: str
    out_dir: str
    suites: dict[str, dict[str, Any]]  # suite -> {"problems", "samples", "passed", "pass@k"...}

    def pass_at(self, suite: str, k: int = 1) -> float | None:
        value = self.suites.get(suite, {}).get(f"pass@{k}")
        return None if value is None else float(value)


class History:
    """A handle on the history database (opened per operation; safe across processes)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A generous timeout: parallel CI jobs may record at the same moment.
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            con.execute("PRAGMA foreign_keys = ON")
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path}: history schema version {version} is newer than this "
                    f"codeeval-rl understands ({SCHEMA_VERSION})"
                )
            if version < SCHEMA_VERSION:
                con.executescript(_SCHEMA)
                _migrate(con)
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            with con:
                yield con
        finally:
            con.close()

    def record(
        self,
        *,
        summary: Mapping[str, Any],
        rows: Iterable[Mapping[str, Any]],
        model: str | None = None,
        split: str | None = None,
        code_version: str = "",
        out_dir: str | Path = "",
        created_at: str | None = None,
        prompts: Mapping[str, str] | None = None,
    ) -> int:
        """Store one run and return its id. A sample's prompt is its row's ``prompt``, else
        ``prompts[task_id]`` (results rows carry the completion but not the prompt)."""
        prompts = prompts or {}
        settings = summary.get("settings", {}) or {}
        when = created_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._connect() as con:
            cur = con.execute(
                "INSERT INTO runs (created_at, model, split, code_version, out_dir, settings,"
                " summary) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    when,
                    model or "",
                    split or "",
                    code_version,
                    str(out_dir),
                    json.dumps(settings, default=str),
                    json.dumps(dict(summary), default=str),
                ),
            )
            run_id = int(cur.lastrowid or 0)
            for suite, stats in (summary.get("suites") or {}).items():
                pass_at = {k: v for k, v in stats.items() if str(k).startswith("pass@")}
                con.execute(
                    "INSERT INTO run_suites (run_id, suite, problems, samples, passed, pass_at,"
                    " language) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        suite,
                        int(stats.get("problems", 0)),
                        int(stats.get("samples", 0)),
                        int(stats.get("passed", 0)),
                        json.dumps(pass_at),
                        str(stats.get("language") or suite_language(str(suite))),
                    ),
                )
            con.executemany(
                f"INSERT INTO samples ({', '.join(_SAMPLE_COLUMNS)})"
                f" VALUES ({', '.join('?' * len(_SAMPLE_COLUMNS))})",
                (_sample_tuple(run_id, row, prompts) for row in rows),
            )
        return run_id

    def runs(
        self,
        *,
        model: str | None = None,
        suite: str | None = None,
        split: str | None = None,
        limit: int | None = None,
        language: str | None = None,
    ) -> list[RunInfo]:
        """Recorded runs, newest first, optionally filtered (``language``: runs with a suite
        of that language)."""
        where, params = _filters(model=model, suite=suite, split=split, language=language)
        sql = f"SELECT id, created_at, model, split, code_version, out_dir FROM runs r{where}"
        sql += " ORDER BY created_at DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._connect() as con:
            found = con.execute(sql, params).fetchall()
            suites = _suites_of(con, [r[0] for r in found])
        return [_run_info(r, suites.get(r[0], {})) for r in found]

    def get(self, run_id: int) -> RunInfo | None:
        with self._connect() as con:
            row = con.execute(
                "SELECT id, created_at, model, split, code_version, out_dir FROM runs WHERE id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                return None
            return _run_info(row, _suites_of(con, [run_id]).get(run_id, {}))

    def latest_comparable(
        self,
        *,
        model: str | None,
        suites: Iterable[str],
        split: str | None = None,
        exclude: Iterable[int] = (),
    ) -> RunInfo | None:
        """The newest run of the same model and split that covers every one of ``suites``."""
        wanted = set(suites)
        skip = set(exclude)
        for run in self.runs(model=model or "", split=split or ""):
            if run.id not in skip and wanted <= set(run.suites):
                return run
        return None

    def summary(self, run_id: int) -> dict[str, Any]:
        with self._connect() as con:
            row = con.execute("SELECT summary FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"{self.path}: no run with id {run_id}")
        return dict(json.loads(row[0]))

    def rows(self, run_id: int) -> list[dict[str, Any]]:
        """The run's per-sample rows, in the ``results.jsonl`` shape (the stored keys only)."""
        keys = ("suite", "task_id", "sample_id", "status", "passed", "error_kind", "agent")
        optional = ("reward", "reward_parts", "prompt", "completion", "language")
        optional += ("reward_missing",)
        with self._connect() as con:
            found = con.execute(
                f"SELECT {', '.join(keys + optional)} FROM samples WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            ).fetchall()
        out = []
        for values in found:
            row: dict[str, Any] = dict(zip(keys, values[: len(keys)], strict=True))
            row["passed"] = bool(row["passed"])
            for key, value in zip(optional, values[len(keys) :], strict=True):
                if value is not None:  # NULL: not stored (an older schema, or no reward)
                    row[key] = json.loads(value) if key in _JSON_COLUMNS else value
            out.append(row)
        return out

    def breakdown(self, run_id: int, ks: Iterable[int] = (1,)) -> dict[str, Any]:
        """A run's counts and pass@k per language and per suite, from its samples:
        ``{"languages": {language: entry}, "suites": {suite: entry}}`` (as in summary.json)."""
        from harness.pipeline.results import breakdown

        with self._connect() as con:
            found = con.execute(
                "SELECT suite, task_id, status, passed, error_kind, language FROM samples"
                " WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            ).fetchall()
        rows = [
            {
                "suite": suite, "task_id": task, "status": status, "passed": bool(passed),
                "error_kind": kind, "language": language or suite_language(suite),
            }
            for suite, task, status, passed, kind, language in found
        ]  # fmt: skip
        return breakdown(rows, ks)

    def series(
        self, *, model: str | None, suite: str, split: str | None = None, k: int = 1
    ) -> list[tuple[str, int, float]]:
        """``(created_at, run_id, pass@k)`` of comparable runs, oldest first (for plots)."""
        points = []
        for run in reversed(self.runs(model=model or "", suite=suite, split=split or "")):
            value = run.pass_at(suite, k)
            if value is not None:
                points.append((run.created_at, run.id, value))
        return points


def _run_info(row: tuple[Any, ...], suites: dict[str, dict[str, Any]]) -> RunInfo:
    run_id, created_at, model, split, code_version, out_dir = row
    return RunInfo(int(run_id), created_at, model, split, code_version, out_dir, suites=suites)


def _filters(**kw: str | None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for key in ("model", "split"):
        if kw.get(key) is not None:
            clauses.append(f"r.{key} = ?")
            params.append(kw[key])
    if kw.get("suite") is not None:
        clauses.append("EXISTS (SELECT 1 FROM run_suites s WHERE s.run_id = r.id AND s.suite = ?)")
        params.append(kw["suite"])
    if kw.get("language") is not None:
        clauses.append(
            "EXISTS (SELECT 1 FROM run_suites s WHERE s.run_id = r.id AND s.language = ?)"
        )
        params.append(kw["language"])
    return ((" WHERE " + " AND ".join(clauses)) if clauses else ""), params


def _suites_of(con: sqlite3.Connection, ids: list[int]) -> dict[int, dict[str, dict[str, Any]]]:
    out: dict[int, dict[str, dict[str, Any]]] = {}
    if not ids:
        return out
    marks = ",".join("?" * len(ids))
    for run_id, suite, problems, samples, passed, pass_at, language in con.execute(
        f"SELECT run_id, suite, problems, samples, passed, pass_at, language FROM run_suites"
        f" WHERE run_id IN ({marks})",
        ids,
    ):
        stats = {"problems": problems, "samples": samples, "passed": passed}
        stats["language"] = language or suite_language(suite)
        stats.update(json.loads(pass_at))
        out.setdefault(run_id, {})[suite] = stats
    return out


def _migrate(con: sqlite3.Connection) -> None:
    """Add the columns that later schema versions added and this database lacks."""
    for columns in _ADDED_COLUMNS.values():
        for table, column, kind in columns:
            have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                try:
                    con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                except sqlite3.OperationalError as exc:
                    # Another process migrating the same file at the same moment added it.
                    if "duplicate column" not in str(exc):
                        raise


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _sample_tuple(
    run_id: int, row: Mapping[str, Any], prompts: Mapping[str, str]
) -> tuple[Any, ...]:
    parts = row.get("reward_parts")
    reward = row.get("reward")
    task = str(row["task_id"])
    return (
        run_id,
        str(row.get("suite", "")),
        task,
        str(row.get("sample_id", "")),
        str(row.get("status", "")),
        1 if row.get("passed", row.get("status") == "passed") else 0,
        row.get("error_kind"),
        row.get("agent"),
        float(reward) if isinstance(reward, (int, float)) else None,
        json.dumps(parts) if parts is not None else None,
        _text(row.get("prompt")) or _text(prompts.get(task)),
        _text(row.get("completion", row.get("solution"))),
        row_language(row),
        json.dumps(row["reward_missing"]) if row.get("reward_missing") else None,
    )
