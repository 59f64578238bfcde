"""The MAGRPO trainer: rollouts -> harness rewards -> returns/advantages -> per-agent updates.

One step collects ``rollout_buffer_size`` joint episodes (one prompt's rollout tree each),
then trains every agent on its completions in minibatches (one AdamW optimizer per agent).
Metrics go to ``<output.dir>/metrics.jsonl``: per turn (``turn_k``) the reward, pass rate and
expected return; the reference KL and its penalty when ``beta > 0``; per agent loss, grad norm,
clip fraction and advantages; ``dynamic`` (the share of zero-gradient groups, dynamic
sampling's refills: :mod:`trainers.magrpo.collect`); and ``eval`` (every turn, through the same
transition: ``eval/turn_k/...``). The recipe's options (docs/recipe.md) live in
:mod:`trainers.magrpo.recipe`, :mod:`trainers.magrpo.collect` and :mod:`trainers.magrpo.update`.
Checkpoints hold the agents' trained
parameters, optimizer states, RNG states and the data position, so a resumed run continues
exactly where it stopped.

Under ``accelerate launch``/``torchrun`` (``trainers.common.distributed``) every process holds
the agents, rolls out its share of each step's prompts (``rollout_buffer_size`` per process),
and averages gradients with the others before each optimizer step; rank 0 alone evaluates,
logs and saves, and every rank records its prompts and parameter digest in
``<output.dir>/ranks/rank-<r>.jsonl``.
"""

from __future__ import annotations

import math
import random
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import yaml

from harness.records import Problem
from trainers.common import distributed as dist
from trainers.common.checkpoint import (
    load_checkpoint,
    load_rank_rng,
    resolve_checkpoint,
    save_checkpoint,
    save_rank_rng,
    seed_everything,
)
from trainers.common.config import to_dict
from trainers.common.logger import run_logger
from trainers.common.policy import AgentPolicy, create_policies
from trainers.common.problems import eval_problems, train_problems
from trainers.common.rollout_engine import close_engine, engine_for_model
from trainers.common.sampling import token_logprobs
from trainers.magrpo.collect import collect, episode_targets_for, refill_order
from trainers.magrpo.config import MAGRPOConfig
from trainers.magrpo.harness_io import eval_metrics, harness_feedback, harness_scorer
from trainers.magrpo.loss import sequence_kl
from trainers.magrpo.metrics import mean, node_rows, reward_summary
from trainers.magrpo.roles import Roles
from trainers.magrpo.rollout import (
    Episode,
    FeedbackFn,
    RolloutSettings,
    Scorer,
    rollout,
)
from trainers.magrpo.targets import Target
from trainers.magrpo.update import update_agent

MICRO_BATCH = 8  # sequences per forward pass inside a minibatch (bounds activation memory)


class MAGRPOTrainer:
    """Multi-agent GRPO over harness rewards (see the package docstring for the pieces)."""

    def __init__(
        self,
        config: MAGRPOConfig,
        agents: Sequence[AgentPolicy] | None = None,
        scorer: Scorer | None = None,
        feedback: FeedbackFn | None = None,
        train_problems: Sequence[Problem] | None = None,
        eval_problems: Sequence[Problem] | None = None,
    ) -> None:
        self.config = config
        self.settings = config.magrpo
        seed_everything(config.seed)
        place = dist.init_distributed()  # one process without launcher variables: a no-op
        self.rank, self.world = place.rank, place.world_size
        self.roles = Roles.for_suite(
            config.dataset.suite, self.settings.num_agents, self.settings.split_strategy
        )
        # The problems first: a run whose data is not here stops before a model loads.
        self.train_problems = (
            list(train_problems) if train_problems is not None else self._load_train()
        )
        self.agents = list(agents) if agents is not None else self._create_agents()
        self.engine = engine_for_model(config.model, self.agents, config.seed)
        self.optimizers = {
            a.name: torch.optim.AdamW(
                a.parameters(),
                lr=self.settings.learning_rate,
                weight_decay=self.settings.weight_decay,
            )
            for a in self.agents
        }
        self.scorer = scorer or harness_scorer(
            config.reward, config.output, self.settings.num_agents
        )
        if feedback is None and self.settings.num_turns > 1:
            feedback = harness_feedback(config.external)
        self.feedback = feedback
        self.eval_problems = list(eval_problems) if eval_problems is not None else None
        self.step = 0
        self.epoch = 0
        self.position = 0
        self.output = Path(config.output.dir)
        self.logger = run_logger(config, self.output, enabled=self.rank == 0)
        if self.world > 1:
            # One start for every rank (as DDP broadcasts), then a random stream per rank so
            # the ranks sample different completions (accelerate's seed + process index).
            dist.broadcast_parameters(p for a in self.agents for p in a.parameters())
            seed_everything(config.seed + self.rank)
        if config.output.resume_from:
            self.resume(resolve_checkpoint(config.output.resume_from, self.output))

    # ------------------------------------------------------------ setup

    def _create_agents(self) -> list[AgentPolicy]:
        return create_policies(
            self.config.model, self.roles.names, with_reference=self.settings.beta > 0
        )

    def _load_train(self) -> list[Problem]:
        # every rank knows them all; batches() deals each its share
        return train_problems(self.config.dataset, self.config.model.name, self.config.seed)

    def _eval_set(self) -> list[Problem]:
        if self.eval_problems is None:
            self.eval_problems = eval_problems(self.config.dataset)
        limit = self.settings.eval_max_problems
        return self.eval_problems[:limit] if limit else self.eval_problems

    def rollout_settings(self, evaluation: bool = False) -> RolloutSettings:
        s = self.settings
        return RolloutSettings(
            num_generations=s.eval_num_samples if evaluation else s.num_generations,
            num_turns=s.num_turns,
            joint_mode="aligned" if evaluation else s.joint_mode,
            max_new_tokens=s.max_new_tokens,
            temperature=s.eval_temperature if evaluation else s.temperature,
            top_p=1.0 if evaluation else s.top_p,
            max_prompt_tokens=s.max_prompt_tokens,
            early_termination_threshold=s.early_termination_threshold,
            reward_shift=self.config.reward.shift,
            reward_scale=self.config.reward.scale,
            followup_generations=1 if evaluation else None,  # one path per first-turn sample
        )

    # ------------------------------------------------------------ data order

    def steps_per_epoch(self) -> int:
        per_step = self.settings.rollout_buffer_size * self.world  # prompts over all ranks
        return math.ceil(len(self.train_problems) / per_step)

    def total_steps(self) -> int:
        total = self.steps_per_epoch() * self.settings.num_epochs
        return min(total, self.settings.max_steps) if self.settings.max_steps else total

    def _order(self, epoch: int) -> list[int]:
        order = list(range(len(self.train_problems)))
        if self.config.dataset.shuffles():  # a curriculum's order is kept
            random.Random(self.config.seed * 1000003 + epoch).shuffle(order)
        return order

    def batches(self) -> Iterator[list[Problem]]:
        """This rank's remaining buffers of problems, from the current epoch and position on.

        Each step takes ``rollout_buffer_size * processes`` prompts of the epoch's order (the
        same on every rank) and deals them round-robin, so the position is global: a resumed
        run, with the same number of processes, gives every rank the shards it would have had.
        """
        size = self.settings.rollout_buffer_size * self.world
        while self.epoch < self.settings.num_epochs:
            order = self._order(self.epoch)
            while self.position < len(order):
                chunk = order[self.position : self.position + size]
                self.position += len(chunk)
                mine = dist.rank_share(chunk, self.rank, self.world, order)
                yield [self.train_problems[i] for i in mine]
            self.epoch += 1
            self.position = 0

    # ------------------------------------------------------------ one step

    def _attach_kl(self, episodes: list[Episode]) -> list[float]:
        """Each completion's k3 KL to the reference (only when beta > 0)."""
        kls: list[float] = []
        for a, agent in enumerate(self.agents):
            comps = [c for e in episodes for g in e.groups for c in g.completions[a]]
            agent.activate()
            pad = agent.tokenizer.pad_token_id or 0
            for start in range(0, len(comps), MICRO_BATCH):
                chunk = comps[start : start + MICRO_BATCH]
                prompts = [c.prompt_ids for c in chunk]
                outs = [c.completion_ids for c in chunk]
                with torch.no_grad():
                    logp, mask = token_logprobs(agent.model, prompts, outs, pad)
                    with agent.reference() as ref:
                        ref_logp, _ = token_logprobs(ref, prompts, outs, pad)
                for c, kl in zip(chunk, sequence_kl(logp, ref_logp, mask).tolist(), strict=True):
                    c.kl = kl
                    kls.append(kl)
        return kls

    def _update_agent(self, a: int, targets: list[Target]) -> dict[str, float]:
        """Updates of agent ``a`` on its targets (see :mod:`trainers.magrpo.update`)."""
        agent = self.agents[a]
        return update_agent(
            agent,
            self.optimizers[agent.name],
            targets,
            self.settings,
            self.world,
            MICRO_BATCH,
            self._sync_grads,
        )

    def _targets(self, episode: Episode) -> list[Target]:
        return episode_targets_for(episode, self.settings, len(self.agents), mask=False)

    def _refill(self, count: int, round_: int) -> list[Problem]:
        """Fresh training prompts for dynamic sampling (seeded by step, round and rank)."""
        seed = ((self.config.seed * 1000003 + self.step) * 1009 + round_) * 131 + self.rank
        picks = refill_order(count, len(self.train_problems), [], seed)
        return [self.train_problems[i] for i in picks]

    def _sync_grads(self, agent: AgentPolicy) -> None:
        """Average gradients over processes (accelerate/torchrun); a no-op on one process."""
        dist.all_reduce_gradients(agent.parameters())

    def train_step(self, problems: list[Problem]) -> dict[str, Any]:
        """Roll out, score, and update every agent once on ``problems``; returns metrics."""
        started = time.perf_counter()
        s = self.settings
        kls: list[float] = []

        def sample(batch: list[Problem], tag: str) -> list[Episode]:
            episodes = rollout(
                batch,
                self.agents,
                self.roles,
                self.scorer,
                self.feedback,
                self.rollout_settings(),
                tag=tag,
                engine=self.engine,
            )
            kls.extend(self._attach_kl(episodes) if s.beta > 0 else [])
            return episodes

        collected = collect(problems, sample, self._targets, s, self._refill, f"train{self.step}")
        episodes, targets = collected.episodes, collected.targets
        rollout_s = time.perf_counter() - started
        metrics: dict[str, Any] = {"epoch": self.epoch, "dynamic": collected.metrics}
        metrics.update(self._reward_metrics(episodes))
        if s.beta > 0:  # the reference model exists only when the KL is in the reward
            metrics["reference_kl_mean"] = mean(kls)
            metrics["reference_kl_penalty_mean"] = s.beta * mean(kls)
        for a, agent in enumerate(self.agents):
            mine = [t for t in targets if t.agent == a]
            # Several processes: every rank joins the update, even with no targets of its own.
            update = (
                self._update_agent(a, mine)
                if mine or self.world > 1
                else {"loss": 0.0, "grad_norm": 0.0}
            )
            comps = [c for e in episodes for g in e.groups for c in g.completions[a]]
            metrics[agent.name] = {
                **update,
                "value_mean": mean([t.value for t in mine]),
                "advantage_abs_mean": mean([abs(t.advantage) for t in mine]),
                "completion_tokens_mean": mean([len(c.completion_ids) for c in comps]),
            }
            if s.beta > 0:
                metrics[agent.name]["reference_kl_mean"] = mean([c.kl for c in comps])
        if self.world > 1:  # rank 0 logs the whole step: every rank's nodes and agent numbers
            rows = [
                r for part in dist.gather(node_rows(episodes, s.gamma, s.num_turns)) for r in part
            ]
            metrics.update(reward_summary(rows, s.num_turns))
            for agent in self.agents:
                metrics[agent.name] = dist.mean_numbers(dist.gather(metrics[agent.name]))
        metrics["loss"] = mean([metrics[a.name]["loss"] for a in self.agents])
        synced = time.perf_counter()
        self.engine.sync(self.agents)  # the next rollouts sample from the updated adapters
        metrics["sync_s"] = time.perf_counter() - synced
        metrics["rollout_s"] = rollout_s
        metrics["step_s"] = time.perf_counter() - started
        return metrics

    def _reward_metrics(self, episodes: list[Episode]) -> dict[str, Any]:
        s = self.settings
        return reward_summary(node_rows(episodes, s.gamma, s.num_turns), s.num_turns)

    # ------------------------------------------------------------ evaluation

    def evaluate(self) -> dict[str, Any]:
        """Per-turn reward, pass@k and expected return on the eval split: every turn, through
        the training transition (feedback or expert edits), one path per first-turn sample."""
        problems = self._eval_set()
        if not problems:
            return {}
        episodes = rollout(
            problems,
            self.agents,
            self.roles,
            self.scorer,
            self.feedback,
            self.rollout_settings(evaluation=True),
            tag=f"eval{self.step}",
            engine=self.engine,
        )
        return eval_metrics(
            episodes, self.settings.eval_k, self.settings.num_turns, self.settings.gamma
        )

    # ------------------------------------------------------------ checkpoints

    def trainer_state(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "position": self.position, "step": self.step}

    def save(self) -> Path | None:
        """Rank 0 writes the checkpoint (parameters are the same on every rank); the other
        ranks add their RNG states to it first, so ``latest`` only ever names a whole one."""
        if self.world > 1:
            if self.rank:
                save_rank_rng(self.output / f"checkpoint-{self.step}", self.rank)
            dist.barrier()
        path = None
        if self.rank == 0:
            params = {a.name: dict(a.named_trainable()) for a in self.agents}
            path = save_checkpoint(
                self.output,
                self.step,
                params,
                self.optimizers,
                self.trainer_state(),
                to_dict(self.config),
            )
        dist.barrier()
        return path

    def resume(self, path: str | Path) -> None:
        params = {a.name: dict(a.named_trainable()) for a in self.agents}
        state = load_checkpoint(path, params, self.optimizers)  # rank 0's RNG states
        if self.rank and not load_rank_rng(path, self.rank):
            warnings.warn(
                f"{path}: no RNG states for rank {self.rank} (saved with fewer processes?); "
                "seeding it afresh",
                stacklevel=2,
            )
            seed_everything(self.config.seed + self.rank + 7919 * state["step"])
        self.step = state["trainer_state"]["step"]
        self.epoch = state["trainer_state"]["epoch"]
        self.position = state["trainer_state"]["position"]
        self.engine.sync(self.agents)  # resumed adapters, not the fresh ones, sample next

    def save_final(self) -> None:
        if self.rank != 0:
            return
        folder = self.output / "final"
        saved: set[int] = set()
        for agent in self.agents:
            if id(agent.model) in saved:
                continue  # one PeftModel holds every agent's adapter
            saved.add(id(agent.model))
            target = folder if agent.adapter and len(saved) == 1 else folder / agent.name
            agent.model.save_pretrained(str(target))
            agent.tokenizer.save_pretrained(str(target))

    # ------------------------------------------------------------ the loop

    def _record_rank(self, problems: list[Problem]) -> dict[str, Any]:
        named = [(f"{a.name}.{n}", p) for a in self.agents for n, p in a.named_trainable()]
        place = dist.Distributed(self.rank, self.world)
        return dist.record_step(self.output, place, self.step, [p.task_id for p in problems], named)

    def train(self) -> list[dict[str, Any]]:
        """Run until the epochs or ``max_steps`` are done; returns the logged records."""
        from tqdm.auto import tqdm

        total = self.total_steps()
        records = []
        (self.output).mkdir(parents=True, exist_ok=True)
        if self.rank == 0:
            (self.output / "config.yaml").write_text(
                yaml.safe_dump(to_dict(self.config), sort_keys=False)
            )
        bar = tqdm(
            total=total,
            initial=self.step,
            desc="magrpo",
            disable=not self.config.logging.progress_bar or self.rank != 0,
        )
        interval = self.settings.eval_interval
        batches = self.batches()
        while self.step < total:
            problems = next(batches, None)  # the position advances only when a batch is taken
            if problems is None:
                break
            metrics = self.train_step(problems)
            self.step += 1
            if self.world > 1:
                metrics["distributed"] = self._record_rank(problems)
            if interval and (self.step % interval == 0 or self.step == total) and self.rank == 0:
                metrics["eval"] = self.evaluate()
            records.append(self.logger.log(self.step, metrics))
            bar.update(1)
            bar.set_postfix(reward=f"{metrics['reward_mean']:.3f}", loss=f"{metrics['loss']:.3f}")
            every = self.config.output.save_interval
            if every and self.step % every == 0:
                self.save()
        bar.close()
        self.save()
        if self.config.output.save_final_model:
            self.save_final()
        self.logger.close()
        close_engine(self.engine)
        return records


def run(config: MAGRPOConfig) -> str:
    """``python -m trainers.magrpo``: train; the summary line is the last step's reward."""
    records = MAGRPOTrainer(config).train()
    if not records:
        return ""
    last = records[-1]
    return f"done: {last['step']} steps, reward_mean={last['reward_mean']:.4f}"
