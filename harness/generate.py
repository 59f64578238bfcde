"""Generate samples for problems with a model backend, into a samples JSONL that resumes.

Every finished batch is appended to the file at once, so an interrupted run loses at most one
batch: started again with the same model and settings, it skips the ``(task_id, sample_id)``
pairs already in the file.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from harness.models.base import Backend, GenerationSettings, build_prompt
from harness.records import Problem

SAMPLES_FILE = "samples.jsonl"
# Settings that do not change what is generated; a resumed run may use other values.
_FREE_SETTINGS = ("batch_size",)


class ResumeMismatch(ValueError):
    """The samples file holds samples of another model or other settings."""


def samples_path(out_path: str | Path) -> Path:
    """The samples file: ``out_path`` itself, or ``samples.jsonl`` inside a folder."""
    path = Path(out_path)
    if path.suffix != ".jsonl":
        return path / SAMPLES_FILE
    return path


def _comparable(settings: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k not in _FREE_SETTINGS}


def read_done(path: Path, model: str, settings: dict[str, Any]) -> set[tuple[str, str]]:
    """The ``(task_id, sample_id)`` pairs in ``path``, after dropping a torn last line."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        # The process died mid-write: keep the complete lines only.
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as handle:
            handle.truncate(keep)
        data = data[:keep]
    done: set[tuple[str, str]] = set()
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("model") != model or _comparable(row.get("settings", {})) != _comparable(
            settings
        ):
            raise ResumeMismatch(
                f"{path}:{number}: this samples file was written by model {row.get('model')!r} "
                f"with settings {row.get('settings')}; this run uses {model!r} with {settings}. "
                "Delete the file or choose another output folder."
            )
        done.add((str(row["task_id"]), str(row["sample_id"])))
    return done


def generate_samples(
    problems: Sequence[Problem],
    backend: Backend,
    n: int,
    settings: GenerationSettings,
    out_path: str | Path,
    progress: bool = True,
) -> Path:
    """Generate ``n`` samples per problem into ``out_path`` (a .jsonl file or a folder).

    Sample ids are ``"0"`` .. ``str(n - 1)``. Returns the samples file.
    """
    settings = dataclasses.replace(settings, n=n)
    path = samples_path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    recorded = settings.to_json()
    done = read_done(path, backend.name, recorded)
    todo = [p for p in problems if any((p.task_id, str(j)) not in done for j in range(n))]
    # Similar lengths in a batch waste less compute on padding (left padding to the longest).
    todo.sort(key=lambda p: len(p.prompt))
    missing = sum(1 for p in todo for j in range(n) if (p.task_id, str(j)) not in done)
    style = settings.prompt_style or backend.default_style
    # A batch holds whole problems: batch_size rows make batch_size // n problems. Engines that
    # batch by themselves (vLLM) take more rows per call: each call's rows are appended at once.
    rows = getattr(backend, "rows_per_call", settings.batch_size)
    per_batch = max(1, rows // n)
    bar = tqdm(
        total=len(problems) * n,
        initial=len(problems) * n - missing,
        desc=f"generating ({backend.name})",
        unit="sample",
        disable=not progress,
    )
    with bar, open(path, "a", encoding="utf-8") as handle:
        for start in range(0, len(todo), per_batch):
            chunk = todo[start : start + per_batch]
            prompts = [build_prompt(p, style, backend.stop, backend.instruction) for p in chunk]
            results = backend.generate(prompts, settings)
            lines = []
            for problem, generations in zip(chunk, results, strict=True):
                for index, generation in enumerate(generations):
                    if (problem.task_id, str(index)) in done:
                        continue
                    row = {
                        "task_id": problem.task_id,
                        "sample_id": str(index),
                        "completion": generation.completion,
                        "raw": generation.raw,
                        "model": backend.name,
                        "settings": recorded,
                        "finish_reason": generation.finish_reason,
                        "tokens": generation.tokens,
                    }
                    lines.append(json.dumps(row, ensure_ascii=False) + "\n")
            handle.write("".join(lines))
            handle.flush()
            os.fsync(handle.fileno())
            bar.update(len(lines))
    return path
