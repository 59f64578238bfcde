"""Does training raise the reward, and what does a MAGRPO step cost next to TRL's GRPO step?

    python benchmarks/learning.py                      # curve (MAGRPO if present) + timing
    python benchmarks/learning.py --trainer grpo --steps 30
    python benchmarks/learning.py --skip-curve --timing-steps 3
    # rollouts through vLLM (LoRA adapters handed over each step) against transformers'
    python benchmarks/learning.py --rollouts --skip-curve --skip-timing --reward length
    # held-out learning: MAGRPO on MBPP train, scored before/after on MBPP test (heldout.py)
    python benchmarks/learning.py --heldout --steps 60 --buffer 4 --generations 4
    # plain MAGRPO against MAGRPO with the code-RL recipe (docs/recipe.md), same seed and steps
    python benchmarks/learning.py --heldout --ab --difficulty cache --bands cache
    # the curve in the closing note (~14 min on 2 idle cores): the same 2 prompts every step
    python benchmarks/learning.py --trainer magrpo --tasks HumanEval/53,HumanEval/23 \
        --buffer 2 --steps 20 --max-new-tokens 64 --threads 2 --skip-timing

1. **Learning curve**: a CPU run (SmolLM2-135M + LoRA) on 8 easy HumanEval problems; prints
   the mean reward on the training prompts per step, and the means of the first and last
   quarter of the run.
2. **Step time**: seconds per step of TRL's ``GRPOTrainer`` (through ``trainers.grpo``) and of
   ``trainers.magrpo`` (2 agents, aligned, 1 turn) at the same model, G and max new tokens and
   the same reward; MAGRPO's time per agent should be at most 1.3x TRL's step.
3. **Rollout engines** (``--rollouts``): MAGRPO (2 agents, G=4, 128 new tokens) with
   transformers rollouts and with vLLM rollouts at the same settings: the rollout phase and the
   whole step, medians over the steps after the first (targets: rollouts >= 4x, step >= 2x).

``--reward harness`` (default) scores with the harness (``harness.evaluate``); ``--reward
length`` uses a cheap text reward so the timing isolates the trainers themselves.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Short, easy HumanEval tasks (one-line reference solutions).
EASY_TASKS = [
    "HumanEval/23",  # strlen
    "HumanEval/28",  # concatenate
    "HumanEval/30",  # get_positive
    "HumanEval/34",  # unique
    "HumanEval/35",  # max_element
    "HumanEval/42",  # incr_list
    "HumanEval/45",  # triangle_area
    "HumanEval/53",  # add
]
TARGET_RATIO = 1.3


def easy_problems(tasks: list[str] | None = None) -> list[Any]:
    from suites.registry import load_suite

    by_id = {p.task_id: p for p in load_suite("humaneval", "test")}
    return [by_id[t] for t in (tasks or EASY_TASKS)]


def length_score(text: str) -> float:
    """Cheap stand-in reward for timing: favours code-looking answers with a ``return``."""
    return float("return" in text) + min(len(text), 200) / 400


def grpo_reward(kind: str, problems: Sequence[Any]) -> Callable[..., list[float | None]]:
    from trainers.common.reward import HarnessReward, completion_text

    if kind == "harness":
        return HarnessReward({p.task_id: p for p in problems}, preset="code_levels")

    def length_reward(prompts, completions, **columns) -> list[float | None]:  # noqa: ANN001
        return [length_score(completion_text(c)) for c in completions]

    length_reward.__name__ = "length_reward"
    return length_reward


def magrpo_scorer(kind: str) -> Any:
    if kind == "harness":
        return None  # the trainer's own harness scorer

    def score(problems, samples):  # noqa: ANN001
        return [
            {"task_id": s.task_id, "sample_id": s.sample_id, "reward": length_score(s.completion)}
            for s in samples
        ]

    return score


def run_grpo(
    steps: int, g: int, tokens: int, reward: str, out: Path, lr: float = 1e-3
) -> list[dict[str, Any]]:
    """TRL GRPO for ``steps`` steps; one record per step (reward, step seconds)."""
    from trainers.grpo.config import parse_args
    from trainers.grpo.trainer import build_trainer

    problems = easy_problems()
    config = parse_args(
        [
            "--config",
            str(ROOT / "configs" / "grpo_he_cpu.yaml"),
            "--override",
            f"output.dir={out}",
            f"grpo.max_steps={steps}",
            f"grpo.num_generations={g}",
            f"grpo.max_new_tokens={tokens}",
            f"grpo.learning_rate={lr}",
            "output.save_interval=0",
            "dataset.shuffle=true",
        ]
    )
    run = build_trainer(config, problems=problems, reward_fn=grpo_reward(reward, problems))
    run.trainer.train()
    run.logger.close()
    rows = [r for r in run.trainer.state.log_history if "reward" in r]
    return [{"reward": r["reward"], "step_s": r.get("step_time")} for r in rows]


def run_magrpo(
    steps: int,
    g: int,
    tokens: int,
    reward: str,
    out: Path,
    agents: int = 2,
    lr: float = 1e-3,
    tasks: list[str] | None = None,
    buffer: int = 1,
    rollout_backend: str = "transformers",
) -> list[dict[str, Any]]:
    """MAGRPO for ``steps`` steps; one record per step (joint reward, step seconds).

    ``buffer`` prompts per step: with ``buffer == len(tasks)`` every step scores the same
    prompts, so the curve shows learning rather than which prompt a step happened to draw.
    """
    from trainers.common.config import load_config
    from trainers.magrpo.config import MAGRPOConfig
    from trainers.magrpo.trainer import MAGRPOTrainer

    config = load_config(
        MAGRPOConfig,
        ROOT / "configs" / "magrpo_he_cpu.yaml",
        [
            f"output.dir={out}",
            f"magrpo.max_steps={steps}",
            f"magrpo.num_agents={agents}",
            f"magrpo.num_generations={g}",
            f"magrpo.max_new_tokens={tokens}",
            f"magrpo.learning_rate={lr}",
            f"magrpo.rollout_buffer_size={buffer}",
            f"magrpo.num_epochs={steps}",  # enough epochs that max_steps is what stops it
            "magrpo.eval_interval=0",
            "output.save_interval=0",
            "output.save_final_model=false",
            "logging.progress_bar=false",
            f"model.rollout_backend={rollout_backend}",
        ],
    )
    trainer = MAGRPOTrainer(
        config,
        scorer=magrpo_scorer(reward),
        train_problems=easy_problems(tasks),
        eval_problems=[],
    )
    records = trainer.train()
    keys = ("reward_mean", "step_s", "rollout_s", "sync_s")
    return [{k.replace("_mean", ""): r.get(k) for k in keys} for r in records]


def have_magrpo() -> bool:
    try:
        import trainers.magrpo.trainer  # noqa: F401
    except ImportError:
        return False
    return True


def print_curve(name: str, records: list[dict[str, Any]]) -> dict[str, float]:
    rewards = [r["reward"] for r in records if r["reward"] is not None]
    print(f"\n== learning curve ({name}, mean reward on the training prompts per step)")
    low, high = min(rewards), max(rewards)
    for i, value in enumerate(rewards, start=1):
        # Bars from the run's lowest reward: rewards with a negative shift still draw.
        width = 0 if high == low else int(round(40 * (value - low) / (high - low)))
        print(f"step {i:3d}  {value:8.4f}  |{'#' * width}")
    quarter = max(1, len(rewards) // 4)
    start, end = statistics.mean(rewards[:quarter]), statistics.mean(rewards[-quarter:])
    verdict = "rose" if end > start else "did NOT rise"
    print(
        f"start mean (first {quarter}) {start:.4f}  end mean (last {quarter}) {end:.4f}: {verdict}"
    )
    return {"start_mean": start, "end_mean": end, "steps": len(rewards)}


def timing(steps: int, g: int, tokens: int, reward: str, tmp: Path) -> dict[str, float]:
    """Median seconds per step (the first step is left out: warm-up) for both trainers."""
    grpo = run_grpo(steps + 1, g, tokens, reward, tmp / "t_grpo")
    grpo_s = statistics.median(r["step_s"] for r in grpo[1:] if r["step_s"] is not None)
    magrpo = run_magrpo(steps + 1, g, tokens, reward, tmp / "t_magrpo", agents=2)
    magrpo_s = statistics.median(r["step_s"] for r in magrpo[1:] if r["step_s"] is not None)
    per_agent = magrpo_s / 2
    ratio = per_agent / grpo_s
    print(f"\n== step time (G={g}, max_new_tokens={tokens}, reward={reward}, {steps} steps)")
    print(f"TRL GRPO step           {grpo_s:8.2f} s")
    print(f"MAGRPO step (2 agents)  {magrpo_s:8.2f} s  = {per_agent:.2f} s per agent")
    ok = "meets" if ratio <= TARGET_RATIO else "MISSES"
    print(f"ratio per agent / TRL   {ratio:8.2f}  ({ok} the target <= {TARGET_RATIO})")
    return {"grpo_step_s": grpo_s, "magrpo_step_s": magrpo_s, "ratio_per_agent": ratio}


ROLLOUT_TARGET, STEP_TARGET = 4.0, 2.0


def rollout_timing(
    steps: int, g: int, tokens: int, reward: str, buffer: int, tmp: Path
) -> dict[str, float]:
    """MAGRPO steps with transformers rollouts, then with vLLM rollouts, same settings."""
    found: dict[str, float] = {}
    for backend in ("transformers", "vllm"):
        started = time.perf_counter()
        records = run_magrpo(
            steps + 1, g, tokens, reward, tmp / f"r_{backend}", agents=2, buffer=buffer,
            rollout_backend=backend,
        )  # fmt: skip
        found[f"{backend}_total_s"] = time.perf_counter() - started
        for key in ("rollout_s", "step_s", "sync_s"):
            values = [r[key] for r in records[1:] if r.get(key) is not None]
            found[f"{backend}_{key}"] = statistics.median(values) if values else 0.0
    rollout_x = found["transformers_rollout_s"] / found["vllm_rollout_s"]
    step_x = found["transformers_step_s"] / found["vllm_step_s"]
    print(
        f"\n== rollout engines (MAGRPO, 2 agents, G={g}, {buffer} prompts per step, "
        f"max_new_tokens={tokens}, reward={reward}, median of {steps} steps after the first)"
    )
    print("                 rollout s   step s   adapter sync s   run incl. start-up s")
    for backend in ("transformers", "vllm"):
        print(
            f"{backend:15s} {found[f'{backend}_rollout_s']:9.2f} {found[f'{backend}_step_s']:8.2f}"
            f" {found[f'{backend}_sync_s']:16.3f} {found[f'{backend}_total_s']:21.1f}"
        )
    for name, value, target in (
        ("rollout", rollout_x, ROLLOUT_TARGET),
        ("step", step_x, STEP_TARGET),
    ):
        verdict = "meets" if value >= target else "MISSES"
        print(f"vLLM speed-up, {name:7s} {value:6.2f}x  ({verdict} the target >= {target}x)")
    found.update(rollout_speedup=rollout_x, step_speedup=step_x)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trainer", choices=["auto", "grpo", "magrpo"], default="auto")
    parser.add_argument("--steps", type=int, default=24, help="learning-curve steps")
    parser.add_argument("--generations", type=int, default=4, help="G for both trainers")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--timing-steps", type=int, default=3)
    parser.add_argument("--reward", choices=["harness", "length"], default="harness")
    parser.add_argument("--skip-curve", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 on busy CPUs)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--tasks", help="comma-separated HumanEval task ids (default: 8 easy ones)")
    parser.add_argument("--buffer", type=int, default=1, help="MAGRPO prompts per step")
    parser.add_argument(
        "--rollouts", action="store_true", help="compare transformers and vLLM rollouts"
    )
    parser.add_argument("--rollout-tokens", type=int, default=128, help="--rollouts' new tokens")
    parser.add_argument("--rollout-buffer", type=int, default=4, help="--rollouts' prompts/step")
    heldout = parser.add_argument_group("--heldout (MBPP train -> MBPP test, see heldout.py)")
    heldout.add_argument("--heldout", action="store_true", help="only the held-out benchmark")
    heldout.add_argument("--eval-problems", type=int, default=64, help="MBPP test problems")
    heldout.add_argument("--learning-rate", type=float, default=1e-3)
    heldout.add_argument(
        "--rollout-backend", default="vllm", choices=["vllm", "transformers"], help="engine"
    )
    heldout.add_argument("--recipe", action="store_true", help="train with the code-RL recipe")
    heldout.add_argument("--ab", action="store_true", help="plain MAGRPO, then with the recipe")
    heldout.add_argument(
        "--config", type=Path, help="base MAGRPO config (default: magrpo_he_cpu.yaml)"
    )
    heldout.add_argument("--model", help="model.name for both arms (default: the config's)")
    heldout.add_argument(
        "--difficulty",
        help="the recipe arm's difficulty filter on MBPP train: cache or a file from "
        "`codeeval difficulty` (default: no filter)",
    )
    heldout.add_argument(
        "--bands",
        help="pass@1 per band of the base model's pass rate on the held-out problems: cache "
        "or a file from `codeeval difficulty --split test`",
    )
    heldout.add_argument(
        "--updates-per-rollout",
        type=int,
        default=4,
        help="the recipe arm's optimizer updates per rollout buffer (minibatches)",
    )
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    if args.reward == "harness":
        try:
            import harness.evaluate  # noqa: F401
        except ImportError:
            print("harness.evaluate is not available; use --reward length", file=sys.stderr)
            return 2
    trainer = args.trainer
    if trainer == "auto":
        trainer = "magrpo" if have_magrpo() else "grpo"
    results: dict[str, Any] = {"trainer": trainer, "reward": args.reward}
    with tempfile.TemporaryDirectory(prefix="learning-") as tmp_name:
        tmp = Path(tmp_name)
        if args.heldout:
            from heldout import run_heldout

            results["heldout"] = run_heldout(args, tmp)
            args.skip_curve = args.skip_timing = True
        if not args.skip_curve:
            started = time.perf_counter()
            curve_args = (args.steps, args.generations, args.max_new_tokens, args.reward)
            if trainer == "magrpo":
                tasks = args.tasks.split(",") if args.tasks else None
                records = run_magrpo(*curve_args, tmp / "curve", tasks=tasks, buffer=args.buffer)
            else:
                records = run_grpo(*curve_args, tmp / "curve")
            results["curve"] = [r["reward"] for r in records]
            results.update(print_curve(trainer, records))
            results["curve_s"] = time.perf_counter() - started
        if not args.skip_timing:
            if not have_magrpo():
                print("trainers.magrpo is not available: no step-time comparison", file=sys.stderr)
            else:
                results["timing"] = timing(
                    args.timing_steps, args.generations, args.max_new_tokens, args.reward, tmp
                )
        if args.rollouts:
            results["rollouts"] = rollout_timing(
                args.timing_steps, args.generations, args.rollout_tokens, args.reward,
                args.rollout_buffer, tmp,
            )  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
