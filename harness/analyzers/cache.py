"""Analyzer results cached by the hash of (program text, problem fingerprint, analyzer version).

RL batches repeat themselves (the same completion sampled twice, the same program scored in
every turn), so static reports are kept in memory and on disk in SQLite under
``$CODEEVAL_CACHE`` (default ``~/.cache/codeeval``). Lookups and stores are batched: one query
per analyzer per batch. Both layers are bounded: a reward server scoring a thousand new
programs a second would otherwise add a few hundred MB to the file every hour. On disk the
reports written longest ago go first (``DISK_LIMIT``, checked every ``PRUNE_EVERY`` stores).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.jsonlines import loads
from harness.paths import cache_dir
from harness.records import Problem

MEMORY_LIMIT = 200_000  # entries; the memory layer is cleared when it grows past this
DISK_LIMIT = 2_000_000  # entries on disk (a few hundred bytes each); the oldest go past it
PRUNE_EVERY = 20_000  # stores by this process between two counts of the disk's entries


def problem_fingerprint(problem: Problem | None) -> str:
    """``Problem.fingerprint()`` of the problem as its suite defines it: without the measured
    reference timings and the per-case time limits the harness adds (``with_timeouts``), which
    change with the machine and the run's options but never change a static report."""
    if problem is None:
        return ""
    metadata = {k: v for k, v in problem.metadata.items() if k != "reference_durations"}
    cases = tuple(dataclasses.replace(c, timeout_s=None) for c in problem.cases)
    return dataclasses.replace(problem, cases=cases, metadata=metadata).fingerprint()


def cache_key(name: str, version: str, program: str, fingerprint: str) -> str:
    text = "\0".join((name, version, fingerprint, program))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AnalyzerCache:
    """A memory dict in front of a SQLite table ``reports(key, report)``."""

    def __init__(
        self, path: Path | None = None, disk_limit: int = DISK_LIMIT, prune_every: int = PRUNE_EVERY
    ) -> None:
        self.path = path if path is not None else cache_dir() / "analyzers.sqlite"
        self.memory: dict[str, dict[str, Any]] = {}
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.disk_error: str | None = None
        self.disk_limit = disk_limit
        self.prune_every = prune_every
        self._stored = 0  # since the last count

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and self.disk_error is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS reports (key TEXT PRIMARY KEY, report TEXT)")
                db.commit()
                self._db = db
            except sqlite3.Error as exc:  # a read-only home: keep the memory layer only
                self.disk_error = f"{self.path}: {exc}"
        return self._db

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found = {k: self.memory[k] for k in keys if k in self.memory}
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if not missing:
            return found
        with self._lock:
            db = self._connect()
            if db is None:
                return found
            try:
                for start in range(0, len(missing), 500):
                    chunk = missing[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    query = f"SELECT key, report FROM reports WHERE key IN ({marks})"
                    for key, text in db.execute(query, chunk):
                        found[key] = self.memory[key] = loads(text)
            except sqlite3.Error as exc:
                self.disk_error = f"{self.path}: {exc}"
        return found

    def put_many(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        items = [(k, r) for k, r in items if "error" not in r]  # failures are retried next time
        if len(self.memory) + len(items) > MEMORY_LIMIT:
            self.memory.clear()
        self.memory.update(items)
        with self._lock:
            db = self._connect()
            if db is None or not items:
                return
            try:
                db.executemany(
                    "INSERT OR REPLACE INTO reports VALUES (?, ?)",
                    [(k, json.dumps(r)) for k, r in items],
                )
                self._stored += len(items)
                if self._stored >= self.prune_every:
                    self._stored = 0
                    self._prune(db)
                db.commit()
            except sqlite3.Error as exc:
                self.disk_error = f"{self.path}: {exc}"

    def _prune(self, db: sqlite3.Connection) -> None:
        """Past ``disk_limit`` entries, drop the oldest (a replaced report counts as new), down
        to nine tenths of the limit so that the next prune is a while away."""
        (count,) = db.execute("SELECT COUNT(*) FROM reports").fetchone()
        if count > self.disk_limit:
            db.execute(
                "DELETE FROM reports WHERE rowid IN "
                "(SELECT rowid FROM reports ORDER BY rowid LIMIT ?)",
                (count - self.disk_limit * 9 // 10,),
            )


_shared: dict[Path, AnalyzerCache] = {}


def shared_cache() -> AnalyzerCache:
    """One cache per cache folder in this process (the folder may change between tests)."""
    path = cache_dir() / "analyzers.sqlite"
    if path not in _shared:
        _shared[path] = AnalyzerCache(path)
    return _shared[path]
