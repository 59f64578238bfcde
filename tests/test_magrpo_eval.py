"""Every turn evaluated: evaluation runs the training turns through the same transition and logs
per-turn reward, pass@k and expected return; training logs per-turn expected return and the
reference KL and its penalty. Hand-computed metrics, and a run's metrics.jsonl."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from harness.models import tiny_model
from harness.records import Problem
from suites import load_suite
from tests.test_magrpo_trainer import cases_passed
from trainers.common.config import load_config
from trainers.common.logger import flatten, read_metrics
from trainers.common.policy import wrap_agents
from trainers.magrpo.config import MAGRPOConfig
from trainers.magrpo.harness_io import eval_metrics, harness_feedback
from trainers.magrpo.rollout import Episode, Node
from trainers.magrpo.trainer import MAGRPOTrainer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _node(turn: int, reward: float | None, passed: bool, children: list[int] = ()) -> Node:  # type: ignore[assignment]
    row = {"passed": passed, "status": "passed" if passed else "failed"}
    return Node(0, (0,), turn, "", row=row, reward=reward, children=list(children))


def test_eval_metrics_per_turn_hand_computed() -> None:
    # Two eval paths of one problem, 2 turns, gamma 0.5. Path A passed at turn 1 and stopped
    # (threshold): its program stands at turn 2. Path B failed twice (0.0, then 0.5).
    episode = Episode(None)  # type: ignore[arg-type]
    episode.nodes = [_node(1, 1.0, True), _node(1, 0.0, False, [2]), _node(2, 0.5, False)]
    got = eval_metrics([episode], [1, 2], num_turns=2, gamma=0.5)
    assert got["turn_1"] == pytest.approx(
        # returns: A 1 + 0.5 * 1 (carried) = 1.5 ; B 0 + 0.5 * 0.5 = 0.25
        {"reward_mean": 0.5, "expected_return": 0.875, "pass@1": 0.5, "pass@2": 1.0}
    )
    assert got["turn_2"] == pytest.approx(
        {"reward_mean": 0.75, "expected_return": 0.75, "pass@1": 0.5, "pass@2": 1.0}
    )
    # the top level is the last turn's: the team's final answer
    assert (got["problems"], got["reward_mean"], got["pass@1"]) == (1, 0.75, 0.5)
    # one turn: as before (turn 1 at the top level)
    nodes = [_node(1, 1.0, True), _node(1, 0.0, False)]
    single = eval_metrics([Episode(None, nodes=nodes)], [1], 1)  # type: ignore[arg-type]
    assert single["turn_1"]["reward_mean"] == single["reward_mean"] == 0.5


def test_infrastructure_errors_stay_out_of_eval_metrics() -> None:
    episode = Episode(None)  # type: ignore[arg-type]
    episode.nodes = [_node(1, 1.0, True), _node(1, None, False)]
    episode.nodes[1].row = {"status": "error", "error_kind": "infra"}
    got = eval_metrics([episode], [1], num_turns=2)
    assert got["turn_2"] == pytest.approx(
        {"reward_mean": 1.0, "expected_return": 1.0, "pass@1": 1.0}
    )


def test_multi_turn_run_logs_every_turn(tmp_path: Path) -> None:
    beta = 0.05
    cfg = load_config(
        MAGRPOConfig,
        None,
        [
            f"output.dir={tmp_path}",
            "magrpo.num_turns=2",
            "external.mode=level_feedback",
            "magrpo.max_steps=1",
            "magrpo.num_generations=2",
            "magrpo.max_new_tokens=6",
            f"magrpo.beta={beta}",
            "magrpo.eval_interval=1",
            "magrpo.eval_num_samples=2",
            "magrpo.eval_k=[1,2]",
            "logging.progress_bar=false",
            "output.save_final_model=false",
        ],
    )
    model, tok = tiny_model(0)
    torch.manual_seed(cfg.seed)
    agents = wrap_agents(model, tok, ["helper", "main"], cfg.model, with_reference=True)
    problems = load_suite("humaneval", "test[:2]", None)
    seen: list[tuple[str, int]] = []
    transition = harness_feedback(cfg.external)

    def feedback(row: dict[str, Any], problem: Problem) -> str:
        seen.append((problem.task_id, len(row.get("cases") or [])))
        return transition(row, problem)

    trainer = MAGRPOTrainer(
        cfg,
        agents=agents,
        scorer=cases_passed,
        feedback=feedback,
        train_problems=problems[:1],
        eval_problems=problems[1:],
    )
    (record,) = trainer.train()
    assert read_metrics(tmp_path) == [record]
    flat = flatten(record)
    for turn in (1, 2):
        assert math.isfinite(flat[f"turn_{turn}/expected_return"])
        for key in ("reward_mean", "expected_return", "pass@1", "pass@2"):
            assert math.isfinite(flat[f"eval/turn_{turn}/{key}"]), key
    # gamma 1, no stopping: a first-turn node's return is its reward plus its children's mean
    assert record["turn_1"]["expected_return"] == pytest.approx(
        record["turn_1"]["reward_mean"] + record["turn_2"]["reward_mean"]
    )
    assert record["reference_kl_mean"] >= 0
    assert record["reference_kl_penalty_mean"] == pytest.approx(beta * record["reference_kl_mean"])
    for agent in ("helper", "main"):
        assert record[agent]["reference_kl_mean"] >= 0
    # evaluation went through the same transition: one feedback per eval path (2 samples)
    eval_calls = [task for task, _ in seen if task == problems[1].task_id]
    assert len(eval_calls) == 2
    assert record["eval"]["pass@1"] == record["eval"]["turn_2"]["pass@1"]
