"""evaluate(workers=N): warm judging workers give the rows judging in this process gives, and a
worker that dies costs only the sample it was judging: judged again on a fresh worker, failed
only if it takes that one down too (harness.pipeline.pool)."""

from __future__ import annotations

import threading
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.analyzers import AnalyzerCache
from harness.evaluate import evaluate
from harness.pipeline.pool import WorkerPool, _Batch, plan_jobs
from harness.pipeline.prepare import RunSettings, prepare_suite
from harness.records import Sample
from harness.reward import analyzers_read, load_reward_config, score_rows
from suites import load_suite

TASKS = ("HumanEval/0", "HumanEval/53", "HumanEval/2")


def problems() -> list[Any]:
    return [p for p in load_suite("humaneval") if p.task_id in TASKS]


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without their timings (the only field that may differ between two runs)."""
    out = []
    for row in rows:
        row = {k: v for k, v in row.items() if k not in ("duration_s", "execution")}
        row["cases"] = [{k: v for k, v in c.items() if k != "duration_s"} for c in row["cases"]]
        out.append(row)
    return out


def test_workers_give_the_rows_of_the_in_process_path(tmp_path) -> None:
    samples = [
        Sample("HumanEval/53", "    return x + y\n", "right"),
        Sample("HumanEval/53", "    return x - y\n", "wrong"),
        Sample("HumanEval/0", "    return False\n", "half"),
        Sample("HumanEval/2", "    return number % 1.0\n", "right"),
        Sample("HumanEval/2", "    raise ValueError('no')\n", "raises"),
    ]
    here = evaluate(problems(), samples, out_dir=tmp_path / "here")
    pooled = evaluate(problems(), samples, out_dir=tmp_path / "pool", workers=2)
    again = evaluate(problems(), samples, out_dir=tmp_path / "pool", workers=2)  # warm workers
    assert comparable(pooled) == comparable(here) == comparable(again)
    assert [r["status"] for r in here] == ["passed", "failed", "failed", "passed", "failed"]


def test_started_workers_are_the_ones_that_judge(tmp_path) -> None:
    """``start`` spawns the workers a batch will use while the caller still prepares it; the
    batch then judges with those very processes, and a dead one is replaced."""
    samples = [Sample("HumanEval/53", "    return x + y\n", "right")]
    prepared = prepare_suite(problems(), samples, tmp_path / "suite", RunSettings(timeout_s=120))
    pool = WorkerPool(2)
    try:
        pool.start(1)  # one sample: one worker
        started = pool._workers[0]
        assert started is not None and pool._workers[1] is None
        rows = pool.judge(prepared.root, [("HumanEval/53", "right")], {})
        assert rows[0]["status"] == "passed" and pool._workers[0] is started
        started.process.kill()
        started.process.wait()
        pool.start(2)
        assert pool._workers[0] is not started and pool._workers[1] is not None
    finally:
        pool.close()


def test_workers_make_a_rewards_per_program_reports_ahead_of_the_caller(
    tmp_path, monkeypatch
) -> None:
    """Given a reward's analyzers, each worker stores what the per-program ones (syntax and
    structure: a parse and a walk a program) report on the samples it judged. The caller's
    scoring then finds them in the cache and parses no program itself, and scores exactly as
    it does making them all; the tests' summary, which reads the run, is still its own."""
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))  # the workers inherit it
    samples = [
        Sample("HumanEval/53", "    return x + y\n", "right"),
        Sample("HumanEval/53", "    return x +\n", "syntax"),
        Sample("HumanEval/0", "    return helper(numbers)\n", "undefined"),
        Sample("HumanEval/2", "    return number % 1.0\n", "right"),
    ]
    prepared = prepare_suite(problems(), samples, tmp_path / "suite", RunSettings(timeout_s=120))
    keys = [(s.task_id, s.sample_id) for s in samples]
    config = load_reward_config("code_levels")
    pool = WorkerPool(2)
    try:
        rows = pool.judge(prepared.root, keys, {}, analyze=analyzers_read(config))
    finally:
        pool.close()
    by_id = {p.task_id: p for p in prepared.problems}
    timings: dict[str, float] = {}
    scored = score_rows(rows, by_id, config, cache=AnalyzerCache(), timings=timings)
    assert set(timings) == {"tests"}
    fresh = AnalyzerCache(tmp_path / "fresh.sqlite")
    assert scored == score_rows(rows, by_id, config, cache=fresh)
    assert [r["analyzers"]["syntax"]["ok"] for r in scored] == [True, False, True, True]


def judge_while_killing(tmp_path, samples: list[Sample], kills: int) -> dict[str, Any]:
    """Judge ``samples`` with one worker, killing it ``kills`` times, each time while the
    worker judges the second sample of its job (its slot says so; the first sample's row is
    then still in the worker: rows are written a few at a time); rows by sample id."""
    prepared = prepare_suite(problems(), samples, tmp_path / "suite", RunSettings(timeout_s=120))
    keys = [(s.task_id, s.sample_id) for s in samples]
    pool, rows, texts = WorkerPool(1), {}, {}
    batch = _Batch(prepared.root, rows, texts, ())
    judging = threading.Thread(target=pool._judge_share, args=(0, keys, batch))
    judging.start()
    deadline = time.monotonic() + 120
    for _ in range(kills):
        while time.monotonic() < deadline:
            worker = pool._workers[0]
            if worker is not None and worker.running() == 1:
                break
            time.sleep(0.02)
        time.sleep(0.3)  # into the second sample's run
        worker.process.kill()  # type: ignore[union-attr]
        while pool._workers[0] in (worker, None) and time.monotonic() < deadline:
            time.sleep(0.02)  # the pool starts a fresh worker for the rest
    judging.join(timeout=120)
    pool.close()
    assert not judging.is_alive()
    return {key[1]: row for key, row in rows.items()}


def test_a_worker_killed_from_outside_costs_no_verdict(tmp_path) -> None:
    # "slow" sleeps once, when its program loads; the kill lands during that sleep
    slow = "    return x + y\n\nimport time\ntime.sleep(1.5)\n"
    samples = [
        Sample("HumanEval/53", "    return x + y\n", "first"),
        Sample("HumanEval/53", slow, "slow"),
        Sample("HumanEval/53", "    return x - y\n", "third"),
    ]
    rows = judge_while_killing(tmp_path, samples, kills=1)
    status = {sample_id: row["status"] for sample_id, row in rows.items()}
    assert status == {"first": "passed", "slow": "passed", "third": "failed"}


def test_a_sample_that_takes_down_two_workers_fails_alone(tmp_path) -> None:
    samples = [
        Sample("HumanEval/53", "    return x + y\n", "first"),
        Sample("HumanEval/53", "    import time\n    time.sleep(60)\n    return x + y\n", "slow"),
        Sample("HumanEval/53", "    return x + y\n", "third"),
        Sample("HumanEval/53", "    return y + x\n", "fourth"),
    ]
    rows = judge_while_killing(tmp_path, samples, kills=2)
    status = {sample_id: row["status"] for sample_id, row in rows.items()}
    assert status == {"first": "passed", "slow": "failed", "third": "passed", "fourth": "passed"}
    assert "worker crashed" in rows["slow"]["cases"][0]["message"]


keys_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.text("xyz0123", min_size=1)),
    unique=True,
    max_size=30,
)


COSTS = {"a": 3.0, "b": 1.0, "c": 10.0}


@settings(max_examples=300, deadline=None)
@given(keys=keys_strategy, size=st.integers(1, 4))
def test_jobs_hold_every_key_once_in_order_and_split_only_problems_that_hold_up_the_batch(
    keys: list[tuple[str, str]], size: int
) -> None:
    jobs = plan_jobs(keys, size, COSTS)
    assert all(jobs)
    assert sorted(k for job in jobs for k in job) == sorted(keys)
    for job in jobs:
        assert job == [k for k in keys if k in job]  # each keeps the batch's order
    cost = {task: sum(COSTS.get(t, 1.0) for t, _ in keys if t == task) for task, _ in keys}
    most = sum(cost.values()) / (2 * size)
    for task in cost:
        holders = [job for job in jobs if any(k[0] == task for k in job)]
        if cost[task] <= most or size == 1:
            assert len(holders) == 1  # a problem that does not hold up the batch never splits
    # a job is never much more than a 2 x size-th of the batch (a part of that, the next part)
    for job in jobs:
        spent = sum(COSTS.get(task, 1.0) for task, _ in job)
        assert size == 1 or spent < 2 * most + max(COSTS.values())


def test_one_slow_problem_leaves_the_other_workers_the_rest() -> None:
    # 1 problem costing as much as the 20 others together, 2 workers: it goes first, cut in
    # two parts, and the others come in jobs that get smaller as the batch empties
    keys = [("slow", f"s{i}") for i in range(4)] + [(f"t{i}", "s") for i in range(20)]
    costs = {"slow": 5.0, **{f"t{i}": 1.0 for i in range(20)}}
    jobs = plan_jobs(keys, 2, costs)
    assert jobs[0] == [("slow", "s0"), ("slow", "s1")] and jobs[1] == [
        ("slow", "s2"),
        ("slow", "s3"),
    ]
    sizes = [len(job) for job in jobs[2:]]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 1 and len(sizes) >= 4


def test_a_batch_of_one_problem_keeps_every_worker_busy() -> None:
    keys = [("only", f"s{i}") for i in range(16)]  # a trainer's group of 16 answers
    jobs = plan_jobs(keys, 2, {"only": 0.1})
    assert len(jobs) >= 2 and all(len(job) <= 4 for job in jobs)
