"""Problem difficulty as the model sees it: each problem's pass rate over ``n`` samples.

```
codeeval difficulty --suite mbpp --split train --model qwen2.5-coder-1.5b -n 8
```

samples ``n`` answers per problem (the harness's own generation, at the given temperature),
scores them with the harness and writes per problem the number passed, the pass rate and the
mean reward to a JSON file in the cache (``difficulty/<suite>/<split>/<model>/...json``; or
``-o``). Problems already in the file are not measured again, so a later, wider split only
measures what is new, and the samples file resumes after an interruption.

Trainers read it through ``dataset.difficulty`` (a file, or ``cache``: the measurement of
the run's suite, split and model with the most samples per problem) and keep the problems in
the band ``dataset.min_pass_rate < p < dataset.max_pass_rate``: by default those the model
solves sometimes but not always, the only ones whose groups can differ (DAPO, DeepCoder).
``dataset.curriculum`` then orders them, easiest or hardest first.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cliflags import Flag, add_flags, flag_values
from harness.records import Problem

FORMAT = 1


@dataclass(frozen=True)
class Difficulty:
    """One problem's measurement."""

    passed: int
    n: int
    reward_mean: float

    @property
    def pass_rate(self) -> float:
        return self.passed / self.n if self.n else 0.0


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "--", text).strip("-") or "model"


def split_name(split: str) -> str:
    """``train[:50]`` -> ``train``: one file per split; slices only add problems to it."""
    return split.split("[", 1)[0].strip()


def cache_folder(suite: str, split: str, model: str) -> Path:
    from harness.paths import cache_dir

    return cache_dir() / "difficulty" / _slug(suite) / _slug(split_name(split)) / _slug(model)


def default_path(
    suite: str, split: str, model: str, n: int, temperature: float, max_new_tokens: int, seed: int
) -> Path:
    name = f"n{n}-t{temperature:g}-m{max_new_tokens}-s{seed}.json"
    return cache_folder(suite, split, model) / name


def read_table(path: str | Path) -> dict[str, Difficulty]:
    """A difficulty file's problems (task id -> measurement)."""
    data = json.loads(Path(path).read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a difficulty file of format {FORMAT}")
    return {
        str(tid): Difficulty(int(v["passed"]), int(v["n"]), float(v.get("reward_mean", 0.0)))
        for tid, v in data.get("problems", {}).items()
    }


def find_cached(suite: str, split: str, model: str) -> Path | None:
    """The cached measurement with the most samples per problem (then the newest)."""
    folder = cache_folder(suite, split, model)
    files = list(folder.glob("n*.json")) if folder.is_dir() else []

    def key(p: Path) -> tuple[int, float]:
        match = re.match(r"n(\d+)-", p.name)
        return (int(match.group(1)) if match else 0, p.stat().st_mtime)

    return max(files, key=key) if files else None


def resolve_table(
    source: str, suite: str, split: str, model: str
) -> tuple[Path, dict[str, Difficulty]]:
    """``source`` is a difficulty file or ``cache`` (see :func:`find_cached`)."""
    path = find_cached(suite, split, model) if source == "cache" else Path(source)
    if path is None or not path.exists():
        where = cache_folder(suite, split, model) if source == "cache" else source
        raise FileNotFoundError(
            f"no difficulty measurement at {where}; run `codeeval difficulty --suite {suite} "
            f"--split {split_name(split)} --model {model} -n 8` first"
        )
    return path, read_table(path)


def in_band(rate: float, low: float | None, high: float | None) -> bool:
    """``low < rate < high``; a ``None`` bound does not bound."""
    return (low is None or rate > low) and (high is None or rate < high)


def select(
    problems: Sequence[Problem],
    table: Mapping[str, Difficulty],
    low: float | None,
    high: float | None,
) -> tuple[list[Problem], list[str]]:
    """The problems whose pass rate is in the band, and the task ids never measured (left out:
    a problem of unknown difficulty would defeat the filter)."""
    kept = [
        p for p in problems if p.task_id in table and in_band(table[p.task_id].pass_rate, low, high)
    ]
    unmeasured = [p.task_id for p in problems if p.task_id not in table]
    return kept, unmeasured


def curriculum(
    problems: Sequence[Problem], table: Mapping[str, Difficulty], mode: str, seed: int
) -> list[Problem]:
    """``easy_first`` (highest pass rate first) or ``hard_first``; ties in a seeded order."""
    order = list(problems)
    if mode == "none":
        return order
    if mode not in ("easy_first", "hard_first"):
        raise ValueError(f"curriculum {mode!r}: expected none, easy_first or hard_first")
    random.Random(seed).shuffle(order)  # then a stable sort: ties stay in this seeded order
    sign = -1.0 if mode == "easy_first" else 1.0
    return sorted(order, key=lambda p: sign * table[p.task_id].pass_rate)


def training_problems(
    problems: Sequence[Problem], dataset: Any, model: str, seed: int
) -> list[Problem]:
    """A trainer's problems after ``dataset.difficulty``'s band and curriculum (unchanged
    without ``dataset.difficulty``)."""
    if not getattr(dataset, "difficulty", None):
        return list(problems)
    path, table = resolve_table(dataset.difficulty, dataset.suite, dataset.train_split, model)
    kept, unmeasured = select(problems, table, dataset.min_pass_rate, dataset.max_pass_rate)
    if unmeasured:
        print(
            f"difficulty: {len(unmeasured)} of {len(problems)} problems are not in {path} and "
            "are left out; measure them with `codeeval difficulty`"
        )
    if not kept:
        raise ValueError(
            f"difficulty: no problem of {len(problems)} has a pass rate in "
            f"({dataset.min_pass_rate}, {dataset.max_pass_rate}) per {path}; widen the band "
            "(dataset.min_pass_rate / dataset.max_pass_rate, null for none) or measure with "
            "more samples"
        )
    print(f"difficulty: {len(kept)} of {len(problems)} problems in the band ({path})")
    return curriculum(kept, table, dataset.curriculum, seed)


# ---------------------------------------------------------------- measuring


def measure(
    problems: Sequence[Problem],
    backend: Any,
    n: int,
    settings: Any,
    path: Path,
    meta: Mapping[str, Any],
    reward: str | None = None,
    workers: int = 0,
    progress: bool = True,
) -> dict[str, Difficulty]:
    """Measure the problems not yet in ``path`` and write it; returns the whole table."""
    from harness.evaluate import evaluate
    from harness.generate import generate_samples
    from harness.records import Sample

    table = read_table(path) if path.exists() else {}
    if table:
        old = json.loads(path.read_text())
        differ = {k: (old.get(k), v) for k, v in meta.items() if old.get(k) != v}
        if differ:
            raise ValueError(
                f"{path} was measured with other settings ({differ}: file's, now); "
                "choose another -o or delete the file"
            )
    todo = [p for p in problems if p.task_id not in table]
    if todo:
        samples_file = path.with_suffix(".samples.jsonl")
        generate_samples(todo, backend, n, settings, samples_file, progress=progress)
        wanted = {p.task_id for p in todo}
        samples = []
        for line in samples_file.read_text().splitlines():
            row = json.loads(line) if line.strip() else None
            if row and row["task_id"] in wanted and int(row["sample_id"]) < n:
                samples.append(Sample(row["task_id"], row["completion"], row["sample_id"]))
        rows = evaluate(todo, samples, reward=reward, workers=workers)
        table.update(summarize(rows, n))
    write_table(path, table, meta)
    return table


def summarize(rows: Sequence[Mapping[str, Any]], n: int) -> dict[str, Difficulty]:
    """Per task: samples passed out of ``n`` and the mean reward (0 without a reward)."""
    passed: dict[str, int] = {}
    rewards: dict[str, list[float]] = {}
    for row in rows:
        tid = str(row["task_id"])
        passed[tid] = passed.get(tid, 0) + int(bool(row.get("passed")))
        rewards.setdefault(tid, []).append(float(row.get("reward") or 0.0))
    return {
        tid: Difficulty(passed[tid], n, sum(rewards[tid]) / len(rewards[tid])) for tid in passed
    }


def write_table(path: Path, table: Mapping[str, Difficulty], meta: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "format": FORMAT,
        **meta,
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "problems": {
            tid: {
                "passed": d.passed,
                "n": d.n,
                "pass_rate": d.pass_rate,
                "reward_mean": d.reward_mean,
            }
            for tid, d in sorted(table.items())
        },
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)  # whole or not at all: a trainer may be reading it


def band_counts(table: Mapping[str, Difficulty]) -> dict[str, int]:
    """How many problems are never, sometimes and always solved."""
    out = {"never": 0, "sometimes": 0, "always": 0}
    for d in table.values():
        out["never" if d.passed == 0 else "always" if d.passed == d.n else "sometimes"] += 1
    return out


# ---------------------------------------------------------------- the command


# The sampling flags that fill GenerationSettings (a pass rate needs several samples, hence
# defaults of its own: n=8 at temperature 0.8).
SAMPLING = (
    Flag("-n", "n", int, "samples per problem (default 8)", default=8),
    Flag("--temperature", "temperature", float, "sampling temperature", default=0.8),
    Flag("--top-p", "top_p", float, "nucleus sampling", default=0.95),
    Flag("--max-new-tokens", "max_new_tokens", int, "tokens per answer", default=384),
    Flag("--seed", "seed", int, "sampling seed", default=0),
    Flag("--batch-size", "batch_size", int, "rows per generation call", default=8),
)


def add_difficulty_parser(sub: Any) -> None:
    cmd = sub.add_parser(
        "difficulty",
        help="measure each problem's pass rate with a model (for training's difficulty filter)",
        description="Sample n answers per problem, score them with the harness, and write each "
        "problem's pass rate to a cached JSON file that the trainers read (dataset.difficulty).",
    )
    cmd.add_argument("--suite", required=True, help="suite name (e.g. mbpp)")
    cmd.add_argument("--split", default="train", help="split, optionally sliced: train[:100]")
    cmd.add_argument("--model", required=True, help="registry name, hub name or folder")
    add_flags(cmd, SAMPLING)
    cmd.add_argument("--backend", default="auto", help="auto, transformers, vllm, vllm-server")
    cmd.add_argument("--device", default=None, help="transformers device (cpu, cuda)")
    cmd.add_argument("--dtype", default="float32", help="transformers dtype")
    cmd.add_argument("--reward", default=None, help="reward preset for the mean reward column")
    cmd.add_argument("--workers", type=int, default=0, help="scoring worker processes")
    cmd.add_argument("--data-dir", default=None, help="suite data folder")
    cmd.add_argument("--limit", type=int, default=0, help="measure only the first N problems")
    cmd.add_argument("-o", "--output", type=Path, help="the JSON file (default: the cache)")
    cmd.add_argument(
        "-v", "--verbose", action="store_true", help="show the model libraries' own log lines"
    )


def run_difficulty(args: argparse.Namespace) -> int:
    from harness.logs import quiet_third_parties

    quiet_third_parties(verbose=args.verbose)  # before vLLM or transformers is first imported
    from harness.models.backends import make_backend
    from harness.models.base import GenerationSettings
    from suites import load_suite

    if args.n < 2:
        print("codeeval difficulty: -n must be >= 2 to tell 'sometimes' apart", flush=True)
        return 2
    problems = [p for p in load_suite(args.suite, args.split, args.data_dir) if not p.defects]
    if args.limit:
        problems = problems[: args.limit]
    path = args.output or default_path(
        args.suite, args.split, args.model, args.n, args.temperature, args.max_new_tokens, args.seed
    )
    sampling = flag_values(args, SAMPLING)
    settings = GenerationSettings(**sampling)
    meta = {
        "suite": args.suite,
        "split": split_name(args.split),
        "model": args.model,
        **{k: v for k, v in sampling.items() if k != "batch_size"},  # batch size: not a result
    }
    known = read_table(path) if path.exists() else {}
    backend = None
    if any(p.task_id not in known for p in problems):
        backend = make_backend(args.model, args.backend, dtype=args.dtype, device=args.device)
    table = measure(problems, backend, args.n, settings, path, meta, args.reward, args.workers)
    mine = {p.task_id: table[p.task_id] for p in problems if p.task_id in table}
    counts = band_counts(mine)
    mean = sum(d.pass_rate for d in mine.values()) / len(mine) if mine else 0.0
    print(
        f"{len(mine)} problems ({len(problems) - len([p for p in problems if p.task_id in known])} "
        f"measured now): mean pass rate {mean:.3f}; never solved {counts['never']}, sometimes "
        f"{counts['sometimes']}, always {counts['always']}"
    )
    print(path)
    return 0
