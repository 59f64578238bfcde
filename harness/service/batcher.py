"""The bounded queue between the HTTP handlers and the engine, and the thread that drains it.

Handlers put a :class:`Pending` request (its items, its deadline, a callback for the reply)
in the :class:`BoundedQueue`, which holds at most ``max_samples`` samples: past that the handler
answers 429 at once, so a burst costs a retry, never unbounded memory. One :class:`Batcher`
thread takes every waiting request (up to ``max_batch_samples``), scores their items in one
engine call, so many clients share the warm workers, and hands each request its own rows.

Faults stay inside the request that caused them: when the engine refuses or fails a merged
batch, its requests go through the engine one by one, so only the request with a bad item gets
its 4xx, and only a request the engine still fails on gets ``error`` rows (reward None, never
0).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.service.metrics import Metrics

log = logging.getLogger(__name__)


class ScoringEngine(Protocol):
    """What the server scores with (:class:`harness.rewardapi.engine.RewardEngine`)."""

    def score(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One row per item, in order; raises an input error (with ``field``) for a bad item."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Reply:
    """An HTTP status and its JSON body."""

    status: int
    body: dict[str, Any]


@dataclass(eq=False)
class Pending:
    """One accepted request waiting for its rows."""

    items: list[dict[str, Any]]
    deliver: Callable[[Reply], None]  # called once, from the batcher thread
    deadline: float | None = None  # time.monotonic() past which the rows are not wanted
    accepted: float = field(default_factory=time.monotonic)
    abandoned: bool = False  # the client left or its deadline passed: skip it if not started


class QueueFull(Exception):
    """No room: the client should retry after ``retry_after_s``."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"queue full; retry after {retry_after_s:.0f} s")
        self.retry_after_s = retry_after_s


class Draining(Exception):
    """The server is shutting down and takes no new requests."""


class BoundedQueue:
    """FIFO of pending requests, bounded by their total samples."""

    def __init__(self, max_samples: int) -> None:
        self.max_samples = max_samples
        self._items: deque[Pending] = deque()
        self._samples = 0
        self._closed = False
        self._cond = threading.Condition()

    def put(self, pending: Pending, retry_after_s: float) -> None:
        """Queue ``pending``; raises :class:`QueueFull` or :class:`Draining`."""
        n = len(pending.items)
        with self._cond:
            if self._closed:
                raise Draining()
            # one request larger than the whole queue still gets in when the queue is empty
            if self._samples and self._samples + n > self.max_samples:
                raise QueueFull(retry_after_s)
            self._items.append(pending)
            self._samples += n
            self._cond.notify()

    def take(
        self, max_samples: int, wait_s: float, gap_s: float = 0.0, linger_s: float = 0.0
    ) -> list[Pending]:
        """The oldest requests, up to ``max_samples`` samples (at least one request); empty
        after ``wait_s`` with nothing queued. While the batch is not full and requests keep
        arriving (each within ``gap_s`` of the last, ``linger_s`` in all), it waits for them:
        the clients just answered send their next requests a moment later, and one batch
        of them all costs less than two half batches."""
        with self._cond:
            if not self._items:
                self._cond.wait(wait_s)
            taken: list[Pending] = []
            total = 0
            until = time.monotonic() + linger_s
            while True:
                while self._items and (
                    not taken or total + len(self._items[0].items) <= max_samples
                ):
                    pending = self._items.popleft()
                    self._samples -= len(pending.items)
                    taken.append(pending)
                    total += len(pending.items)
                room = not self._items and total < max_samples
                left = until - time.monotonic()
                if not taken or not room or left <= 0 or self._closed:
                    return taken
                before = len(self._items)
                self._cond.wait(min(gap_s, left))
                if len(self._items) == before:  # nobody came within the gap
                    return taken

    def close(self) -> None:
        """Take no more requests; those queued are still served."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def depth(self) -> dict[str, Any]:
        with self._cond:
            return {
                "requests": len(self._items),
                "samples": self._samples,
                "max_samples": self.max_samples,
            }


def input_error_field(exc: BaseException) -> str | None:
    """The field an engine input error names (RewardInputError carries ``field``)."""
    found = getattr(exc, "field", None)
    return found if isinstance(exc, ValueError) and isinstance(found, str) else None


def error_row(item: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """The row of an item the engine could not score: an infrastructure error, reward None."""
    inline = item.get("problem") is not None
    return {
        "suite": "inline" if inline else str(item.get("suite") or "humaneval"),
        "task_id": "inline" if inline else str(item.get("task_id")),
        "status": "error",
        "passed": False,
        "error_kind": "infra",
        "error": reason[:500],
        "cases": [],
        "reward": None,
    }


class Batcher:
    """The thread that scores queued requests in batches."""

    def __init__(
        self,
        engine: ScoringEngine,
        queue: BoundedQueue,
        metrics: Metrics,
        max_batch_samples: int = 256,
        gap_s: float = 0.03,
        linger_s: float = 0.25,
    ) -> None:
        self.engine = engine
        self.queue = queue
        self.metrics = metrics
        self.max_batch_samples = max_batch_samples
        self.gap_s = gap_s
        self.linger_s = linger_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="codeeval-batcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def drain_and_stop(self, timeout_s: float) -> bool:
        """Serve what is queued, then stop; False if that took longer than ``timeout_s``."""
        self.queue.close()
        self._stop.set()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            batch = self.queue.take(self.max_batch_samples, 0.2, self.gap_s, self.linger_s)
            if batch:
                try:
                    self.run_batch(batch)
                except Exception as exc:  # noqa: BLE001 - the thread must outlive any batch
                    log.exception("a batch failed outside the engine", exc_info=exc)
                    for pending in batch:
                        pending.deliver(self._failure_reply(pending, exc))
            elif self._stop.is_set():
                return

    def run_batch(self, batch: list[Pending]) -> None:
        now = time.monotonic()
        live = []
        for pending in batch:
            if pending.deadline is not None and now > pending.deadline:
                self.metrics.count("expired")
                pending.deliver(deadline_reply())
            elif not pending.abandoned:
                live.append(pending)
        if not live:
            return
        if len(live) == 1:
            self._answer_alone(live[0])
            return
        items = [item for pending in live for item in pending.items]
        try:
            rows = self._score(items)
        except Exception:  # noqa: BLE001 - only the request that caused it gets its 4xx or errors
            for pending in live:
                self._answer_alone(pending)
            return
        start = 0
        for pending in live:
            end = start + len(pending.items)
            pending.deliver(Reply(200, {"rows": numbered(rows[start:end])}))
            start = end

    def _answer_alone(self, pending: Pending) -> None:
        try:
            rows = self._score(pending.items)
        except Exception as exc:  # noqa: BLE001 - a bad item (4xx) or a failing engine (errors)
            pending.deliver(self._failure_reply(pending, exc))
            return
        pending.deliver(Reply(200, {"rows": numbered(rows)}))

    def _score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = self.engine.score(items)
        if len(rows) != len(items):
            raise RuntimeError(f"the engine returned {len(rows)} rows for {len(items)} items")
        infra = sum(1 for row in rows if row.get("reward") is None)
        self.metrics.batch_done(len(items), infra)
        return rows

    def _failure_reply(self, pending: Pending, exc: Exception) -> Reply:
        found = input_error_field(exc)
        if found is not None:
            message = getattr(exc, "message", None) or str(exc)
            return Reply(422, {"error": "bad_input", "field": found, "message": message})
        log.exception("the engine failed on a batch", exc_info=exc)
        reason = f"the reward engine failed: {type(exc).__name__}: {exc}"
        rows = [error_row(item, reason) for item in pending.items]
        self.metrics.batch_done(len(rows), len(rows))
        return Reply(200, {"rows": rows})


def numbered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A request's rows with the sample ids a direct ``engine.score`` of its items gives
    (their positions), not their positions in the merged batch."""
    return [{**row, "sample_id": str(i)} for i, row in enumerate(rows)]


def deadline_reply() -> Reply:
    return Reply(
        504,
        {"error": "deadline", "field": "deadline_s", "message": "the deadline passed first"},
    )
