"""The verl adapter's own contract: fed the shapes verl's managers build, called as they call.

These tests need no verl: numpy object arrays of ``DataProto.non_tensor_batch``,
``reward_model`` dicts, ``extra_info`` with ``num_turns`` and ``rollout_reward_scores``, the
keyword calls (with ``reward_kwargs`` merged), and each score into a float reward tensor.
verl's own installed reward loop, managers and config drive the adapter in
test_peer_verl.py.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from harness.rewardapi.neutral import DEFAULT_NEUTRAL
from harness.rewardapi.verl import compute_score, compute_score_batch, engine_for, neutral_scores

torch = pytest.importorskip("torch")

ADD = {
    "prompt": "def add(a, b):\n",
    "tests": "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n",
    "entry_point": "add",
    "reference": "def add(a, b):\n    return a + b\n",
}
BROKEN = {**ADD, "reference": "def add(a, b):\n    return a * b\n"}  # fails its own tests
REWARD_KWARGS = {"reward": "binary", "workers": 2}  # custom_reward_function.reward_kwargs


def non_tensor_batch(rows: list[dict]) -> dict[str, np.ndarray]:
    """``DataProto.non_tensor_batch`` for parquet rows: one numpy object array per field."""
    return {key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]}


def parquet_rows() -> list[dict]:
    return [
        {
            "data_source": "humaneval",
            "reward_model": {"style": "rule", "ground_truth": "HumanEval/53"},
            "extra_info": {"index": 0},
        },
        {
            "data_source": "humaneval",
            "reward_model": {"style": "rule", "ground_truth": "HumanEval/53"},
            "extra_info": {"index": 0},
        },
        {
            "data_source": "codeeval",
            "reward_model": {"style": "rule", "ground_truth": json.dumps(ADD)},
            "extra_info": {"index": 1},
        },
        {
            "data_source": "codeeval",
            "reward_model": {"style": "rule", "ground_truth": BROKEN},
            "extra_info": {"index": 2},
        },
    ]


RESPONSES = [
    "    return x + y\n",
    "    return x * y\n",
    "```python\ndef add(a, b):\n    return a + b\n```",
    "def add(a, b):\n    return a + b\n",
]


def into_reward_tensor(scores: list[dict], lengths: list[int]):
    """As verl's managers do: each score on its response's last token, the rest as extra info."""
    reward_tensor = torch.zeros(len(scores), max(lengths), dtype=torch.float32)
    extra = defaultdict(list)
    for i, score in enumerate(scores):
        for key, value in score.items():
            extra[key].append(value)
        reward_tensor[i, lengths[i] - 1] = score["score"]
    return reward_tensor, {key: np.array(values) for key, values in extra.items()}


def test_compute_score_as_the_naive_manager_calls_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.rewardapi.verl as adapter

    monkeypatch.setattr(adapter, "_scorers", {})  # the running means of a fresh process
    batch = non_tensor_batch(parquet_rows())
    scores = []
    for i, response in enumerate(RESPONSES):
        extra_info = dict(batch["extra_info"][i])
        extra_info["num_turns"] = None
        extra_info["rollout_reward_scores"] = {}
        scores.append(
            compute_score(
                data_source=batch["data_source"][i],
                solution_str=response,
                ground_truth=batch["reward_model"][i]["ground_truth"],
                extra_info=extra_info,
                **REWARD_KWARGS,
            )
        )
    tensor, extra = into_reward_tensor(scores, [3, 3, 5, 4])
    assert tensor.sum(dim=1).tolist()[:3] == [1.0, 0.0, 1.0]
    # the unjudgeable problem: the running mean of the judged samples, a neutral score
    assert scores[3]["score"] == pytest.approx(2 / 3)
    assert extra["passed"].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert extra["unscored"].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_compute_score_batch_as_the_batch_manager_calls_it() -> None:
    rows = parquet_rows()
    batch = non_tensor_batch(rows)
    ground_truths = [item.get("ground_truth", None) for item in batch["reward_model"]]
    extras = batch["extra_info"]
    for i in range(len(rows)):
        extras[i]["rollout_reward_scores"] = {}
    scores = compute_score_batch(
        data_sources=batch["data_source"],
        solution_strs=RESPONSES,
        ground_truths=ground_truths,
        extra_infos=extras,
        **REWARD_KWARGS,
    )
    tensor, extra = into_reward_tensor(scores, [3, 3, 5, 4])
    # the unjudgeable problem gets the batch's mean judged score (no sample of it was judged)
    assert [s["score"] for s in scores] == [1.0, 0.0, 1.0, pytest.approx(2 / 3)]
    assert extra["unscored"].tolist() == [0.0, 0.0, 0.0, 1.0]
    engine_rows = engine_for("binary", 2).score(
        [
            {"completion": RESPONSES[0], "task_id": "HumanEval/53"},
            {"completion": RESPONSES[1], "task_id": "HumanEval/53"},
            {"completion": RESPONSES[2], "problem": ADD},
        ]
    )
    assert [s["score"] for s in scores[:3]] == [r["reward"] for r in engine_rows]


def test_an_unjudged_sample_gets_its_groups_mean_never_a_fixed_zero() -> None:
    def row(task: str, reward):
        return {"suite": "s", "task_id": task, "reward": reward}

    rows = [row("a", 1.0), row("a", 0.0), row("a", None), row("b", None), row("c", 1.0)]
    assert neutral_scores(rows) == [0.5, 0.5, 0.5, pytest.approx(2 / 3), 1.0]
    # nothing judged anywhere yet: the documented default, never a fixed 0
    assert neutral_scores([row("a", None)]) == [DEFAULT_NEUTRAL] != [0.0]


@pytest.mark.parametrize(
    ("ground_truth", "message"),
    [(None, "missing"), ("  ", "missing"), ("{not json", "not valid JSON")],
)
def test_a_bad_ground_truth_masks_its_row_and_logs_why(ground_truth, message: str, caplog) -> None:
    caplog.set_level("DEBUG", logger="harness.rewardapi.verl")
    scores = compute_score_batch(
        ["humaneval", "humaneval"],
        ["    return x + y\n", "x"],
        ["HumanEval/53", ground_truth],
        [{}, {}],
        **REWARD_KWARGS,
    )
    assert scores[0] == {"score": 1.0, "passed": 1.0, "unscored": 0.0}
    assert scores[1]["unscored"] == 1.0 and scores[1]["score"] == 1.0  # the batch's mean
    assert any(message in r.getMessage() for r in caplog.records)


def test_the_reward_loops_concurrent_one_sample_calls() -> None:
    """verl's reward loop (verl/experimental/reward_loop) runs the one-sample form in executor
    threads, many at once, with plain dicts and lists; each call gets its own sample's score."""
    from concurrent.futures import ThreadPoolExecutor

    rows = parquet_rows()[:3] * 2
    responses = RESPONSES[:3] * 2

    def one(i: int) -> dict:
        extra_info = {**rows[i]["extra_info"], "num_turns": None, "rollout_reward_scores": {}}
        return compute_score(
            data_source=rows[i]["data_source"],
            solution_str=responses[i],
            ground_truth=rows[i]["reward_model"]["ground_truth"],
            extra_info=extra_info,
            **REWARD_KWARGS,
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        scores = list(pool.map(one, range(len(rows))))
    assert [s["score"] for s in scores] == [1.0, 0.0, 1.0] * 2
