"""Where a batch of samples is scored: in this process (``local``) or on Ray actors (``ray``).

    from harness.evaluate import evaluate
    rows = evaluate(problems, samples, reward="weighted", executor="ray")  # or address="ray://..."

Every executor returns the rows of :func:`harness.evaluate.evaluate`'s local path, in the
order of the samples and with the same content; only where the work runs differs. An executor
is anything with the :class:`Executor` shape; :func:`executor_for` gives the named ones, one
instance per name and address, so a trainer's batches reuse warm workers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from harness.records import Problem, Sample

EXECUTORS: tuple[str, ...] = ("local", "ray")


@runtime_checkable
class Executor(Protocol):
    """Scores samples; the rows are those of ``evaluate(..., executor="local")``."""

    def evaluate(
        self, problems: Sequence[Problem], samples: Sequence[Sample], **options: Any
    ) -> list[dict[str, Any]]:
        """Rows for ``samples`` in their order; ``options`` are ``evaluate``'s keywords."""
        ...

    def close(self) -> None:
        """Release workers (a later ``evaluate`` may start new ones)."""
        ...


_shared: dict[tuple[str, str | None], Executor] = {}
_lock = threading.Lock()


def executor_for(name: str, address: str | None = None) -> Executor:
    """The shared executor called ``name`` (``address``: an existing Ray cluster's)."""
    if name not in EXECUTORS:
        raise ValueError(f"unknown executor {name!r}; use one of: {', '.join(EXECUTORS)}")
    if name == "local" and address is not None:
        raise ValueError(
            f"address={address!r} names a cluster, but the local executor runs in this "
            "process; use executor='ray' with it, or drop address"
        )
    with _lock:
        executor = _shared.get((name, address))
        if executor is None:
            if name == "local":
                from harness.executors.local import LocalExecutor

                executor = LocalExecutor()
            else:
                from harness.executors.ray_executor import RayExecutor

                executor = RayExecutor(address=address)
            _shared[(name, address)] = executor
        return executor


def close_all() -> None:
    """Close every shared executor (tests, and the end of a trainer's run)."""
    with _lock:
        executors = list(_shared.values())
        _shared.clear()
    for executor in executors:
        executor.close()


__all__ = ["EXECUTORS", "Executor", "close_all", "executor_for"]
