"""The TRL adapter: called as TRL 1.16 calls reward functions, on TRL's own event loop, and in a
real GRPOTrainer step on a tiny model (slow)."""

from __future__ import annotations

import asyncio
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.rewardapi import RewardEngine, RewardInputError
from harness.rewardapi.trl import AsyncTRLReward, TRLReward

pytest.importorskip("trl")
from trl.trainer.utils import (  # noqa: E402
    is_async_callable,
    shutdown_event_loop_in_daemon,
    start_event_loop_in_daemon,
)

ROOT = Path(__file__).resolve().parents[1]
ADD_TESTS = "assert add(1, 2) == 3\nassert add(-1, 1) == 0\nassert add(2, 2) == 4\n"
ADD_REFERENCE = "def add(a, b):\n    return a + b\n"
SLEEPY = "import time\ndef add(a, b):\n    time.sleep(0.4)\n    return a + b\n"


@pytest.fixture(scope="module")
def engine():
    with RewardEngine(workers=2) as engine:
        yield engine


def trl_keywords(logged: dict, **columns) -> dict:
    """What GRPOTrainer._calculate_rewards passes beside prompts and completions."""
    return {
        "completion_ids": [[1, 2]] * len(next(iter(columns.values()))),
        "trainer_state": object(),
        "log_extra": lambda column, values: logged.setdefault(column, []).extend(values),
        "log_metric": lambda name, value: logged.setdefault(name, []).append(value),
        **columns,
    }


def test_task_id_and_inline_columns_in_one_batch(engine: RewardEngine) -> None:
    reward = TRLReward(engine)
    logged: dict = {}
    chat = [{"role": "assistant", "content": "```python\n" + ADD_REFERENCE + "```"}]
    rewards = reward(
        prompts=["def add(x: int, y: int):\n", "Write add.", [{"role": "user", "content": "add"}]],
        completions=["    return x + y\n", "def add(a, b):\n    return a - b\n", chat],
        **trl_keywords(
            logged,
            task_id=["HumanEval/53", None, None],
            tests=[None, ADD_TESTS, ADD_TESTS],
            entry_point=[None, "add", "add"],
            reference=[None, ADD_REFERENCE, ADD_REFERENCE],
        ),
    )
    assert rewards == [1.0, 0.0, 1.0]
    assert logged["codeeval_status"] == ["passed", "failed", "passed"]
    assert logged["codeeval/unscored"] == [0.0]
    assert [r["task_id"].split("/")[0] for r in reward.last_rows] == [
        "HumanEval",
        "inline",
        "inline",
    ]


def test_a_sample_the_harness_cannot_judge_is_none_for_trl(engine: RewardEngine) -> None:
    reward = TRLReward(engine)
    wrong_reference = "def add(a, b):\n    return a * b\n"
    logged: dict = {}
    rewards = reward(
        prompts=["", ""],
        completions=[ADD_REFERENCE, ADD_REFERENCE],
        **trl_keywords(
            logged,
            tests=[ADD_TESTS, ADD_TESTS],
            entry_point=["add", "add"],
            reference=[wrong_reference, ADD_REFERENCE],
        ),
    )
    assert rewards == [None, 1.0]
    assert reward.unscored == 1 and logged["codeeval/unscored"] == [0.5]


def test_a_dataset_without_problems_is_named_and_a_bad_row_is_masked(caplog) -> None:
    reward = TRLReward(RewardEngine(workers=0))
    with pytest.raises(RewardInputError, match=r"columns\[0\]"):  # a setup error: raised
        reward(prompts=["p"], completions=["c"], answer=["x"])
    caplog.set_level("DEBUG", logger="harness.rewardapi.trl")
    rewards = reward(  # a data error: that row masked, the rest judged
        prompts=["p", "p"],
        completions=["    return x + y\n", "c"],
        task_id=["HumanEval/53", "HumanEval/9999"],
    )
    assert rewards == [1.0, None]
    assert reward.last_rows[1]["error_kind"] == "data"
    assert any("HumanEval/9999" in r.getMessage() for r in caplog.records)


def run_on_trl_loop(coroutine_function, **kwargs):
    """Await the reward as GRPOTrainer does (asyncio.run_coroutine_threadsafe on TRL's daemon
    loop), with a ticker on the same loop standing for the generation the loop also runs."""
    thread, loop, ready = start_event_loop_in_daemon(name="trl-test-loop")
    ready.wait()
    ticks = []

    async def ticker():
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    try:
        ticking = asyncio.run_coroutine_threadsafe(ticker(), loop)
        started = time.monotonic()
        result = asyncio.run_coroutine_threadsafe(coroutine_function(**kwargs), loop).result()
        elapsed = time.monotonic() - started
        ticking.cancel()
        return result, elapsed, [t for t in ticks if t >= started]
    finally:
        shutdown_event_loop_in_daemon(thread, loop)


def test_the_async_form_never_holds_trls_event_loop(engine: RewardEngine) -> None:
    reward = AsyncTRLReward(engine)
    assert is_async_callable(reward) and not is_async_callable(TRLReward(engine))
    rewards, elapsed, ticks = run_on_trl_loop(
        reward,
        prompts=["", ""],
        completions=[SLEEPY, "def add(a, b):\n    return 0\n"],
        tests=[ADD_TESTS] * 2,
        entry_point=["add"] * 2,
        reference=[ADD_REFERENCE] * 2,
    )
    assert rewards == [1.0, 0.0]
    assert elapsed > 1.0  # three cases of 0.4 s
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    assert len(ticks) > 30 and max(gaps) < 0.5  # the loop kept running meanwhile


def test_a_batch_past_its_deadline_is_masked_not_waited_for(engine: RewardEngine) -> None:
    reward = AsyncTRLReward(engine, timeout_s=0.3)
    rewards, elapsed, _ = run_on_trl_loop(
        reward,
        prompts=[""],
        completions=[SLEEPY.replace("0.4", "0.9")],
        tests=[ADD_TESTS],
        entry_point=["add"],
        reference=[ADD_REFERENCE],
    )
    assert rewards == [None] and reward.timed_out == 1
    assert elapsed < 1.5


CHILD = """
import asyncio, pickle, sys
reward = pickle.loads(sys.stdin.buffer.read())
rewards = asyncio.run(reward(prompts=[""], completions=[sys.argv[1]], tests=[sys.argv[2]],
                             entry_point=["add"]))
print(rewards)
"""


def test_the_adapters_survive_the_spawned_process_of_trls_async_trainer() -> None:
    """TRL's AsyncGRPOTrainer pickles reward_funcs into a spawned child (it checks with
    pickle.dumps first); the copy scores there, in a fresh interpreter, with its own engine."""
    reward = AsyncTRLReward(RewardEngine(reward="binary", workers=0), timeout_s=60, name="r")
    copy = pickle.loads(pickle.dumps(reward))
    assert (copy.engine.reward, copy.engine.workers, copy.timeout_s, copy.__name__) == (
        "binary",
        0,
        60,
        "r",
    )
    child = subprocess.run(
        [sys.executable, "-c", CHILD, ADD_REFERENCE, ADD_TESTS],
        input=pickle.dumps(reward),
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.returncode == 0, child.stderr.decode()[-2000:]
    assert child.stdout.decode().strip().splitlines()[-1] == "[1.0]"


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_a_real_grpo_step_with_both_forms(tmp_path) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from harness.models import tiny_model

    model, tokenizer = tiny_model(0, hidden=32)
    data = Dataset.from_list(
        [
            {
                "prompt": "def add(x: int, y: int):\n",
                "task_id": "HumanEval/53",
                "tests": None,
                "entry_point": None,
                "reference": None,
            },
            {  # its reference fails its tests: a data error, None for TRL
                "prompt": "def add(a, b):\n",
                "task_id": None,
                "tests": ADD_TESTS,
                "entry_point": "add",
                "reference": "def add(a, b):\n    return a - b\n",
            },
        ]
    )
    sync = TRLReward(workers=2, name="codeeval")
    asynchronous = AsyncTRLReward(sync.engine, name="codeeval_async")
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=8,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[sync, asynchronous],
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
    )
    trainer.train()
    logs = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert "rewards/codeeval/mean" in logs and "rewards/codeeval_async/mean" in logs
    assert math_isfinite(logs["loss"] if "loss" in logs else logs["train_loss"])
    for adapter in (sync, asynchronous):
        rows = adapter.last_rows
        assert len(rows) == 4
        by_suite = {r["suite"]: r for r in rows}
        assert by_suite["inline"]["status"] == "error" and by_suite["inline"]["reward"] is None
        assert by_suite["humaneval"]["reward"] in (0.0, 1.0)
    assert logs["codeeval/unscored"] == 0.5
    sync.close()


def math_isfinite(value) -> bool:
    import math

    return math.isfinite(float(value))
