"""What the public reward API and its adapters cost above ``evaluate()`` (CPU, warm).

    python benchmarks/reward_api.py [--problems 16] [--batches 4] [--repeat 3] [--workers 2]

Each batch is 4 samples per HumanEval problem (the reference body, one operator flipped, the
body cut mid-line, and a body that exits the process), each program made distinct per batch
(a comment with the batch number) so no batch reuses another's executions. Every path scores
the same batches with the ``binary`` reward on the same warm worker pool, in turns (one
batch per path, then the next), so machine noise hits every path alike:

- ``evaluate()``: the reference (problems and ``Sample`` records built by the caller);
- ``RewardEngine.score``: items by task id (checking, problem lookup, rows with ``reward``);
- ``TRLReward``: the TRL reward function called with GRPOTrainer's keywords;
- ``compute_score_batch``: verl's batched form;
- inline problems: the same problems sent inline (tests as ``def check``), warm cache.

It prints samples/s per path (median over ``--repeat`` rounds) and each path's ratio to
``evaluate()`` in this same run, then the cost of a new inline problem (built, calibrated and
compiled on first sight) against a known one. The rows of every path are checked equal to
``evaluate()``'s (timings aside) before anything is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from harness.evaluate import evaluate
from harness.records import Problem, Sample
from harness.rewardapi.trl import TRLReward
from harness.rewardapi.verl import compute_score_batch, engine_for
from suites import load_suite


def variants(problem: Problem) -> list[str]:
    body = problem.reference[len(problem.prompt) :]
    flipped = body.replace("<", ">", 1) if "<" in body else body.replace("+", "-", 1)
    cut = body[: max(8, int(len(body) * 0.6))].rstrip("\n") + " (\n"
    return [body, flipped, cut, "    import os\n    os._exit(3)\n"]


def batch_of(problems: list[Problem], tag: int) -> list[tuple[Problem, str]]:
    return [(p, f"{c}\n    # batch {tag}\n") for p in problems for c in variants(p)]


def inline_of(problem: Problem) -> dict[str, str]:
    return {
        "prompt": problem.prompt,
        "tests": problem.metadata["test_source"],
        "entry_point": problem.entry_point,
        "reference": problem.reference,
    }


def same_verdicts(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    def key(rows):
        return [(r["status"], [c["status"] for c in r["cases"]], r.get("reward")) for r in rows]

    return key(a) == key(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=16)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    problems = load_suite("humaneval", split=f"test[:{args.problems}]")
    engine = engine_for("binary", args.workers)  # the engine verl's functions use
    trl = TRLReward(engine)
    inline = {p.task_id: inline_of(p) for p in problems}

    def by_evaluate(batch):
        samples = [Sample(p.task_id, c, str(i)) for i, (p, c) in enumerate(batch)]
        return evaluate(problems, samples, reward="binary", workers=args.workers)

    def by_engine(batch):
        return engine.score([{"completion": c, "task_id": p.task_id} for p, c in batch])

    def by_trl(batch):
        rewards = trl(
            prompts=[p.prompt for p, _ in batch],
            completions=[c for _, c in batch],
            completion_ids=[[0]] * len(batch),
            task_id=[p.task_id for p, _ in batch],
            trainer_state=None,
        )
        return [{**r, "reward": w} for r, w in zip(trl.last_rows, rewards, strict=True)]

    def by_verl(batch):
        scores = compute_score_batch(
            data_sources=["humaneval"] * len(batch),
            solution_strs=[c for _, c in batch],
            ground_truths=[p.task_id for p, _ in batch],
            extra_infos=[{} for _ in batch],
            reward="binary",
            workers=args.workers,
        )
        return [{"status": None, "cases": [], "reward": s["score"]} for s in scores]

    def by_inline(batch):
        return engine.score([{"completion": c, "problem": inline[p.task_id]} for p, c in batch])

    paths: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
        "evaluate()": by_evaluate,
        "RewardEngine.score": by_engine,
        "TRLReward": by_trl,
        "verl compute_score_batch": by_verl,
        "inline problems": by_inline,
    }
    warm = batch_of(problems, -1)
    expected = by_evaluate(warm)
    for name, path in paths.items():  # warm every path, and check it agrees
        rows = path(warm)
        if name == "verl compute_score_batch":
            ok = [r["reward"] for r in rows] == [r["reward"] for r in expected]
        elif name == "inline problems":
            ok = [(r["status"], r["reward"]) for r in rows] == [
                (r["status"], r["reward"]) for r in expected
            ]
        else:
            ok = same_verdicts(rows, expected)
        print(f"{name:26s} rows agree with evaluate(): {ok}")
    rates: dict[str, list[float]] = {name: [] for name in paths}
    tag = 0
    for _ in range(args.repeat):
        spent = dict.fromkeys(paths, 0.0)
        count = 0
        for _ in range(args.batches):
            for name, path in paths.items():
                tag += 1
                batch = batch_of(problems, tag)
                started = time.perf_counter()
                path(batch)
                spent[name] += time.perf_counter() - started
            count += len(batch)
        for name in paths:
            rates[name].append(count / spent[name])
    reference = statistics.median(rates["evaluate()"])
    print(f"\n{len(warm)} samples per batch, {args.batches} batches x {args.repeat} rounds, ")
    print(f"{args.workers} workers, binary reward (median samples/s; ratio to evaluate())")
    for name in paths:
        rate = statistics.median(rates[name])
        print(f"  {name:26s} {rate:8.1f} samples/s   {rate / reference:5.2f}x")
    # never seen, not even by the calibration cache on disk
    cold_problem = {
        **inline[problems[0].task_id],
        "prompt": problems[0].prompt + f"# {time.time_ns()}\n",
    }
    started = time.perf_counter()
    engine.score([{"completion": variants(problems[0])[0], "problem": cold_problem}])
    cold = time.perf_counter() - started
    started = time.perf_counter()
    engine.score([{"completion": variants(problems[0])[1], "problem": cold_problem}])
    known = time.perf_counter() - started
    print(
        f"\n  a new inline problem: {cold * 1000:.0f} ms; the same problem again: {known * 1000:.0f} ms"
    )
    engine.close()


if __name__ == "__main__":
    main()
