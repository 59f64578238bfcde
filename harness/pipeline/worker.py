"""A judging worker: ``python -m harness.pipeline.worker``, driven by :mod:`harness.pipeline.pool`.

It reads one job per line on stdin (``{"root": ..., "keys": [[task_id, sample_id], ...]}``),
judges those samples with :func:`harness.pipeline.judge.judge_suite` and answers on the
stdout it was started with: ``{"row": ...}`` per sample as soon as it is judged, then
``{"done": true}``. Its own fd 1 then points at stderr, so nothing a check prints can reach
the answer channel. It stays up between jobs: its fork server and check modules stay warm.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TextIO


def serve(jobs: TextIO, answers: TextIO) -> None:
    from harness.pipeline.judge import judge_suite

    def emit(row: dict) -> None:
        answers.write(json.dumps({"row": row}) + "\n")
        answers.flush()

    for line in jobs:
        if not line.strip():
            continue
        job = json.loads(line)
        keys = [(str(task_id), str(sample_id)) for task_id, sample_id in job["keys"]]
        judge_suite(Path(job["root"]), keys, emit)
        answers.write('{"done": true}\n')
        answers.flush()


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # prints of check code and libraries go to stderr, never to the answers
    sys.stdout = sys.stderr
    serve(sys.stdin, answers)


if __name__ == "__main__":
    main()
