"""What ``GET /metrics`` reports: queue depth, samples/s, latency percentiles, errors.

Counters only grow; latencies and throughput are read over a sliding window (the last
``window`` requests and the last ``rate_window_s`` seconds), so a long-lived server reports
its recent behaviour, not an average since it started.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque
from typing import Any


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by the nearest-rank rule; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


class Metrics:
    """Thread-safe counters of one server (the event loop and the batcher thread both write)."""

    def __init__(self, window: int = 10_000, rate_window_s: float = 60.0) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._latencies: deque[float] = deque(maxlen=window)
        self._scored: deque[tuple[float, int]] = deque()  # (when, samples) of finished batches
        self._rate_window_s = rate_window_s
        self.responses: Counter[int] = Counter()  # by HTTP status
        self.samples_scored = 0
        self.infra_error_rows = 0
        self.batches = 0
        self.accepted = 0  # requests queued
        self.answered = 0  # queued requests that got their reply
        self.disconnected = 0  # clients gone before their rows were ready
        self.expired = 0  # requests past their deadline

    def request_done(self, status: int, latency_s: float) -> None:
        with self._lock:
            self.responses[status] += 1
            if status == 200:
                self._latencies.append(latency_s)

    def batch_done(self, samples: int, infra_errors: int) -> None:
        now = time.monotonic()
        with self._lock:
            self.batches += 1
            self.samples_scored += samples
            self.infra_error_rows += infra_errors
            self._scored.append((now, samples))
            while self._scored and self._scored[0][0] < now - self._rate_window_s:
                self._scored.popleft()

    def count(self, name: str) -> None:
        """One more accepted, answered, disconnected or expired request."""
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def samples_per_s(self) -> float:
        """Samples scored per second over the rate window (or since the start, if shorter)."""
        now = time.monotonic()
        with self._lock:
            recent = sum(n for when, n in self._scored if when >= now - self._rate_window_s)
        span = min(self._rate_window_s, max(now - self._started, 1e-9))
        return recent / span

    def snapshot(self, queue: dict[str, Any]) -> dict[str, Any]:
        """The ``/metrics`` body; ``queue`` is the queue's own report."""
        with self._lock:
            latencies = list(self._latencies)
            responses = {str(code): n for code, n in sorted(self.responses.items())}
            counts = dict(
                accepted=self.accepted,
                answered=self.answered,
                samples_scored=self.samples_scored,
                batches=self.batches,
                infra_error_rows=self.infra_error_rows,
                disconnected=self.disconnected,
                expired=self.expired,
            )
        return {
            "queue": queue,
            "samples_per_s": round(self.samples_per_s(), 3),
            "latency_s": {
                name: percentile(latencies, q)
                for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))
            },
            "responses": responses,
            **counts,
            "uptime_s": round(time.monotonic() - self._started, 3),
        }


def prometheus_text(snapshot: dict[str, Any]) -> str:
    """The same numbers in Prometheus' text format (``GET /metrics?format=prometheus``)."""
    lines = [
        f"codeeval_queue_samples {snapshot['queue']['samples']}",
        f"codeeval_queue_requests {snapshot['queue']['requests']}",
        f"codeeval_samples_per_second {snapshot['samples_per_s']}",
        f"codeeval_samples_scored_total {snapshot['samples_scored']}",
        f"codeeval_infra_error_rows_total {snapshot['infra_error_rows']}",
        f"codeeval_disconnected_total {snapshot['disconnected']}",
        f"codeeval_expired_total {snapshot['expired']}",
    ]
    for code, n in snapshot["responses"].items():
        lines.append(f'codeeval_responses_total{{code="{code}"}} {n}')
    for name, value in snapshot["latency_s"].items():
        if value is not None:
            lines.append(f'codeeval_latency_seconds{{quantile="{name}"}} {value}')
    return "\n".join(lines) + "\n"
