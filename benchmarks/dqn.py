"""Does decoding with learned advantages beat the data's own policy on problems never trained on?

    python benchmarks/dqn.py                                   # defaults below (CPU, minutes)
    python benchmarks/dqn.py --train 'test[:32]' --heldout 'test[100:164]' --samples 4 --steps 200
    python benchmarks/dqn.py --data out/results.jsonl          # learn from an evaluation instead

1. **Data**: the frozen policy (SmolLM2-135M) samples ``--collect`` completions of each training
   problem and the harness scores them (or ``--data`` names a results.jsonl with rewards).
2. **Learning**: ``trainers.dqn`` fits its Q heads offline for ``--steps`` updates.
3. **Comparison** on the held-out problems (disjoint from the training ones, checked): the data
   policy (``beta = 0``) and the decoded policy (``beta``) each sample ``--samples``
   completions per problem with the same random draws (a paired comparison token by token),
   scored by the same harness. Per problem: the mean reward and the pass rate of each policy;
   the mean of the per-problem differences with a paired bootstrap 95% interval (problems
   resampled with replacement).

Measured (2026-11-23, 2 shared CPU cores under heavy load, nice 19; learning from the 16
completions that ``configs/dqn_he_cpu.yaml`` collected on HumanEval/0-3, 15 of them at the
floor reward -2.1):

    python benchmarks/dqn.py --train 'test[:4]' --data runs/dqn_he_cpu/data/results.jsonl \
        --heldout 'test[100:108]' --samples 2 --steps 30 --max-new-tokens 48 [--beta 0.3 --cql-alpha 1]

beta 1, CQL 0.1: data policy -1.95, decoded -2.10: difference -0.15 (95% interval -0.325 .. 0.0),
pass rate 0 for both, 1 of 16 sample pairs identical; beta 0.3, CQL 1: the same numbers (2 of 16
identical). No improvement: with almost no reward variance in the data there is little to learn.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def paired_bootstrap(
    diffs: Sequence[float], resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of per-problem differences and its percentile bootstrap
    interval (problems resampled with replacement, so pairs stay pairs)."""
    import numpy as np

    d = np.asarray(list(diffs), dtype=float)
    if d.size == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(d.mean()), float(low), float(high)


def per_problem(rows: Sequence[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """task -> (mean reward, pass rate) over the samples the harness scored."""
    acc: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        if row.get("reward") is None:  # an infrastructure error: neither policy's fault
            continue
        acc.setdefault(str(row["task_id"]), []).append(
            (float(row["reward"]), 1.0 if row.get("passed") else 0.0)
        )
    return {
        t: (sum(r for r, _ in v) / len(v), sum(p for _, p in v) / len(v)) for t, v in acc.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default="test[:16]", help="HumanEval split to learn from")
    parser.add_argument("--heldout", default="test[100:132]", help="problems to compare on")
    parser.add_argument("--data", default="collect", help="results.jsonl, history[:ID], collect")
    parser.add_argument("--collect", type=int, default=4, help="samples per training problem")
    parser.add_argument("--samples", type=int, default=4, help="samples per held-out problem")
    parser.add_argument("--steps", type=int, default=100, help="Q-learning updates")
    parser.add_argument("--beta", type=float, default=1.0, help="advantage scale of decoding")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--cql-alpha", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=0, help="torch threads; 0: torch's own")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/dqn_benchmark", help="output folder")
    args = parser.parse_args(argv)

    import torch

    from trainers.common.config import load_config
    from trainers.common.problems import load_split
    from trainers.dqn.config import DQNConfig
    from trainers.dqn.trainer import DQNTrainer

    if args.threads:
        torch.set_num_threads(args.threads)
    config = load_config(
        DQNConfig,
        ROOT / "configs" / "dqn_he_cpu.yaml",
        [
            f"dataset.train_split={args.train}",
            "dataset.eval_split=null",
            "dqn.eval_interval=0",
            f"dqn.data={args.data}",
            f"dqn.collect_samples={args.collect}",
            f"dqn.collect_temperature={args.temperature}",
            f"dqn.max_steps={args.steps}",
            f"dqn.max_new_tokens={args.max_new_tokens}",
            f"dqn.max_completion_tokens={args.max_new_tokens}",
            f"dqn.cql_alpha={args.cql_alpha}",
            f"dqn.beta={args.beta}",
            f"output.dir={args.out}",
            f"seed={args.seed}",
        ],
    )
    heldout = load_split("humaneval", args.heldout, None)
    started = time.perf_counter()
    trainer = DQNTrainer(config, eval_problems=heldout)
    overlap = {p.task_id for p in trainer.train_problems} & {p.task_id for p in heldout}
    if overlap:
        parser.error(f"--heldout shares problems with --train: {sorted(overlap)[:5]}")
    records = trainer.train()
    train_s = time.perf_counter() - started
    # The same seed for both: the two policies' samples share their random draws.
    seed = args.seed + 12345
    began = time.perf_counter()
    data_rows = trainer.score(heldout, args.samples, 0.0, args.temperature, seed)
    decoded_rows = trainer.score(heldout, args.samples, args.beta, args.temperature, seed)
    compare_s = time.perf_counter() - began
    a, b = per_problem(data_rows), per_problem(decoded_rows)
    tasks = [t for t in a if t in b]
    reward = paired_bootstrap([b[t][0] - a[t][0] for t in tasks], seed=args.seed)
    passed = paired_bootstrap([b[t][1] - a[t][1] for t in tasks], seed=args.seed)
    same = sum(
        1 for x, y in zip(data_rows, decoded_rows, strict=True) if x.get("raw") == y.get("raw")
    )
    result = {
        "train_split": args.train,
        "heldout_split": args.heldout,
        "episodes": len(trainer.episodes),
        "steps": len(records),
        "first_loss": records[0]["loss"],
        "last_loss": records[-1]["loss"],
        "last_td_loss": records[-1]["td_loss"],
        "last_cql_loss": records[-1]["cql_loss"],
        "heldout_problems": len(tasks),
        "samples_per_problem": args.samples,
        "beta": args.beta,
        "identical_samples": same,
        "data_policy": {
            "reward_mean": sum(a[t][0] for t in tasks) / max(1, len(tasks)),
            "pass_rate": sum(a[t][1] for t in tasks) / max(1, len(tasks)),
        },
        "decoded_policy": {
            "reward_mean": sum(b[t][0] for t in tasks) / max(1, len(tasks)),
            "pass_rate": sum(b[t][1] for t in tasks) / max(1, len(tasks)),
        },
        "reward_difference": {"mean": reward[0], "ci95": [reward[1], reward[2]]},
        "pass_rate_difference": {"mean": passed[0], "ci95": [passed[1], passed[2]]},
        "train_s": round(train_s, 1),
        "compare_s": round(compare_s, 1),
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "benchmark.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(
        f"decoded - data, mean reward per held-out problem: {reward[0]:+.4f} "
        f"(95% paired bootstrap interval {reward[1]:+.4f} .. {reward[2]:+.4f}; "
        f"{len(tasks)} problems x {args.samples} samples)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
