"""The same samples give the same rows through evaluate(), the engine, the reward service and
the TRL and verl adapters, apart from timings: across suites, languages, inline problems and
reward presets."""

from __future__ import annotations

from typing import Any

import pytest

from harness.evaluate import evaluate
from harness.records import Sample
from harness.rewardapi import RewardEngine
from harness.rewardapi.items import check_items
from harness.rewardapi.trl import TRLReward
from harness.rewardapi.verl import compute_score_batch
from harness.service.client import RewardClient
from harness.service.rows import differences
from harness.service.rows import timing_free as comparable
from harness.service.server import ServeSettings, serve_in_thread


def python_items(suite: str) -> list[dict[str, Any]]:
    add, frac = "HumanEval/53", "HumanEval/2"
    return [
        {"completion": "    return x + y\n", "task_id": add, "suite": suite},
        {"completion": "    return x - y\n", "task_id": add, "suite": suite},
        {"completion": "    return number % 1.0\n", "task_id": frac, "suite": suite},
        {"completion": "    raise ValueError('no')\n", "task_id": frac, "suite": suite},
        {"completion": "    return (\n", "task_id": add, "suite": suite},
    ]


JS = [
    {"completion": "  return x + y;\n}\n", "task_id": "js/HumanEval/53", "suite": "humaneval-js"},
    {"completion": "  return x - y;\n}\n", "task_id": "js/HumanEval/53", "suite": "humaneval-js"},
    {
        "completion": "  throw new Error('no');\n}\n",
        "task_id": "js/HumanEval/53",
        "suite": "humaneval-js",
    },
]
MBPP = [
    {"completion": "def square(n):\n    return n * n\n", "task_id": "Mbpp/11", "suite": "mbpp"},
]
INLINE_PROBLEM = {
    "prompt": "def double(x):\n",
    "tests": "assert double(2) == 4\nassert double(-1) == -2\nassert double(0) == 0\n",
    "entry_point": "double",
    "reference": "def double(x):\n    return 2 * x\n",
}
INLINE = [
    {"completion": "    return 2 * x\n", "problem": INLINE_PROBLEM},
    {"completion": "    return x + 2\n", "problem": INLINE_PROBLEM},
]

SLOW = pytest.mark.slow
CASES = [
    pytest.param("humaneval", "binary", python_items("humaneval"), id="humaneval-binary"),
    pytest.param(
        "humaneval", "weighted", python_items("humaneval"), id="humaneval-weighted", marks=SLOW
    ),
    pytest.param(
        "humaneval",
        "code_levels_single",
        python_items("humaneval"),
        id="humaneval-code_levels",
        marks=SLOW,
    ),
    pytest.param("humaneval-js", "weighted", JS, id="js-weighted", marks=SLOW),
    pytest.param("mbpp", "binary", MBPP, id="mbpp-binary", marks=SLOW),
    pytest.param("inline", "weighted", INLINE, id="inline-weighted"),
]


def through_evaluate(engine: RewardEngine, items: list[dict[str, Any]], preset: str) -> list:
    problems = engine.problems.resolve(check_items(items))
    unique = list({id(p): p for p in problems}.values())
    samples = [
        Sample(p.task_id, item["completion"], str(i))
        for i, (item, p) in enumerate(zip(items, problems, strict=True))
    ]
    return evaluate(unique, samples, reward=preset, workers=0)


def trl_columns(items: list[dict[str, Any]]) -> dict[str, list[Any]]:
    if "problem" in items[0]:
        keys = ("tests", "entry_point", "reference")
        return {k: [item["problem"][k] for item in items] for k in keys}
    return {
        "task_id": [item["task_id"] for item in items],
        "suite": [item["suite"] for item in items],
    }


@pytest.mark.parametrize(("suite", "preset", "items"), CASES)
def test_every_way_in_gives_the_same_rows(
    suite: str, preset: str, items: list[dict[str, Any]]
) -> None:
    engine = RewardEngine(reward=preset, workers=0)
    direct = engine.score(items)
    evaluated = through_evaluate(engine, items, preset)
    with serve_in_thread(ServeSettings(reward=preset, workers=2)) as (url, _):
        with RewardClient(url) as client:
            served = client.score(items)
    prompts = [item.get("problem", {}).get("prompt", "") for item in items]
    trl = TRLReward(engine, suite=suite if suite != "inline" else "humaneval")
    trl_rewards = trl(prompts, [item["completion"] for item in items], **trl_columns(items))
    expected = [comparable(r) for r in direct]
    for got, want in zip(served, expected, strict=True):  # the paths that differ, if any
        assert not differences(comparable(got), want)
    assert [comparable(r) for r in served] == expected
    assert [comparable({**r, "reward": r["reward"]}) for r in evaluated] == expected
    assert [comparable(r) for r in trl.last_rows] == expected
    assert [
        comparable({**r, "reward": x}) for r, x in zip(trl.last_rows, trl_rewards, strict=True)
    ] == expected
    if suite != "inline":
        scores = compute_score_batch(
            [item["suite"] for item in items],
            [item["completion"] for item in items],
            [item["task_id"] for item in items],
            reward=preset,
            workers=0,
        )
        # verl's engine is its own, so its efficiency part is its own measurement: the scores
        # agree up to the efficiency weight (0.1 in weighted), the verdicts exactly
        slack = 0.1 + 1e-9 if preset == "weighted" else 0.0
        for score, row in zip(scores, direct, strict=True):
            assert score["passed"] == float(row["passed"])
            if row["reward"] is not None:
                assert abs(score["score"] - row["reward"]) <= slack
    assert len({r["status"] for r in direct}) > 1 or len(direct) == 1  # a mix of verdicts
