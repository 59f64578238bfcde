"""Does MAGRPO's learning carry over to problems it never trained on?

    python benchmarks/learning.py --heldout                 # the defaults below
    python benchmarks/learning.py --heldout --steps 40 --eval-problems 100
    # the code-RL recipe (configs/magrpo_mbpp_recipe.yaml's options), and plain vs recipe
    python benchmarks/learning.py --heldout --recipe --difficulty cache --bands cache
    python benchmarks/learning.py --heldout --ab --difficulty cache --bands cache

Two agents (helper + main, ``code_levels`` reward) train with MAGRPO on MBPP's training split;
before and after, both agents answer MBPP test problems (greedy, never trained on) and the
harness scores the joint programs. Per problem: the reward and whether all tests passed. The
change of the mean is reported with a paired bootstrap interval over problems (the same
problems before and after, so the pairing removes the problems' own difficulty).

``--recipe`` turns on the recipe's options (read from ``RECIPE_CONFIG``, so the benchmark and
the config cannot drift apart) and, with ``--difficulty``, trains only on the problems the
base model solves sometimes (``codeeval difficulty`` on MBPP train). ``--ab`` runs plain
MAGRPO and then MAGRPO with the recipe, same seed, steps and prompts per step, and compares
the two after-scores problem by problem. ``--bands`` groups the held-out problems by the base
model's measured pass rate on them (``codeeval difficulty --split test``: a description of
the problems, never used to choose anything) and reports pass@1 per band. Each arm reports
the share of sibling groups with zero gradient (all completions alike) in its rollouts and
in what it trained on, and its learning curve (training reward per step).

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
RECIPE_CONFIG = ROOT / "configs" / "magrpo_mbpp_recipe.yaml"
# The recipe's own settings; the rest (model, budget) comes from the benchmark's arguments.
RECIPE_KEYS = (
    "advantage_mode",
    "normalize_advantage",
    "beta",
    "ppo_epochs",
    "epsilon_low",
    "epsilon_high",
    "loss_aggregation",
    "dynamic_sampling",
    "dynamic_sampling_rounds",
    "overlong",
    "overlong_buffer",
    "overlong_penalty",
    "temperature",
    "top_p",
)
# Bands of the base model's pass rate on a held-out problem (see band_of).
BANDS = ("never", "low", "high", "always")


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
        *([f"model.name={args.model}"] if getattr(args, "model", None) else []),
    ]


def _value(value: Any) -> str:
    return (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    )


def arm_overrides(args: Any, recipe: bool) -> list[str]:
    """What makes an arm plain MAGRPO (the settings' defaults) or MAGRPO with the recipe
    (``RECIPE_CONFIG``'s values); everything else is the same in both arms."""
    import yaml

    from trainers.magrpo.config import MAGRPOSettings

    if not recipe:
        plain = MAGRPOSettings()
        return [
            *(f"magrpo.{k}={_value(getattr(plain, k))}" for k in RECIPE_KEYS),
            "magrpo.minibatch_size=0",
            "dataset.difficulty=null",
            "dataset.curriculum=none",
        ]
    data = yaml.safe_load(RECIPE_CONFIG.read_text())
    magrpo, dataset = data["magrpo"], data["dataset"]
    sequences = args.buffer * args.generations  # per agent per step
    updates = max(1, getattr(args, "updates_per_rollout", 1))
    source = getattr(args, "difficulty", None)
    return [
        *(f"magrpo.{k}={_value(magrpo[k])}" for k in RECIPE_KEYS if k in magrpo),
        f"magrpo.minibatch_size={0 if updates == 1 else -(-sequences // updates)}",
        f"dataset.difficulty={_value(source)}",
        *(
            f"dataset.{k}={_value(dataset.get(k))}"
            for k in ("min_pass_rate", "max_pass_rate")
            if source
        ),
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


def run_arm(args: Any, tmp: Path, name: str, recipe: bool) -> dict[str, Any]:
    """One arm: score the held-out problems, train, score again."""
    from trainers.common.config import load_config
    from trainers.magrpo.config import MAGRPOConfig
    from trainers.magrpo.trainer import MAGRPOTrainer

    overrides = [*heldout_overrides(args, tmp / name), *arm_overrides(args, recipe)]
    config = load_config(MAGRPOConfig, getattr(args, "config", None) or CONFIG, overrides)
    started = time.perf_counter()
    trainer = MAGRPOTrainer(config)
    try:
        problems = trainer._eval_set()
        print(
            f"== held-out learning [{name}]: MAGRPO, 2 agents, {config.model.name}, "
            f"code_levels, MBPP train ({len(trainer.train_problems)} problems"
            f"{' in the difficulty band' if config.dataset.difficulty else ''}) -> MBPP "
            f"test[:{args.eval_problems}], rollouts: {args.rollout_backend}"
        )
        scored = time.perf_counter()
        before = score_problems(trainer, problems, f"heldout-{name}-before")
        print(f"before: {len(before)} problems scored in {time.perf_counter() - scored:.0f} s")
        trained = time.perf_counter()
        records, seen = train_steps(trainer)
        train_s = time.perf_counter() - trained
        after = score_problems(trainer, problems, f"heldout-{name}-after")
    finally:
        from trainers.common.rollout_engine import close_engine

        close_engine(trainer.engine)
    rewards = [r.get("reward_mean") for r in records if r.get("reward_mean") is not None]
    quarter = max(1, len(rewards) // 4)
    dynamic = [r.get("dynamic", {}) for r in records]
    result = {
        "arm": name,
        "steps": len(records),
        "train_problems": len(trainer.train_problems),
        "train_problems_seen": len(seen),
        "episodes_sampled": sum(d.get("refill_episodes", 0.0) for d in dynamic)
        + args.buffer * len(records),
        "train_s": train_s,
        "total_s": time.perf_counter() - started,
        "curve": rewards,
        "train_reward_first_quarter": statistics.fmean(rewards[:quarter]) if rewards else None,
        "train_reward_last_quarter": statistics.fmean(rewards[-quarter:]) if rewards else None,
        "zero_gradient_share": _mean_of(dynamic, "zero_gradient_share"),
        "trained_zero_gradient_share": _mean_of(dynamic, "trained_zero_gradient_share"),
        "overlong_masked_share": _mean_of(dynamic, "overlong_masked_share"),
        **paired_change(before, after),
        "scores": {
            "before": {t: [s.reward, s.passed] for t, s in before.items()},
            "after": {t: [s.reward, s.passed] for t, s in after.items()},
        },
    }
    print_heldout(result)
    return result


def _mean_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if key in r]
    return statistics.fmean(values) if values else None


def _scores(arm: dict[str, Any], when: str) -> dict[str, HeldoutScore]:
    return {t: HeldoutScore(float(r), bool(p)) for t, (r, p) in arm["scores"][when].items()}


def band_of(rate: float) -> str:
    """never (0), low (below one half), high (one half or more, not 1), always (1)."""
    if rate <= 0.0:
        return "never"
    if rate >= 1.0:
        return "always"
    return "low" if rate < 0.5 else "high"


def band_report(
    arms: dict[str, dict[str, Any]], rates: dict[str, float]
) -> dict[str, dict[str, Any]]:
    """Per band of the base model's pass rate: problems, and pass@1 before/after per arm."""
    out: dict[str, dict[str, Any]] = {}
    for band in BANDS:
        tasks = {t for t, r in rates.items() if band_of(r) == band}
        row: dict[str, Any] = {}
        for name, arm in arms.items():
            before, after = _scores(arm, "before"), _scores(arm, "after")
            shared = sorted(tasks & before.keys() & after.keys())
            row["problems"] = len(shared)
            row[name] = {
                when: statistics.fmean(float(s[t].passed) for t in shared) if shared else None
                for when, s in (("before", before), ("after", after))
            }
        out[band] = row
    return out


def run_heldout(args: Any, tmp: Path) -> dict[str, Any]:
    """One arm (plain, or the recipe with ``--recipe``), or both with ``--ab``."""
    if getattr(args, "ab", False):
        plan = [("plain", False), ("recipe", True)]
    else:
        plan = [("recipe", True)] if getattr(args, "recipe", False) else [("plain", False)]
    arms = {name: run_arm(args, tmp, name, recipe) for name, recipe in plan}
    result: dict[str, Any] = dict(next(iter(arms.values()))) if len(arms) == 1 else {}
    result["arms"] = {n: {k: v for k, v in a.items() if k != "scores"} for n, a in arms.items()}
    if len(arms) == 2:
        result["recipe_vs_plain_after"] = paired_change(
            _scores(arms["plain"], "after"), _scores(arms["recipe"], "after")
        )
        print_ab(result)
    if getattr(args, "bands", None):
        from harness.difficulty import resolve_table

        model = getattr(args, "model", None) or _config_model(args)
        path, table = resolve_table(args.bands, "mbpp", "test", model)
        result["bands"] = band_report(arms, {t: d.pass_rate for t, d in table.items()})
        result["bands_source"] = str(path)
        print_bands(result["bands"], list(arms))
    result.pop("scores", None)
    return result


def _config_model(args: Any) -> str:
    from trainers.common.config import load_config
    from trainers.magrpo.config import MAGRPOConfig

    return load_config(MAGRPOConfig, getattr(args, "config", None) or CONFIG, []).model.name


def print_ab(result: dict[str, Any]) -> None:
    plain, recipe = result["arms"]["plain"], result["arms"]["recipe"]
    change = result["recipe_vs_plain_after"]
    print(f"\n== A/B: plain MAGRPO vs MAGRPO with the recipe ({change['problems']} problems)")
    print("            plain after  recipe after  recipe - plain  95% paired-bootstrap interval")
    for name in ("reward", "pass@1"):
        r = change[name]
        low, high = r["interval_95"]
        print(
            f"{name:8s} {r['before']:14.4f} {r['after']:13.4f} {r['change']:+15.4f}   "
            f"[{low:+.4f}, {high:+.4f}]"
        )
    for arm in (plain, recipe):
        print(
            f"{arm['arm']:7s} steps {arm['steps']}, episodes sampled {arm['episodes_sampled']:.0f}"
            f", train {arm['train_s'] / 60:.1f} min"
        )


def print_bands(bands: dict[str, dict[str, Any]], arms: list[str]) -> None:
    print("\n== pass@1 per band of the base model's pass rate on the held-out problems")
    print(
        "band     problems  " + "  ".join(f"{a + ' before':>14s} {a + ' after':>13s}" for a in arms)
    )
    for band, row in bands.items():
        cells = []
        for arm in arms:
            for when in ("before", "after"):
                v = row.get(arm, {}).get(when)
                cells.append(f"{'-' if v is None else f'{v:.3f}':>14s}")
        print(f"{band:8s} {row.get('problems', 0):8d}  " + " ".join(cells))


def print_heldout(result: dict[str, Any]) -> None:
    print(
        f"[{result.get('arm', 'plain')}] trained {result['steps']} steps on "
        f"{result['train_problems_seen']} training problems in {result['train_s'] / 60:.1f} min "
        f"(whole arm {result['total_s'] / 60:.1f} min)"
    )
    if result["train_reward_first_quarter"] is not None:
        print(
            f"training reward: first quarter {result['train_reward_first_quarter']:.4f}, "
            f"last quarter {result['train_reward_last_quarter']:.4f}"
        )
        curve = result.get("curve") or []
        every = max(1, len(curve) // 20)
        print(
            "learning curve (reward per step): "
            + " ".join(f"{i + 1}:{v:.3f}" for i, v in enumerate(curve) if i % every == 0)
        )
    if result.get("zero_gradient_share") is not None:
        print(
            f"groups with zero gradient: {result['zero_gradient_share']:.3f} of those sampled, "
            f"{result['trained_zero_gradient_share']:.3f} of those trained on"
        )
    if result.get("overlong_masked_share"):
        print(f"truncated completions masked: {result['overlong_masked_share']:.3f}")
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
