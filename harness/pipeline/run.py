"""One batch from problems and samples to scored rows, in this process or its workers.

This is :func:`harness.evaluate.evaluate`'s local path, and what each Ray actor and the reward
service run: prepare and compile the suite (:mod:`harness.pipeline.prepare`), judge every
sample (:mod:`harness.pipeline.judge`, or :mod:`harness.pipeline.pool` with workers), add the
caller's row extras, score the rows with the reward config, and write ``results.jsonl`` and
``summary.json`` as the plugin's session writes them.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.pipeline.compile import sample_cost
from harness.pipeline.judge import judge_suite
from harness.pipeline.prepare import RunSettings, prepare_suite, unique_ids
from harness.pipeline.results import summarize
from harness.records import Problem, Sample


def evaluate_local(
    problems: Sequence[Problem],
    samples: Sequence[Sample],
    *,
    reward: Any = None,
    out_dir: str | Path | None = None,
    workers: int = 0,
    timeout_s: float | None = None,
    memory_mb: int = 1024,
    quiet: bool = True,
    pytest_session: bool = False,
    row_extras: Sequence[Mapping[str, Any]] | None = None,
    every_case: bool = False,
) -> list[dict[str, Any]]:
    """Rows for ``samples`` in their order (see :func:`harness.evaluate.evaluate`)."""
    check_row_extras(row_extras, samples)
    if not samples:
        return []
    check_tasks(problems, samples)
    samples = unique_ids(samples)
    out = (Path(out_dir) if out_dir is not None else default_out_dir()).resolve()
    settings = RunSettings(
        reward=reward, memory_mb=memory_mb, timeout_s=timeout_s, every_case=every_case
    )
    if workers and not pytest_session:
        from harness.pipeline.pool import shared_pool

        shared_pool(workers).start(len(samples))  # they start while the suite is prepared
    prepared = prepare_suite(problems, samples, out / "suite", settings)
    keys = [(s.task_id, s.sample_id) for s in samples]
    if pytest_session:  # the session writes results.jsonl and summary.json itself
        from harness.pipeline.pytest_run import run_pytest_session

        rows = run_pytest_session(prepared, out, workers, quiet)
    else:
        if workers:
            from harness.pipeline.pool import shared_pool

            costs = {p.task_id: sample_cost(p) for p in prepared.problems}
            texts: dict[tuple[str, str], str] = {}
            analyze: tuple[str, ...] = ()  # a reward's: the workers make the per-program ones
            if prepared.reward_config is not None:
                from harness.reward import analyzers_read

                analyze = analyzers_read(prepared.reward_config)
            rows = shared_pool(workers).judge(prepared.root, keys, costs, texts, analyze)
        else:
            texts = {}
            rows = judge_suite(prepared.root, keys)
        write_results(out, rows, summarize(rows, [1], {"path": "in-process"}), texts)
    if row_extras is not None:
        rows = with_extras(rows, samples, row_extras)
    if prepared.reward_config is not None:
        from harness.reward import score_rows

        problems_by_id = {p.task_id: p for p in prepared.problems}
        rows = score_rows(rows, problems_by_id, prepared.reward_config)
    order = {key: i for i, key in enumerate(keys)}
    rows.sort(key=lambda r: order.get((r["task_id"], r["sample_id"]), len(order)))
    return rows


def check_row_extras(
    row_extras: Sequence[Mapping[str, Any]] | None, samples: Sequence[Sample]
) -> None:
    """Row extras come one per sample, in the samples' order."""
    if row_extras is not None and len(row_extras) != len(samples):
        raise ValueError(
            f"row_extras has {len(row_extras)} entries for {len(samples)} samples: one per sample"
        )


def check_tasks(problems: Sequence[Problem], samples: Sequence[Sample]) -> None:
    """Every sample names one of the problems."""
    unknown = sorted({s.task_id for s in samples} - {p.task_id for p in problems})
    if unknown:
        raise ValueError(
            f"samples name tasks that are not among the problems: {', '.join(unknown[:5])}"
        )


def write_results(
    out: Path,
    rows: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    texts: Mapping[tuple[str, str], str] | None = None,
) -> None:
    """``results.jsonl`` and ``summary.json`` in ``out``; ``texts``: rows' JSON text by key,
    where a worker already wrote it."""
    texts = texts or {}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(
            (texts.get((row["task_id"], row["sample_id"])) or json.dumps(row)) + "\n"
            for row in rows
        )
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def with_extras(
    rows: Sequence[dict[str, Any]],
    samples: Sequence[Sample],
    extras: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """``rows`` with each sample's extras added (``samples`` with their unique ids, as the rows
    name them; ``extras`` in their order)."""
    by_key = {(s.task_id, s.sample_id): e for s, e in zip(samples, extras, strict=True)}
    return [{**row, **by_key.get((row["task_id"], row["sample_id"]), {})} for row in rows]


def default_out_dir() -> Path:
    """One folder per process, reused by every call.

    Its suite folder is hidden from its own fork server, so a trainer's batches all run on one
    warm server (a folder per problem set would start a server per set); an unchanged module
    is not rewritten, and concurrent processes never write into each other's suite.
    """
    return Path(tempfile.gettempdir()) / f"codeeval-{os.getuid()}" / f"eval-{os.getpid()}"
