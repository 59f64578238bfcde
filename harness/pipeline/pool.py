"""Judge a compiled suite with N warm worker processes (``evaluate(..., workers=N)``).

Each worker is a ``python -m harness.pipeline.worker`` process that judges its share exactly
as the in-process path does (:func:`harness.pipeline.judge.judge_suite`), so the rows are the
same. Work goes out in jobs of whole problems (a worker loads a problem's check module once,
and its fork server reads ahead across a job's samples), cut only where one problem alone would
hold up the batch; the costliest go first and the jobs get smaller as the batch empties. Each
worker takes the next job when it is done with its last, so one slow problem never leaves the
other workers idle behind a fixed share. Workers stay up across calls, so a trainer's batches
reuse their fork servers.

A worker writes its rows a few at a time (a line read is a wake-up of this process, which cost
more than reading the row) and names the sample it is judging in a shared 8-byte slot. One that
dies mid-share costs only the sample it was judging: that sample is judged again on a fresh
worker (a kill from outside, such as the OOM killer's, is no verdict on it), and fails, as the
plugin's items fail when an xdist worker dies, only if it takes down that worker too (a crash
while judging its values); the rest of the share, rows it had not written yet included, goes
to a fresh worker.
"""

from __future__ import annotations

import atexit
import json
import math
import mmap
import os
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.jsonlines import dumps, loads
from harness.pipeline.judge import Key
from harness.pipeline.results import CaseOutcome, SampleOutcomes, build_row
from harness.pipeline.runtime import loaded_suite
from harness.pipeline.worker import DONE, SLOT, SLOT_ENV

_HARNESS_ROOT = str(Path(__file__).resolve().parents[2])  # the checkout or site-packages


class WorkerDied(RuntimeError):
    """A judging worker ended before finishing its share."""


class _Worker:
    """One worker process, its two pipes and its slot (the index of the sample it judges)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The worker imports this very harness (a checkout beside an installed copy included).
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (_HARNESS_ROOT, env.get("PYTHONPATH"))))
        # An unnamed file both map: nothing to remove, whatever becomes of the worker.
        with tempfile.TemporaryFile() as fh:
            fh.write(SLOT.pack(-1))
            fh.flush()
            self.slot = mmap.mmap(fh.fileno(), SLOT.size)
            env[SLOT_ENV] = str(fh.fileno())
            self.process = subprocess.Popen(
                [sys.executable, "-m", "harness.pipeline.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                text=True,
                encoding="utf-8",
                pass_fds=(fh.fileno(),),
            )

    def run(
        self,
        root: Path,
        keys: Sequence[Key],
        rows: dict[Key, dict[str, Any]],
        texts: dict[Key, str],
        analyze: Sequence[str] = (),
    ) -> None:
        """Judge ``keys``; each row lands in ``rows`` (and its JSON text in ``texts``) as it
        arrives. ``analyze``: analyzers the caller will run on the rows, which the worker may
        run ahead (:func:`harness.analyzers.analyze_ahead`). Raises :class:`WorkerDied`."""
        assert self.process.stdin is not None and self.process.stdout is not None
        job = {"root": str(root), "keys": list(keys), "analyze": list(analyze)}
        try:
            self.process.stdin.write(json.dumps(job) + "\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise WorkerDied(f"could not send the job: {exc}") from None
        for line in self.process.stdout:
            if line.startswith(DONE):
                return
            text = line.rstrip("\n")
            row = loads(text)
            key = (row["task_id"], row["sample_id"])
            rows[key], texts[key] = row, text
        raise WorkerDied(f"the judging worker exited with code {self._exit_code()}")

    def running(self) -> int | None:
        """The index in its job of the sample the worker judges now (None: between samples)."""
        (index,) = SLOT.unpack_from(self.slot, 0)
        return None if index < 0 else index

    def _exit_code(self) -> int | None:
        try:
            return self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@dataclass(frozen=True)
class _Batch:
    """One :meth:`WorkerPool.judge` call: its suite, where its rows land, what to analyze."""

    root: Path
    rows: dict[Key, dict[str, Any]]
    texts: dict[Key, str]
    analyze: tuple[str, ...]


class WorkerPool:
    """``size`` judging workers, started on first use and restarted when one dies."""

    def __init__(self, size: int):
        self.size = size
        self._workers: list[_Worker | None] = [None] * size
        self._lock = threading.Lock()  # one batch at a time: a worker serves one job

    def start(self, count: int) -> None:
        """Start up to ``count`` of the workers that are not running, without waiting for
        them: a caller with work left before its batch (preparing the suite) overlaps their
        start-up with it. Does nothing while a batch runs (its workers are up)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            for slot in range(min(self.size, count)):
                self._live_worker(slot)
        finally:
            self._lock.release()

    def _live_worker(self, slot: int) -> _Worker:
        """The worker in ``slot``, started anew if it never was or has ended."""
        worker = self._workers[slot]
        if worker is None or worker.process.poll() is not None:
            worker = self._workers[slot] = _Worker()
        return worker

    def judge(
        self,
        root: Path,
        keys: Sequence[Key],
        costs: Mapping[str, float],
        texts: dict[Key, str] | None = None,
        analyze: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """The rows of ``keys`` of the suite compiled in ``root``, in the order of ``keys``.

        ``costs``: each task's estimated seconds per sample, to order and size the jobs.
        ``texts``, when given, gets each row's JSON text (results.jsonl's line) by key.
        ``analyze``: the analyzers the caller will run on the rows (a reward's): each worker
        makes the per-program ones for its own share, into the shared cache.
        """
        with self._lock:
            return self._judge(root, keys, costs, {} if texts is None else texts, analyze)

    def _judge(
        self,
        root: Path,
        keys: Sequence[Key],
        costs: Mapping[str, float],
        texts: dict[Key, str],
        analyze: Sequence[str],
    ) -> list[dict[str, Any]]:
        rows: dict[Key, dict[str, Any]] = {}
        jobs = deque(plan_jobs(keys, self.size, costs))
        batch = _Batch(root, rows, texts, tuple(analyze))
        threads = [
            threading.Thread(target=self._take_jobs, args=(slot, jobs, batch))
            for slot in range(min(self.size, len(jobs)))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return [rows[key] for key in keys]

    def _take_jobs(self, slot: int, jobs: deque[list[Key]], batch: _Batch) -> None:
        while True:
            try:
                job = jobs.popleft()  # atomic: two threads never take the same job
            except IndexError:
                return
            self._judge_share(slot, job, batch)

    def _judge_share(self, slot: int, share: list[Key], batch: _Batch) -> None:
        rows, texts = batch.rows, batch.texts
        todo = share
        retried: set[Key] = set()
        while todo:
            worker = self._live_worker(slot)
            try:
                worker.run(batch.root, todo, rows, texts, batch.analyze)
                return
            except WorkerDied as exc:
                self._workers[slot] = None
                left = [key for key in todo if key not in rows]  # rows not written die with it
                if not left:
                    return
                # The sample it was judging: its slot's; else (it died between samples, or
                # before its first) the first without a row.
                running = worker.running()
                key = todo[running] if running is not None and running < len(todo) else left[0]
                if key in rows:
                    key = left[0]
                if key in retried:  # it took down two fresh workers: its own doing
                    rows[key] = crashed_row(batch.root, key, str(exc))
                    texts[key] = dumps(rows[key])
                    left.remove(key)
                else:  # a kill from outside (an operator, the OOM killer): judge it again
                    retried.add(key)
                todo = left

    def close(self) -> None:
        for worker in self._workers:
            if worker is not None:
                worker.close()
        self._workers = [None] * self.size


def plan_jobs(keys: Sequence[Key], size: int, costs: Mapping[str, float]) -> list[list[Key]]:
    """``keys`` in jobs for ``size`` workers that each take the next job when done.

    ``costs``: each task's estimated seconds per sample. A problem stays in one job unless it
    alone costs more than a ``2 × size``-th of the batch: then its samples are cut into parts
    no costlier than that, so a batch of one problem's samples still keeps every worker busy.
    The costliest parts go first, each job about a ``2 × size``-th of the cost still to plan,
    so the last jobs are small and the workers end together. Each job keeps the order of
    ``keys``.
    """
    if size <= 1:  # one worker takes all: a cut would only cost read-ahead
        return [list(keys)] if keys else []
    by_task: dict[str, list[Key]] = {}
    for key in keys:
        by_task.setdefault(key[0], []).append(key)
    total = sum(len(ks) * costs.get(task, 1.0) for task, ks in by_task.items())
    most = max(total / (2 * size), 1e-9)
    parts: list[tuple[float, list[Key]]] = []
    for task, task_keys in by_task.items():
        each = costs.get(task, 1.0)
        whole = len(task_keys) * each <= most
        step = len(task_keys) if whole else max(1, math.floor(most / each + 1e-9))
        for start in range(0, len(task_keys), step):
            part = task_keys[start : start + step]
            parts.append((len(part) * each, part))
    parts.sort(key=lambda part: -part[0])
    left = total
    jobs: list[list[Key]] = []
    job: list[Key] = []
    job_cost = target = 0.0
    for cost, part in parts:
        if not job:
            target = left / (2 * size)
        job.extend(part)
        job_cost += cost
        left -= cost
        if job_cost >= target:
            jobs.append(job)
            job, job_cost = [], 0.0
    if job:
        jobs.append(job)
    order = {key: i for i, key in enumerate(keys)}
    return [sorted(job, key=order.__getitem__) for job in jobs]


def crashed_row(root: Path, key: Key, reason: str) -> dict[str, Any]:
    """The row of a sample whose worker died while judging it: the candidate's values are the
    only untrusted thing judged there, so the sample fails (as an xdist worker's crash does)."""
    suite = loaded_suite(root)
    problem = suite.problems[key[0]]
    outcomes = SampleOutcomes(problem.suite, *key)
    message = f"not judged: the worker crashed while running it ({reason})"[:300]
    outcomes.cases = {c.case_id: CaseOutcome(c.case_id, "failed", message) for c in problem.cases}
    sample = next(r for r in suite.sample_rows if (r["task_id"], r["sample_id"]) == key)
    return build_row(problem, outcomes, sample)


_pools: dict[int, WorkerPool] = {}
_pools_lock = threading.Lock()


def shared_pool(size: int) -> WorkerPool:
    """One warm pool per size and process (closed when the process exits)."""
    with _pools_lock:
        pool = _pools.get(size)
        if pool is None:
            pool = _pools[size] = WorkerPool(size)
        return pool


@atexit.register
def close_pools() -> None:
    with _pools_lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()
