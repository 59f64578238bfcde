"""Memos: on disk for pure functions of source text (kept between runs), and in memory for
values computed from large immutable records (kept by the record's identity).

Loading a benchmark splits every check with ``ast`` (HumanEval: 164 problems, a third of a
second), on every run, though the benchmark never changes. A :class:`DiskMemo` keeps such
results in one JSON file in the cache folder, keyed by a hash of the inputs and invalidated
by a version (the hash of the code that computes them). It is written once, at exit, and only
when something new was added; a missing or broken file is just an empty memo.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar

from harness.paths import cache_dir, write_cache_file


class DiskMemo:
    """``key -> JSON value`` for one function, stored as ``cache_dir()/memo-<name>.json``."""

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self._entries: dict[str, Any] | None = None
        self._dirty = False
        self._lock = threading.Lock()

    @staticmethod
    def key(*parts: Any) -> str:
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]

    def get(self, key: str) -> Any:
        with self._lock:
            return self._load().get(key)

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._load()[key] = value
            if not self._dirty:
                self._dirty = True
                atexit.register(self.save)

    @property
    def path(self) -> Path:
        return cache_dir() / f"memo-{self.name}.json"

    def save(self) -> None:
        with self._lock:
            if not self._dirty or self._entries is None:
                return
            write_cache_file(
                self.path, json.dumps({"version": self.version, "entries": self._entries})
            )
            self._dirty = False

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_text())
                ok = type(data) is dict and data.get("version") == self.version
                self._entries = data["entries"] if ok and type(data["entries"]) is dict else {}
            except (OSError, ValueError, KeyError):
                self._entries = {}
        return self._entries


def source_version(*files: str) -> str:
    """A version that changes whenever one of ``files`` (the computing code) changes."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(Path(name).read_bytes())
    return digest.hexdigest()[:16]


V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """``compute()``'s value for an owner object, kept by the owner's identity.

    For values computed from large immutable records (a problem's thousand cases) that are
    costly to hash or compare on every use: the owner is held beside its value, so its ``id``
    is not reused while the entry lives. At most ``limit`` entries; past that it starts over.
    """

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._entries: dict[Hashable, tuple[Any, V]] = {}

    def get(self, owner: Any, compute: Callable[[], V], *extra: Hashable) -> V:
        """The value for ``owner`` (and ``extra``, cheap-to-hash further keys), computed once."""
        key = (id(owner), *extra)
        cached = self._entries.get(key)
        if cached is None or cached[0] is not owner:
            if len(self._entries) >= self.limit:
                self._entries.clear()
            cached = self._entries[key] = (owner, compute())
        return cached[1]
