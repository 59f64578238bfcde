"""Evaluate a config over a pairs data set, compute its metrics, export pairs for fine-tuning.

Per level and run (``DATASET/level_N/eval/<config>/<timestamp>/``):

- ``results.json``: per pair, the chosen conversation's messages, the analyzer results of every
  iteration, the log, the time and the tokens generated (:meth:`SearchRun.to_json`), plus the
  completion and the config;
- ``readable_logs/K.txt``: the log of pair K, for a person.

``metrics.csv`` (``DATASET/level_N/eval/<config>/metrics.csv``) has one row per pair and run,
one column per metric of the config's ``scores``; an unavailable metric is an empty cell.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.coder.eval_config import EvalConfig
from harness.coder.metrics import DEFAULT_SCORES, PairRun, compute_metrics
from harness.coder.pairs import Pair, iter_levels, load_pairs, problem_of
from harness.coder.search import Coder

RESULTS_FILE = "results.json"
METRICS_FILE = "metrics.csv"


def run_evaluation(config: EvalConfig, progress: Callable[[str], None] | None = None) -> list[Path]:
    """Complete every pair of the config's levels; the run folders written, one per level."""
    coder = Coder(config.coder)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d_%H-%M-%S")
    written = []
    for level_dir, pairs in iter_levels(config.dataset_dir(), config.levels, config.limit):
        out = level_dir / "eval" / config.name / stamp
        (out / "readable_logs").mkdir(parents=True, exist_ok=True)
        results: dict[str, Any] = {}
        for pair in pairs:
            start = time.perf_counter()
            run = coder.search(
                pair.input, problem_of(pair) if "tests" in config.coder.analyzers else None
            )
            record = run.to_json()
            record["pair"] = pair.name
            record["meta"] = pair.meta
            results[pair.name] = record
            number = pair.name.removeprefix("pair")
            (out / "readable_logs" / f"{number}.txt").write_text(readable_log(pair, record))
            if progress:
                verdict = "passes" if record["passed"] else "does not pass"
                progress(
                    f"{level_dir.name}/{pair.name}: {verdict} after {len(record['iterations'])} "
                    f"step(s), {time.perf_counter() - start:.1f} s"
                )
            # written after every pair, so an interrupted run keeps what it did
            _write_json(out / RESULTS_FILE, {"config": _config_json(config), "results": results})
        written.append(out)
    return written


def readable_log(pair: Pair, record: dict[str, Any]) -> str:
    lines = [
        f"pair: {pair.name} {json.dumps(pair.meta)}",
        f"passed: {record['passed']}  steps: {len(record['iterations'])}  "
        f"time: {record['time']:.2f} s  tokens generated: {record['tokens_generated']}",
        "",
        "== input ==",
        pair.input,
        "== completion ==",
        record["completion"],
        "== ground truth ==",
        pair.output,
        "== log ==",
        record["log"],
    ]
    return "\n".join(lines) + "\n"


def run_metrics(config: EvalConfig) -> list[Path]:
    """``metrics.csv`` per level, over every run of the config found there."""
    names = list(config.scores or DEFAULT_SCORES)
    written = []
    for level_dir in _levels(config):
        folder = level_dir / "eval" / config.name
        runs = sorted(p for p in folder.glob(f"*/{RESULTS_FILE}")) if folder.is_dir() else []
        if not runs:
            continue
        pairs = {p.name: p for p in load_pairs(level_dir)}
        table = []
        for results_file in runs:
            data = json.loads(results_file.read_text())
            batch = [
                PairRun(pairs[name], record["completion"], record, config.judge_model)
                for name, record in data["results"].items()
                if name in pairs
            ]
            for run, values in zip(batch, compute_metrics(batch, names), strict=True):
                table.append({"run": results_file.parent.name, "pair": run.pair.name, **values})
        target = folder / METRICS_FILE
        with open(target, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=["run", "pair", *names])
            writer.writeheader()
            for row in table:
                writer.writerow({k: "" if v is None else v for k, v in row.items()})
        written.append(target)
    return written


def export_level(level_dir: Path, system_prompt: str, target: Path | None = None) -> Path:
    """``conversations.jsonl``: each pair as a chat (system, user: input, assistant: output)."""
    target = target or level_dir / "conversations.jsonl"
    with open(target, "w") as fh:
        for pair in load_pairs(level_dir):
            messages = [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": pair.input},
                {"role": "assistant", "content": pair.output},
            ]
            fh.write(json.dumps({"messages": messages}) + "\n")
    return target


def _levels(config: EvalConfig) -> list[Path]:
    from harness.coder.pairs import level_dirs

    return level_dirs(config.dataset_dir(), config.levels)


def _config_json(config: EvalConfig) -> dict[str, Any]:
    return {
        "name": config.name,
        "path": str(config.path) if config.path else None,
        "coder": config.coder.to_json(),
        "limit": config.limit,
    }


def _write_json(path: Path, data: Any) -> None:
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(data, indent=1) + "\n")
    partial.replace(path)
