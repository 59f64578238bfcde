"""Does MAGRPO's learning carry over to problems it never trained on?

    python benchmarks/learning.py --heldout                 # the defaults below
    python benchmarks/learning.py --heldout --steps 40 --eval-problems 100

Two agents (helper + main, ``code_levels`` reward) train with MAGRPO on MBPP's training split;
before and after, both agents answer MBPP test problems (greedy, never trained on) and the
harness scores the joint programs. Per problem: the reward and whether all tests passed. The
change of the mean is reported with a paired bootstrap interval over problems (the same
problems before and after, so the pairing removes the problems' own difficulty).

Rollouts go through vLLM where it runs (``--rollout-backend``); the run states its steps, the
training problems it saw and its time, so a reader can size a longer run.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "magrpo_he_cpu.yaml"


@dataclass(frozen=True)
class HeldoutScore:
    """One eval problem's greedy joint answer, scored by the harness."""

    reward: float
    passed: bool


def score_problems(trainer: Any, problems: list[Any], tag: str) -> dict[str, HeldoutScore]:
    """Greedy joint answers of the trainer's agents on ``problems``, one score per task id.

    A problem whose row is an infrastructure or data error is left out (it says nothing about
    the model), so before and after are compared on the problems both scored.
    """
    from trainers.magrpo.rollout import rollout

    episodes = rollout(
        problems,
        trainer.agents,
        trainer.roles,
        trainer.scorer,
        trainer.feedback,
        trainer.rollout_settings(evaluation=True),
        tag=tag,
        engine=trainer.engine,
    )
    scores: dict[str, HeldoutScore] = {}
    for episode in episodes:
        first = [n for n in episode.nodes if n.turn == 1 and n.reward is not None]
        if not first or (first[0].row or {}).get("status") == "error":
            continue
        node = first[0]
        scores[episode.problem.task_id] = HeldoutScore(
            float(node.reward), bool((node.row or {}).get("passed"))
        )
    return scores


def paired_change(
    before: dict[str, HeldoutScore], after: dict[str, HeldoutScore], seed: int = 0
) -> dict[str, Any]:
    """Mean reward and pass@1 before/after on the shared problems, with 95% intervals."""
    from harness.gate import bootstrap_interval

    shared = sorted(before.keys() & after.keys())
    reward_diffs = [after[t].reward - before[t].reward for t in shared]
    pass_diffs = [float(after[t].passed) - float(before[t].passed) for t in shared]
    out: dict[str, Any] = {"problems": len(shared)}
    for name, diffs, pick in (
        ("reward", reward_diffs, lambda s: s.reward),
        ("pass@1", pass_diffs, lambda s: float(s.passed)),
    ):
        low, high = bootstrap_interval(diffs, seed=seed)
        out[name] = {
            "before": statistics.fmean(pick(before[t]) for t in shared) if shared else 0.0,
            "after": statistics.fmean(pick(after[t]) for t in shared) if shared else 0.0,
            "change": statistics.fmean(diffs) if diffs else 0.0,
            "interval_95": [low, high],
            "improved": sum(1 for d in diffs if d > 0),
            "regressed": sum(1 for d in diffs if d < 0),
        }
    return out


def heldout_overrides(args: Any, out: Path) -> list[str]:
    return [
        f"output.dir={out}",
        "dataset.suite=mbpp",
        "dataset.train_split=train",
        f"dataset.eval_split=test[:{args.eval_problems}]",
        "dataset.shuffle=true",
        "magrpo.num_agents=2",
        f"magrpo.max_steps={args.steps}",
        f"magrpo.num_epochs={max(1, args.steps)}",  # max_steps is what stops the run
        f"magrpo.num_generations={args.generations}",
        f"magrpo.rollout_buffer_size={args.buffer}",
        f"magrpo.max_new_tokens={args.max_new_tokens}",
        f"magrpo.learning_rate={args.learning_rate}",
        "magrpo.eval_interval=0",
        "magrpo.eval_temperature=0.0",
        "output.save_interval=0",
        "output.save_final_model=false",
        "logging.progress_bar=false",
        f"model.rollout_backend={args.rollout_backend}",
    ]


def train_steps(trainer: Any) -> tuple[list[dict[str, Any]], set[str]]:
    """``trainer.train()``'s loop without its ending: the rollout engine stays open, so the
    after-score samples from the same engine as the before-score."""
    from tqdm.auto import tqdm

    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    batches = trainer.batches()
    total = trainer.total_steps()
    with tqdm(total=total, desc="magrpo (held-out run)") as bar:
        while trainer.step < total and (problems := next(batches, None)) is not None:
            records.append(trainer.train_step(problems))
            seen.update(p.task_id for p in problems)
            trainer.step += 1
            bar.update(1)
            bar.set_postfix(reward=f"{records[-1]['reward_mean']:.3f}")
    return records, seen


def run_heldout(args: Any, tmp: Path) -> dict[str, Any]:
    from trainers.common.config import load_config
    from trainers.magrpo.config import MAGRPOConfig
    from trainers.magrpo.trainer import MAGRPOTrainer

    config = load_config(MAGRPOConfig, CONFIG, heldout_overrides(args, tmp / "heldout"))
    started = time.perf_counter()
    trainer = MAGRPOTrainer(config)
    try:
        problems = trainer._eval_set()
        print(
            f"== held-out learning: MAGRPO, 2 agents, code_levels, MBPP train "
            f"({len(trainer.train_problems)} problems) -> MBPP test[:{args.eval_problems}], "
            f"rollouts: {args.rollout_backend}"
        )
        scored = time.perf_counter()
        before = score_problems(trainer, problems, "heldout-before")
        before_s = time.perf_counter() - scored
        print(f"before: {len(before)} problems scored in {before_s:.0f} s")
        trained = time.perf_counter()
        records, seen = train_steps(trainer)
        train_s = time.perf_counter() - trained
        after = score_problems(trainer, problems, "heldout-after")
    finally:
        from trainers.common.rollout_engine import close_engine

        close_engine(trainer.engine)
    change = paired_change(before, after)
    rewards = [r.get("reward_mean") for r in records if r.get("reward_mean") is not None]
    quarter = max(1, len(rewards) // 4)
    result = {
        "steps": len(records),
        "train_problems_seen": len(seen),
        "train_s": train_s,
        "total_s": time.perf_counter() - started,
        "train_reward_first_quarter": statistics.fmean(rewards[:quarter]) if rewards else None,
        "train_reward_last_quarter": statistics.fmean(rewards[-quarter:]) if rewards else None,
        **change,
    }
    print_heldout(result)
    return result


def print_heldout(result: dict[str, Any]) -> None:
    print(
        f"trained {result['steps']} steps on {result['train_problems_seen']} training "
        f"problems in {result['train_s'] / 60:.1f} min (whole benchmark "
        f"{result['total_s'] / 60:.1f} min)"
    )
    if result["train_reward_first_quarter"] is not None:
        print(
            f"training reward: first quarter {result['train_reward_first_quarter']:.4f}, "
            f"last quarter {result['train_reward_last_quarter']:.4f}"
        )
    print(f"held-out problems scored before and after: {result['problems']}")
    print("            before    after    change   95% paired-bootstrap interval  up/down")
    for name in ("reward", "pass@1"):
        r = result[name]
        low, high = r["interval_95"]
        print(
            f"{name:8s} {r['before']:9.4f} {r['after']:8.4f} {r['change']:+9.4f}   "
            f"[{low:+.4f}, {high:+.4f}]{'':16s} {r['improved']}/{r['regressed']}"
        )
    low, high = result["reward"]["interval_95"]
    if low > 0:
        verdict = "excludes zero: the held-out reward rose"
    elif high < 0:
        verdict = "excludes zero: the held-out reward FELL"
    else:
        verdict = "includes zero: no held-out change shown"
    print(f"reward change interval {verdict}")
