"""Single-agent GRPO: our config -> TRL's ``GRPOConfig`` + ``GRPOTrainer``, rewarded by the harness.

The policy comes from the shared infrastructure (``trainers.common.policy``: the model through
``harness.models.load_model`` with a LoRA adapter on the frozen base); TRL does the sampling,
group advantages, clipped loss, KL and checkpoints. Each logged step also goes to
``<output.dir>/metrics.jsonl`` through the shared metrics logger.

Several processes (``accelerate launch``/``torchrun``) are TRL's own business: its
``Accelerator`` wraps the policy in DDP, each process samples and scores (in its own sandbox)
``prompts_per_step`` prompts per step, and the main process logs and saves. Two things are ours:
``use_cpu`` for the device the policy is really on (without it a CPU-only machine counts one
process, see :func:`to_trl_args`), and a seed before the adapter is made, so every rank (and
every run) starts from the same parameters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.records import Problem
from trainers.common.config import ConfigError, to_dict
from trainers.common.logger import MetricsLogger
from trainers.common.problems import eval_problems, train_problems
from trainers.common.reward import HarnessReward, harness_reward
from trainers.grpo.config import GRPORunConfig
from trainers.grpo.data import make_dataset

RewardFn = Callable[..., list[float | None]]
# PEFT's default adapter name: with beta > 0, TRL's GRPOTrainer copies the adapter of this name
# into a frozen "ref" adapter for the KL term (any other name is a KeyError at start).
ADAPTER = "default"


def load_problems(config: GRPORunConfig) -> tuple[list[Problem], list[Problem]]:
    """Training and evaluation problems (the shared loader: ``trainers.common.problems``)."""
    ds = config.dataset
    return train_problems(ds, config.model.name, config.seed), eval_problems(ds)


def to_trl_args(config: GRPORunConfig) -> Any:
    """TRL's ``GRPOConfig`` for our config (every mapped field is named here)."""
    from trl import GRPOConfig

    from trainers.common.policy import resolve_device

    g, out, log, model = config.grpo, config.output, config.logging, config.model
    report_to = reporters(log)
    batch = g.prompts_per_step * g.num_generations
    return GRPOConfig(
        output_dir=out.dir,
        seed=config.seed,
        learning_rate=g.learning_rate,
        weight_decay=g.weight_decay,
        max_grad_norm=g.max_grad_norm if g.max_grad_norm > 0 else 1e9,
        num_train_epochs=g.num_epochs,
        max_steps=g.max_steps if g.max_steps > 0 else -1,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=g.gradient_accumulation_steps,
        num_generations=g.num_generations,
        max_completion_length=g.max_new_tokens,
        temperature=g.temperature,
        top_p=g.top_p,
        beta=g.beta,
        epsilon=g.epsilon,
        epsilon_high=g.epsilon_high,
        num_iterations=g.num_iterations,
        mask_truncated_completions=g.mask_truncated_completions,
        **({"steps_per_generation": g.steps_per_generation} if g.steps_per_generation else {}),
        **({"reward_weights": [1.0, g.overlong_penalty]} if g.overlong_buffer else {}),
        loss_type=g.loss_type,
        scale_rewards=g.scale_rewards,
        use_vllm=g.use_vllm,
        # a curriculum is an order: TRL must not shuffle it away
        shuffle_dataset=config.dataset.shuffles(),
        remove_unused_columns=False,  # the reward needs the task_id column
        logging_steps=1,
        save_strategy="steps" if out.save_interval > 0 else "no",
        save_steps=out.save_interval if out.save_interval > 0 else 500,
        report_to=report_to or "none",
        run_name=log.run_name,
        disable_tqdm=not log.progress_bar,
        # The device the policy is on (``auto``: accelerate's choice). transformers resets
        # accelerate's state here, and without use_cpu a CPU-only machine under torchrun
        # counts one process: every rank would then train alone, without averaging.
        use_cpu=resolve_device(model.device).type == "cpu",
        bf16=model.dtype == "bfloat16",
        fp16=model.dtype == "float16",
        dataloader_num_workers=0,
        # Only when asked: the option's old name warns on every run otherwise.
        **({"gradient_checkpointing": True} if model.gradient_checkpointing else {}),
    )


def reporters(log: Any) -> list[str]:
    """TRL's ``report_to``: the trackers the config asks for that are installed here. TRL
    stops at start on a missing one; like the metrics logger, a run says so and goes on."""
    import importlib.util
    import warnings

    wanted = [name for name, on in (("tensorboard", log.tensorboard), ("wandb", log.wandb)) if on]
    missing = [name for name in wanted if importlib.util.find_spec(name) is None]
    for name in missing:
        warnings.warn(f"logging.{name}: {name} is not installed; skipping it", stacklevel=2)
    return [name for name in wanted if name not in missing]


def metrics_callback(logger: MetricsLogger, reward: Any | None) -> Any:
    """A TRL/transformers callback that mirrors each log into ``metrics.jsonl``."""
    from transformers import TrainerCallback

    class _Metrics(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
            if state.is_world_process_zero and logs:
                extra = {"infra_errors": reward.infra_errors} if reward is not None else {}
                logger.log(state.global_step, {**logs, **extra})

    return _Metrics()


@dataclass
class GRPORun:
    """What :func:`build_trainer` made: TRL's trainer, the policy and the reward function."""

    trainer: Any
    policy: Any
    reward: RewardFn
    logger: MetricsLogger
    train_problems: list[Problem]
    eval_problems: list[Problem]


def build_trainer(
    config: GRPORunConfig,
    problems: Sequence[Problem] | None = None,
    reward_fn: RewardFn | None = None,
    policy: Any = None,
) -> GRPORun:
    """Everything a GRPO run needs; ``problems``/``reward_fn``/``policy`` replace the defaults."""
    # The problems first: a run whose data is not here stops before TRL and a model load.
    if problems is None:
        train, evals = load_problems(config)
    else:
        train, evals = list(problems), []
    from trl import GRPOTrainer

    from trainers.common import distributed
    from trainers.common.checkpoint import seed_everything
    from trainers.common.policy import create_policies

    # Join the launcher's group as MAGRPO and PPO do: it checks accelerate counts every process
    # and warns when accelerate's plain launcher started only one on a machine without GPUs.
    place = distributed.init_distributed()
    args = to_trl_args(config)
    check_enough_prompts(len(train), args.generation_batch_size // args.num_generations)
    if reward_fn is None:
        reward_fn = harness_reward(config.reward, [*train, *evals])
    if policy is None:
        # Seeded first: the adapter's random init is then the same on every run and every rank
        # (TRL seeds only once the model exists; DDP would hide the difference across ranks).
        seed_everything(config.seed)
        policy = create_policies(config.model, [ADAPTER], with_reference=config.grpo.beta > 0)[0]
    policy.activate()
    Path(config.output.dir).mkdir(parents=True, exist_ok=True)
    logger = MetricsLogger(
        config.output.dir,
        tensorboard=False,  # TRL reports to TensorBoard/W&B itself (report_to)
        wandb=False,
        config=to_dict(config),
        enabled=place.is_main,
    )
    trainer = GRPOTrainer(
        model=policy.model,
        reward_funcs=[reward_fn, *recipe_rewards(config)],
        args=args,
        train_dataset=make_dataset(train, config.grpo.system_prompt),
        processing_class=policy.tokenizer,
        callbacks=[
            metrics_callback(logger, reward_fn if isinstance(reward_fn, HarnessReward) else None)
        ],
    )
    return GRPORun(trainer, policy, reward_fn, logger, train, evals)


def recipe_rewards(config: GRPORunConfig) -> list[RewardFn]:
    """TRL's soft overlong punishment as a second reward (weighted by overlong_penalty).

    Dynamic sampling has no TRL option and no hook short of overriding its generation step,
    so it is not added here: TRL logs the share of zero-variance groups
    (``frac_reward_zero_std``), and the difficulty filter (``dataset.difficulty``) removes the
    prompts whose groups would all score alike before training starts.
    """
    g = config.grpo
    if not g.overlong_buffer:
        return []
    from trl.rewards import get_soft_overlong_punishment

    punish = get_soft_overlong_punishment(g.max_new_tokens, g.overlong_buffer)

    def soft_overlong_punishment(completion_ids: list[list[int]], **_: Any) -> list[float]:
        return list(punish(completion_ids))

    return [soft_overlong_punishment]


def check_enough_prompts(available: int, per_batch: int) -> None:
    """TRL draws whole batches of ``per_batch`` prompts (``prompts_per_step`` x processes x
    accumulation steps) and drops a short one: with fewer prompts it trains 0 steps silently."""
    if available < per_batch:
        raise ConfigError(
            f"dataset: {available} usable problem(s), but one generation batch takes {per_batch} "
            "(grpo.prompts_per_step x processes x grpo.gradient_accumulation_steps); widen "
            "dataset.train_split or lower grpo.prompts_per_step"
        )


def resume_path(config: GRPORunConfig) -> str | bool | None:
    """TRL's ``resume_from_checkpoint`` for ``output.resume_from`` (``latest``: the newest)."""
    resume = config.output.resume_from
    if resume is None:
        return None
    return True if resume == "latest" else resume


def train(config: GRPORunConfig, **overrides: Any) -> Mapping[str, Any]:
    """Run GRPO as configured; returns TRL's training metrics."""
    run = build_trainer(config, **overrides)
    try:
        result = run.trainer.train(resume_from_checkpoint=resume_path(config))
        if config.output.save_final_model:
            run.trainer.save_model(str(Path(config.output.dir) / "final"))
    finally:
        run.logger.close()
    return dict(result.metrics)


def run(config: GRPORunConfig) -> str:
    """``python -m trainers.grpo``: train; the summary line is TRL's metrics as JSON."""
    return json.dumps({"output_dir": config.output.dir, **train(config)}, default=str)
