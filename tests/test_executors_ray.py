"""harness.executors: the batch split by problem, the local executor, and Ray actors scoring the
same rows as the local path (a real local Ray instance with 2 CPUs, the real sandbox)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.evaluate import evaluate
from harness.executors import Executor, executor_for
from harness.executors.local import LocalExecutor
from harness.executors.shards import failed_rows, merge_rows, split_by_problem
from harness.records import Sample
from harness.sandbox.api import RESOURCE_KEYS
from suites import load_suite
from trainers.common.config import InvalidSetting
from trainers.common.sections import RewardSettings

REPO = Path(__file__).resolve().parents[1]
TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/44", "HumanEval/53")
PRESET = "code_levels_single"  # syntax, structure, tests: no measured times in the reward
TIMINGS = {"duration_s", "max_rss_kb", *RESOURCE_KEYS}  # measured: differ per run


def without_timings(value):
    """A row with every measured time left out (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@pytest.fixture(scope="module")
def problems():
    return [p for p in load_suite("humaneval") if p.task_id in TASKS]


def batch(problems, tag: str = "") -> list[Sample]:
    """Per problem: the reference, a wrong answer, and for two problems a loop that times out
    and a syntax error; ids left empty on one sample so numbering is exercised too."""
    samples = []
    for p in problems:
        body = p.reference[len(p.prompt) :] if p.reference.startswith(p.prompt) else p.reference
        samples.append(Sample(p.task_id, f"    # {tag}\n" + body, "ref"))
        samples.append(Sample(p.task_id, "    return None\n", ""))
    samples.insert(1, Sample("HumanEval/0", "    while True:\n        pass\n", "loops"))
    samples.append(Sample("HumanEval/53", "    return x +\n", "syntax"))
    return samples


# ---------------------------------------------------------------- splitting (no Ray)

task_lists = st.lists(st.sampled_from([f"T/{i}" for i in range(12)]), max_size=60)


@given(tasks=task_lists, workers=st.integers(1, 8))
def test_split_by_problem_then_merge_is_the_identity(tasks: list[str], workers: int) -> None:
    samples = [Sample(t, f"c{i}", str(i)) for i, t in enumerate(tasks)]
    shares = split_by_problem(samples, workers)
    assert len(shares) == min(workers, len(set(tasks)))
    assert all(share and share == sorted(share) for share in shares)
    owner = {}
    for number, share in enumerate(shares):
        for i in share:
            assert owner.setdefault(samples[i].task_id, number) == number  # one share per task
    rows = [[{"i": i} for i in share] for share in shares]
    assert merge_rows(shares, rows, len(samples)) == [{"i": i} for i in range(len(samples))]
    if shares:  # balanced: at most one task's samples above the ideal share
        biggest = max(tasks.count(t) for t in set(tasks))
        assert max(map(len, shares)) <= len(samples) / len(shares) + biggest


def test_split_is_deterministic_and_rejects_no_workers() -> None:
    samples = [Sample(t, "x", str(i)) for i, t in enumerate("abcabcaad")]
    assert split_by_problem(samples, 2) == split_by_problem(list(samples), 2)
    # a (4 samples) first, then b and c onto the lighter share, d onto the tie's first
    assert split_by_problem(samples, 2) == [[0, 3, 6, 7, 8], [1, 2, 4, 5]]
    with pytest.raises(ValueError, match="at least 1"):
        split_by_problem(samples, 0)


def test_merge_refuses_shares_that_do_not_cover_the_batch() -> None:
    with pytest.raises(ValueError, match="no row for samples \\[1\\]"):
        merge_rows([[0], [2]], [[{}], [{}]], 3)
    with pytest.raises(ValueError, match="came back with 0"):
        merge_rows([[0]], [[]], 1)


def test_rows_of_a_dead_worker_are_masked_infra_errors(problems) -> None:
    from harness.reward import score_rows

    by_id = {p.task_id: p for p in problems}
    rows = failed_rows(by_id, [Sample("HumanEval/53", "    return x + y\n", "7")], "worker died")
    scored = score_rows(rows, by_id, PRESET)
    (row,) = scored
    assert (row["status"], row["error_kind"], row["passed"]) == ("error", "infra", False)
    assert row["reward"] is None  # a trainer masks it instead of scoring the model 0
    assert row["execution"]["infra_error"] == "worker died"
    assert {c["status"] for c in row["cases"]} == {"error"}
    assert "def add" in row["program"]


def test_unknown_executor_and_misplaced_address_are_clear_errors(problems) -> None:
    sample = [Sample("HumanEval/53", "    return x + y\n", "0")]
    with pytest.raises(ValueError, match="unknown executor 'dask'.*local, ray"):
        evaluate(problems, sample, executor="dask")
    with pytest.raises(ValueError, match="use executor='ray'"):
        evaluate(problems, sample, address="auto")


def test_an_executor_object_is_used_as_given(problems, tmp_path) -> None:
    local = LocalExecutor()
    assert isinstance(local, Executor)
    samples = [Sample("HumanEval/53", "    return x + y\n", "0")]
    rows = evaluate(problems, samples, executor=local, out_dir=tmp_path)
    assert [r["status"] for r in rows] == ["passed"]
    assert executor_for("local") is executor_for("local")  # one shared instance


def test_trainer_config_selects_and_checks_the_executor() -> None:
    assert RewardSettings().evaluate_kwargs() == {}  # the local path, unchanged
    assert RewardSettings(executor="ray", workers=2).evaluate_kwargs() == {
        "workers": 2,
        "executor": "ray",
    }
    with pytest.raises(InvalidSetting, match="'dask'; use local .* or ray") as bad:
        RewardSettings(executor="dask")
    assert bad.value.field == "executor"
    with pytest.raises(InvalidSetting, match="set reward.executor=ray") as misplaced:
        RewardSettings(address="ray://head:10001")
    assert misplaced.value.field == "address"


# ---------------------------------------------------------------- a real local Ray instance


@pytest.fixture(scope="module")
def ray_executor() -> Iterator:
    """One local Ray instance (2 CPUs, no dashboard) for the module, and the shared executor."""
    ray = pytest.importorskip("ray")
    from harness.executors import close_all

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 * 2**20,
        # the actors import this checkout, installed or not
        runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}},
    )
    try:
        yield executor_for("ray")  # the one evaluate(executor="ray") uses: 2 actors (2 CPUs)
    finally:
        close_all()
        ray.shutdown()


@pytest.mark.slow
def test_ray_gives_the_local_rows_in_the_same_order(problems, ray_executor, tmp_path) -> None:
    samples = batch(problems, "same")
    local = evaluate(problems, samples, reward=PRESET, timeout_s=1.0, out_dir=tmp_path / "l")
    remote = ray_executor.evaluate(
        problems, samples, reward=PRESET, timeout_s=1.0, out_dir=tmp_path / "r"
    )
    assert [r["status"] for r in local] == [
        *("passed", "timeout", "failed"),
        *("passed", "failed") * 3,
        "failed",
    ]
    assert [r["sample_id"] for r in remote] == [r["sample_id"] for r in local]
    assert without_timings(remote) == without_timings(local)
    assert len(set(ray_executor.actor_pids()) | {os.getpid()}) == 3  # two other processes
    # each share wrote its own results under out_dir
    assert sorted(p.parent.name for p in (tmp_path / "r").glob("*/results.jsonl")) == [
        "share-0",
        "share-1",
    ]


@pytest.mark.slow
def test_row_extras_travel_with_their_samples_to_the_actors(
    problems, ray_executor, tmp_path
) -> None:
    """A trainer's per-sample extras (MAGRPO's agent_code) split with the batch: each row gets
    its own sample's, and the rows are the local path's."""
    samples = [s for s in batch(problems, "extras") if s.sample_id != "loops"]
    extras = [{"agent_code": {"main": s.completion}, "index": i} for i, s in enumerate(samples)]
    options = dict(reward=PRESET, timeout_s=1.0, row_extras=extras)
    local = evaluate(problems, samples, out_dir=tmp_path / "l", **options)
    remote = ray_executor.evaluate(problems, samples, out_dir=tmp_path / "r", **options)
    assert [r["index"] for r in remote] == list(range(len(samples)))
    assert [r["agent_code"]["main"] for r in remote] == [s.completion for s in samples]
    assert without_timings(remote) == without_timings(local)


@pytest.mark.slow
def test_a_dead_actor_gives_error_rows_for_its_share_and_is_replaced(
    problems, ray_executor
) -> None:
    samples = batch(problems, "crash")
    local = evaluate(problems, samples, reward=PRESET, timeout_s=1.0)
    shares = split_by_problem(samples, 2)
    doomed = next(i for i, share in enumerate(shares) if 1 in share)  # the share with the loop
    pid = ray_executor.actor_pids()[doomed]
    # Killed while it works: the loop runs for seconds (1 s per case), the kill lands at 1 s.
    killer = threading.Timer(1.0, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        rows = ray_executor.evaluate(problems, samples, reward=PRESET, timeout_s=1.0)
    finally:
        killer.cancel()
    for index, row in enumerate(rows):
        if index in shares[doomed]:
            assert (row["status"], row["error_kind"], row["reward"]) == ("error", "infra", None)
            assert "Ray worker died" in row["execution"]["infra_error"]
        else:
            assert without_timings(row) == without_timings(local[index])
    # recovered: a new actor in its place, and the next batch is whole again
    again = evaluate(problems, samples, reward=PRESET, timeout_s=1.0, executor="ray")
    assert without_timings(again) == without_timings(local)
    assert ray_executor.actor_pids()[doomed] != pid


@pytest.mark.slow
def test_trainers_reward_runs_on_ray_when_configured(problems, ray_executor) -> None:
    from trainers.common.reward import HarnessReward

    settings = RewardSettings(preset=PRESET, executor="ray")
    reward = HarnessReward(
        {p.task_id: p for p in problems}, PRESET, evaluate_kwargs=settings.evaluate_kwargs()
    )
    texts = ["    return x + y\n", "    return x - y\n", "    return x +\n"]
    before = ray_executor.batches
    on_ray = reward.score(["HumanEval/53"] * 3, texts)
    assert ray_executor.batches == before + 1  # the shared Ray executor did the work
    local = HarnessReward({p.task_id: p for p in problems}, PRESET).score(
        ["HumanEval/53"] * 3, texts
    )
    assert on_ray == local
    assert on_ray[0] > on_ray[1] > on_ray[2]
    # MAGRPO's scorer reads the same section
    from trainers.common.sections import OutputSettings
    from trainers.magrpo.harness_io import harness_scorer

    samples = [Sample("HumanEval/53", text, str(i)) for i, text in enumerate(texts)]
    rows = harness_scorer(settings, OutputSettings(), num_agents=1)(problems, samples)
    assert ray_executor.batches == before + 2
    assert [r["reward"] for r in rows] == local


@pytest.mark.slow
def test_an_actor_the_cluster_cannot_place_is_a_clear_error(problems, ray_executor) -> None:
    from harness.executors.ray_executor import RayExecutor

    ray_executor.actor_pids()  # the shared pool holds both CPUs of the instance
    extra = RayExecutor(num_actors=1, start_timeout_s=3)
    try:
        with pytest.raises(RuntimeError, match="did not start within 3 s.*0 CPUs free"):
            extra.evaluate(problems, [Sample("HumanEval/53", "    return x + y\n", "0")])
    finally:
        extra.close()
    assert len(ray_executor.actor_pids()) == 2  # the shared pool is untouched
