"""codeeval serve in front of the Ray executor: the rows of the local engine, from Ray actors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.rewardapi import RewardEngine
from harness.service.client import RewardClient
from harness.service.rows import timing_free
from harness.service.server import ServeSettings, serve_in_thread

REPO = Path(__file__).resolve().parents[1]
ITEMS = [
    {"completion": "    return x + y\n", "task_id": "HumanEval/53"},
    {"completion": "    return x - y\n", "task_id": "HumanEval/53"},
    {"completion": "    return number % 1.0\n", "task_id": "HumanEval/2"},
    {"completion": "    while True:\n        pass\n", "task_id": "HumanEval/2"},
]


@pytest.mark.slow
def test_the_service_fronts_ray_actors_with_the_same_rows() -> None:
    ray = pytest.importorskip("ray")
    from harness.executors import close_all, executor_for

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 * 2**20,
        runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}},
    )
    try:
        with serve_in_thread(ServeSettings(executor="ray", workers=0)) as (url, state):
            with RewardClient(url) as client:
                served = client.score(ITEMS)
            pids = executor_for("ray").actor_pids()  # type: ignore[attr-defined]
        local = RewardEngine(workers=0).score(ITEMS)
    finally:
        close_all()
        ray.shutdown()
    assert [timing_free(r) for r in served] == [timing_free(r) for r in local]
    assert [r["status"] for r in served] == ["passed", "failed", "passed", "timeout"]
    assert pids  # the rows came from Ray actors
