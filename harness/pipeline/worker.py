"""A judging worker: ``python -m harness.pipeline.worker``, driven by :mod:`harness.pipeline.pool`.

It reads one job per line on stdin (``{"root": ..., "keys": [[task_id, sample_id], ...],
"analyze": [...]}``), judges those samples with :func:`harness.pipeline.judge.judge_suite` and
answers on the stdout it was started with: each sample's ``results.jsonl`` row as one line of
JSON, then ``{"done": true}``. Before that line it runs the job's ``analyze`` analyzers that
cost the same per program on the rows it judged, into the shared cache, where the caller's
reward scoring finds them (:func:`harness.analyzers.analyze_ahead`): that work is spread over
the workers instead of done one row after another in the caller. Rows are written in batches
(``ROWS_PER_WRITE``, or once the oldest has waited ``ROWS_AGE_S``, and at the end of the job): a
line read is a wake-up of the caller's thread, which cost it more CPU than reading the row. The
index of the sample it is judging sits in an 8-byte file the pool shares (its descriptor in
``SLOT_ENV``; -1 between samples), so the pool knows which sample a dead worker was judging even
when the rows before it were not written yet. Its own fd 1 points at stderr, so nothing a check
prints can reach the answer channel. It stays up between jobs: its fork server and check modules
stay warm.
"""

from __future__ import annotations

import gc
import json
import mmap
import os
import struct
import sys
import time
import weakref
from pathlib import Path
from typing import Any, TextIO

from harness.gcpause import fewer_collections, no_collection_at_exit
from harness.jsonlines import dumps

DONE = '{"done": true}'
SLOT_ENV = "CODEEVAL_POOL_SLOT"
SLOT = struct.Struct("<q")
ROWS_PER_WRITE = 32
ROWS_AGE_S = 0.25


def serve(jobs: TextIO, answers: TextIO, slot: Any = None) -> None:
    from harness.pipeline.judge import judge_suite
    from harness.pipeline.runtime import loaded_suite

    kept: list[str] = []
    analyze: list[str] = []  # the job's analyzers to run ahead of the caller
    judged: list[dict[str, Any]] = []  # the job's rows, when it has some
    first_at = 0.0

    def write() -> None:
        answers.write("".join(text + "\n" for text in kept))
        answers.flush()
        kept.clear()

    def emit(row: dict[str, Any]) -> None:
        nonlocal first_at
        if analyze:
            judged.append(row)
        if not kept:
            first_at = time.monotonic()
        kept.append(dumps(row))
        if len(kept) >= ROWS_PER_WRITE or time.monotonic() - first_at >= ROWS_AGE_S:
            write()

    def running(index: int) -> None:
        if slot is not None:
            SLOT.pack_into(slot, 0, index)

    frozen: Any = None  # a weak reference to the suite loaded before the last freeze
    for line in jobs:
        if not line.strip():
            continue
        job = json.loads(line)
        keys = [(str(task_id), str(sample_id)) for task_id, sample_id in job["keys"]]
        root = Path(job["root"])
        suite = loaded_suite(root)
        if frozen is None or frozen() is not suite:
            # This process is ours: what it holds now (its imports, the suite's problems) is
            # kept out of every later collection, which would traverse it again and again.
            gc.collect()
            gc.freeze()
            frozen = weakref.ref(suite)
        analyze = [str(name) for name in job.get("analyze") or ()]
        judge_suite(root, keys, emit, on_start=running)
        running(-1)
        if analyze:
            from harness.analyzers import analyze_ahead

            write()  # the rows first: a worker lost while analyzing has judged them all
            problems = suite.problems
            analyze_ahead([(row, problems.get(str(row.get("task_id")))) for row in judged], analyze)
            judged.clear()
        kept.append(DONE)
        write()


def _slot() -> Any:
    """The slot the pool shares (a descriptor it passed), mapped; None without one."""
    fd = os.environ.pop(SLOT_ENV, "")
    if not fd.isdigit():
        return None
    try:
        return mmap.mmap(int(fd), SLOT.size)
    finally:
        os.close(int(fd))


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # prints of check code and libraries go to stderr, never to the answers
    sys.stdout = sys.stderr
    no_collection_at_exit()  # its suite's problems and its imports: nothing left to collect
    fewer_collections()
    serve(sys.stdin, answers, _slot())


if __name__ == "__main__":
    main()
