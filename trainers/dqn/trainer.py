"""The value-based trainer: offline token-level Q-learning on a frozen policy.

1. Data: episodes from a results.jsonl, the run history, or a collection run (the policy
   samples the training problems and the harness scores them; the rows go to
   ``<output.dir>/data/results.jsonl``, so the run can be repeated offline from that file).
2. Features: one forward pass of the frozen policy over every prompt + completion gives the
   hidden state before each completion token; the policy is never trained, so they are
   computed once.
3. Updates: minibatches of sequences; twin Q heads regress on double-Q targets from the slowly
   updated target heads, with the conservative penalty (``trainers.dqn.core``).
4. Decoding: the policy's logits shifted by ``beta`` times the target heads' advantages,
   scored on the eval split by the same harness (reward, pass@k).

Metrics go to ``<output.dir>/metrics.jsonl`` (``codeeval report`` draws them).
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import torch
import yaml
from torch import nn

from harness.history import History
from harness.passk import mean_pass_at_k, reportable_ks
from harness.records import Problem
from trainers.common import problems as loader
from trainers.common.checkpoint import save_checkpoint, seed_everything
from trainers.common.config import to_dict
from trainers.common.logger import run_logger
from trainers.common.policy import resolve_device
from trainers.common.reward import HarnessReward, harness_failed, harness_reward
from trainers.common.sampling import encode_prompts, render_prompt, stop_ids
from trainers.dqn import core
from trainers.dqn.config import DQNConfig
from trainers.dqn.data import DataError, Episode, from_history, from_results
from trainers.dqn.decode import decode
from trainers.dqn.features import Features, featurize


class DQNTrainer:
    """Offline Q-learning from harness rewards, and decoding with the learned advantages."""

    def __init__(
        self,
        config: DQNConfig,
        model: nn.Module | None = None,
        tokenizer: Any = None,
        train_problems: Sequence[Problem] | None = None,
        eval_problems: Sequence[Problem] | None = None,
        reward: HarnessReward | None = None,
    ) -> None:
        self.config = config
        self.settings = s = config.dqn
        seed_everything(config.seed)
        # The problems first: a run whose data is not here stops before a model loads.
        d = config.dataset
        self.train_problems = list(
            train_problems
            if train_problems is not None
            else loader.train_problems(d, config.model.name, config.seed)
        )
        self.eval_problems = list(
            eval_problems if eval_problems is not None else loader.eval_problems(d)
        )
        if not self.train_problems:
            raise DataError(f"dataset.train_split={d.train_split!r} gave no usable problems")
        if model is None:
            from harness.models import load_model

            device = resolve_device(config.model.device)
            model, tokenizer = load_model(
                config.model.name, dtype=config.model.dtype, device=str(device)
            )
        self.model, self.tokenizer = model, tokenizer
        self.model.eval()
        for param in self.model.parameters():
            param.requires_grad_(False)  # the policy is the data's policy: never trained
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.stops = stop_ids(tokenizer, model)
        output: Any = cast(Any, model).get_output_embeddings()
        embedding = output.weight
        self.q = core.TwinQ(embedding, s.num_heads, s.head_inner).to(embedding.device)
        self.target = copy.deepcopy(self.q)
        for param in self.target.parameters():
            param.requires_grad_(False)
        self.optimizer = torch.optim.AdamW(
            self.q.parameters(), lr=s.learning_rate, weight_decay=s.weight_decay
        )
        self.reward = reward or harness_reward(
            config.reward, [*self.train_problems, *self.eval_problems], num_agents=1
        )
        self.output = Path(config.output.dir)
        self.logger = run_logger(config, self.output)
        self.step = 0
        self.episodes: list[Episode] = []
        self.skipped: dict[str, int] = {}
        self.features: Features | None = None

    # ------------------------------------------------------------ prompts and decoding

    def prompt_ids(self, problems: Sequence[Problem]) -> list[list[int]]:
        rendered = [render_prompt(self.tokenizer, loader.prompt_text(p)) for p in problems]
        return encode_prompts(self.tokenizer, rendered, self.settings.max_prompt_tokens)

    def q_values(self, hidden: torch.Tensor) -> torch.Tensor:
        """The decoding Q: the smaller of the target twins (pessimistic, and slow-moving)."""
        return self.target(hidden.float()).amin(dim=0)

    def sample(
        self,
        problems: Sequence[Problem],
        num_samples: int,
        beta: float,
        temperature: float,
        seed: int,
    ) -> tuple[list[str], list[str], list[int]]:
        """Decoded texts with their task ids and token counts, problem by problem."""
        ids = decode(
            self.model,
            self.q_values,
            self.prompt_ids(problems),
            num_samples,
            self.settings.max_new_tokens,
            beta,
            temperature,
            self.stops,
            self.pad,
            seed,
        )
        tasks, texts, lengths = [], [], []
        for problem, group in zip(problems, ids, strict=True):
            for tokens in group:
                tasks.append(problem.task_id)
                texts.append(self.tokenizer.decode(tokens, skip_special_tokens=True))
                lengths.append(len(tokens))
        return tasks, texts, lengths

    def score(
        self,
        problems: Sequence[Problem],
        num_samples: int,
        beta: float,
        temperature: float,
        seed: int,
    ) -> list[dict[str, Any]]:
        """Decode and score with the harness: one row per sample (reward None where the
        harness itself failed)."""
        tasks, texts, lengths = self.sample(problems, num_samples, beta, temperature, seed)
        rewards = self.reward.score(tasks, texts)
        scored = list(self.reward.last_rows)  # evaluate() keeps the order of the samples
        if len(scored) != len(texts):
            raise RuntimeError(f"the harness gave {len(scored)} rows for {len(texts)} samples")
        rows = []
        for row, text, n, value in zip(scored, texts, lengths, rewards, strict=True):
            rows.append({**row, "raw": text, "reward": value, "tokens": n})
        return rows

    # ------------------------------------------------------------ data

    def collect(self) -> Path:
        """Sample the training problems with the policy, score them, write the rows."""
        s = self.settings
        rows = self.score(
            self.train_problems, s.collect_samples, 0.0, s.collect_temperature, self.config.seed
        )
        path = self.output / "data" / "results.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = [r for r in rows if r.get("reward") is not None]  # infrastructure errors: out
        path.write_text("".join(json.dumps(r, default=str) + "\n" for r in kept))
        return path

    def load_data(self) -> list[Episode]:
        s = self.settings
        problems = {p.task_id: p for p in self.train_problems}
        if s.data == "collect":
            episodes, skipped = from_results(self.collect(), problems)
        elif s.data.startswith("history"):
            run = int(s.data.split(":", 1)[1]) if ":" in s.data else None
            episodes, skipped = from_history(History(), problems, run)
        else:
            episodes, skipped = from_results(s.data, problems)
        if not episodes:
            raise DataError(
                f"dqn.data={s.data!r}: no episode of the training problems "
                f"({skipped}); check dataset.suite and dataset.train_split"
            )
        self.episodes, self.skipped = episodes, skipped
        return episodes

    def featurize(self, episodes: Sequence[Episode]) -> Features:
        by_id = {p.task_id: p for p in self.train_problems}
        prompts = self.prompt_ids([by_id[e.task_id] for e in episodes])
        comps = [
            self.tokenizer(e.completion, add_special_tokens=False)["input_ids"][
                : self.settings.max_completion_tokens
            ]
            or [self.pad]  # an empty completion still took one action (it ended at once)
            for e in episodes
        ]
        hidden = featurize(self.model, prompts, comps, self.pad)
        actions = [torch.tensor(c, dtype=torch.long) for c in comps]
        rewards = torch.tensor([e.reward for e in episodes], dtype=torch.float32)
        return Features(hidden, actions, rewards)

    # ------------------------------------------------------------ updates

    def update(self, index: Sequence[int]) -> dict[str, float]:
        """One optimizer step of the online heads on the sequences ``index``."""
        assert self.features is not None
        s = self.settings
        device = next(self.q.parameters()).device
        hidden, actions, mask, rewards = (t.to(device) for t in self.features.batch(index))
        q = self.q(hidden)  # (H, B, T, V)
        with torch.no_grad():
            target_q = self.target(hidden)
        y = core.double_q_targets(rewards, mask, q.detach(), target_q, s.gamma)
        q_taken = core.taken(q, actions)
        td = core.td_loss(q_taken, y, mask)
        cql = core.cql_penalty(q, actions, mask)
        loss = td + s.cql_alpha * cql
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad = torch.nn.utils.clip_grad_norm_(
            self.q.parameters(), s.max_grad_norm if s.max_grad_norm > 0 else math.inf
        )
        self.optimizer.step()
        if (self.step + 1) % s.target_update_interval == 0:
            core.polyak_update(self.target.parameters(), self.q.parameters(), s.tau)
        return {
            "loss": loss.item(),
            "td_loss": td.item(),
            "cql_loss": cql.item(),
            "q_data_mean": core.masked_mean(q_taken.detach(), mask).item(),
            "q_max_mean": core.masked_mean(q.detach().amax(dim=-1), mask).item(),
            "target_mean": core.masked_mean(y, mask).item(),
            "grad_norm": float(grad),
            "reward_mean": rewards.mean().item(),
            "completion_length": mask.sum(dim=1).mean().item(),
        }

    def batches(self) -> list[list[int]]:
        """Minibatch indices for every step: seeded permutations of the episodes, epoch after
        epoch."""
        n, size = len(self.episodes), self.settings.batch_size
        rng = random.Random(self.config.seed)
        order: list[int] = []
        out = []
        for _ in range(self.settings.max_steps):
            if len(order) < min(size, n):
                fresh = list(range(n))
                rng.shuffle(fresh)
                order += fresh
            out.append(order[: min(size, n)])
            del order[: min(size, n)]
        return out

    # ------------------------------------------------------------ evaluation

    def evaluate(self, beta: float | None = None) -> dict[str, Any]:
        """Decode the eval problems (with ``beta``, the config's by default) and score them."""
        s = self.settings
        if not self.eval_problems:
            return {}
        rows = self.score(
            self.eval_problems,
            s.eval_num_samples,
            s.beta if beta is None else beta,
            s.eval_temperature,
            self.config.seed + 1,
        )
        scored = [r for r in rows if r.get("reward") is not None]
        counts: dict[str, list[int]] = {}
        for row in rows:
            if not harness_failed(row):
                c = counts.setdefault(str(row["task_id"]), [0, 0])
                c[0] += 1
                c[1] += 1 if row.get("passed") else 0
        pairs = [(n, c) for n, c in counts.values()]
        out: dict[str, Any] = {
            "problems": len(self.eval_problems),
            "reward_mean": _mean([float(r["reward"]) for r in scored]),
            "completion_length": _mean([float(r["tokens"]) for r in rows]),
            "infra_errors": len(rows) - len(scored),
        }
        for k in reportable_ks(s.eval_k, pairs):
            out[f"pass@{k}"] = mean_pass_at_k(pairs, k)
        return out

    # ------------------------------------------------------------ the loop

    def save(self) -> Path:
        params = {
            "q": dict(self.q.named_parameters()),
            "target": dict(self.target.named_parameters()),
        }
        return save_checkpoint(
            self.output,
            self.step,
            params,
            {"q": self.optimizer},
            {"step": self.step, "episodes": len(self.episodes)},
            to_dict(self.config),
        )

    def train(self) -> list[dict[str, Any]]:
        """Load (or collect) the data, featurize it, run ``max_steps`` updates; returns the
        logged records."""
        from tqdm.auto import tqdm

        s = self.settings
        self.output.mkdir(parents=True, exist_ok=True)
        (self.output / "config.yaml").write_text(
            yaml.safe_dump(to_dict(self.config), sort_keys=False)
        )
        started = time.perf_counter()
        self.load_data()
        data_s = time.perf_counter() - started
        self.features = self.featurize(self.episodes)
        features_s = time.perf_counter() - started - data_s
        records = []
        bar = tqdm(total=s.max_steps, desc="dqn", disable=not self.config.logging.progress_bar)
        for index in self.batches():
            began = time.perf_counter()
            metrics: dict[str, Any] = self.update(index)
            self.step += 1
            metrics["step_s"] = time.perf_counter() - began
            if self.step == 1:
                metrics.update(
                    {
                        "episodes": len(self.episodes),
                        "skipped_rows": sum(self.skipped.values()),
                        "data_s": data_s,
                        "features_s": features_s,
                    }
                )
            every = s.eval_interval
            if every and (self.step % every == 0 or self.step == s.max_steps):
                metrics["eval"] = self.evaluate()
            records.append(self.logger.log(self.step, metrics))
            bar.update(1)
            bar.set_postfix(loss=f"{metrics['loss']:.4f}")
        bar.close()
        if self.config.output.save_interval or self.config.output.save_final_model:
            self.save()
        self.logger.close()
        return records


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def run(config: DQNConfig) -> str:
    """``python -m trainers.dqn``: train; the summary line is the last step's losses."""
    last = DQNTrainer(config).train()[-1]
    return (
        f"done: {last['step']} steps, loss={last['loss']:.4f} (td {last['td_loss']:.4f}, "
        f"cql {last['cql_loss']:.4f}); metrics in {config.output.dir}/metrics.jsonl"
    )
