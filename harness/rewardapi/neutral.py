"""The score of a sample the harness could not judge, where a trainer's reward has no "missing".

TRL takes ``None`` (no advantage). verl's reward tensor and OpenRLHF's reward list take only
numbers, so such a sample gets a *neutral* score instead, never a fixed 0 (a 0 would punish
the policy for the harness's fault or the data's). In order, the first that exists:

1. the mean judged score of the same problem in the same call (a GRPO group: the sample adds
   no advantage and leaves the group's mean as it was);
2. the running mean of that problem's judged scores in this process (a trainer that sends one
   sample per call: verl's reward loop, OpenRLHF's agent path);
3. the mean judged score of the whole call;
4. the running mean of every judged score in this process;
5. :data:`DEFAULT_NEUTRAL` (0.5, the middle of the presets' 0..1 range), when nothing has been
   judged yet.

Each adapter also reports the sample as unscored (verl: ``unscored: 1.0``; OpenRLHF:
``extra_logs.unscored``), so a run's logs tell such samples apart.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_NEUTRAL = 0.5
_OVERALL = ""  # the running key of every judged score


def problem_key(row: Mapping[str, Any]) -> str:
    """What one problem's rows share: its suite and task id."""
    return f"{row.get('suite')}\0{row.get('task_id')}"


class RunningMeans:
    """Running means of judged rewards per problem and overall (thread-safe)."""

    def __init__(self) -> None:
        self._sums: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def add(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Count the judged rows (reward not None)."""
        with self._lock:
            for row in rows:
                if row.get("reward") is None:
                    continue
                for key in (problem_key(row), _OVERALL):
                    total, count = self._sums.get(key, (0.0, 0))
                    self._sums[key] = (total + float(row["reward"]), count + 1)

    def mean(self, key: str = _OVERALL) -> float | None:
        """The running mean of ``key`` (a :func:`problem_key`; default: every problem)."""
        with self._lock:
            total, count = self._sums.get(key, (0.0, 0))
        return total / count if count else None


def neutral_scores(
    rows: Sequence[Mapping[str, Any]],
    running: RunningMeans | None = None,
    default: float = DEFAULT_NEUTRAL,
) -> list[float]:
    """For each row, the neutral score it would get if it were not judged (the module's order).
    ``running`` gives steps 2 and 4; it is not updated here."""
    by_problem: dict[str, list[float]] = {}
    for row in rows:
        if row.get("reward") is not None:
            by_problem.setdefault(problem_key(row), []).append(float(row["reward"]))
    judged = [r for rewards in by_problem.values() for r in rewards]
    batch = sum(judged) / len(judged) if judged else None
    overall = running.mean() if running is not None else None
    fills = []
    for row in rows:
        own = by_problem.get(problem_key(row))
        candidates = (
            sum(own) / len(own) if own else None,
            running.mean(problem_key(row)) if running is not None else None,
            batch,
            overall,
        )
        fills.append(next((c for c in candidates if c is not None), float(default)))
    return fills
