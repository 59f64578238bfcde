"""codeeval serve under faults: nothing lost, no wrong verdict, infrastructure faults as errors.

- a judging worker killed mid-batch: its sample is judged again, every verdict is right;
- an engine that fails: every item of the batch gets an ``error`` row, reward None, never 0;
- a fork bomb and memory bombs in one request: the others' verdicts right, latency bounded;
- SIGTERM under load (a real ``codeeval serve`` process): every accepted request answered.
(A full queue and a client that disconnects are in test_service_http.py.)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from harness.pipeline.pool import shared_pool
from harness.rewardapi import RewardEngine
from harness.service.client import RewardClient
from harness.service.server import ServeSettings, serve_in_thread

ROOT = Path(__file__).resolve().parents[1]
RIGHT = {"completion": "    return x + y\n", "task_id": "HumanEval/53"}
WRONG = {"completion": "    return x - y\n", "task_id": "HumanEval/53"}
OTHER = {"completion": "    return number % 1.0\n", "task_id": "HumanEval/2"}
SLOW = {
    "completion": "    return x + y\n\nimport time\ntime.sleep(1.0)\n",
    "task_id": "HumanEval/53",
}
FORK_BOMB = {
    "completion": "    import os\n    while True:\n        os.fork()\n",
    "task_id": "HumanEval/53",
}
MEMORY_BOMBS = [
    {
        "completion": "    a = []\n    while True:\n        a.append(bytearray(10**7))\n",
        "task_id": "HumanEval/53",
    },
    {"completion": "    return len(bytearray(10**11))\n", "task_id": "HumanEval/53"},
]


@pytest.mark.slow
def test_a_worker_killed_mid_batch_costs_no_verdict() -> None:
    items = [RIGHT, SLOW, WRONG, OTHER, SLOW, RIGHT]
    with serve_in_thread(ServeSettings(workers=2)) as (url, _):
        with RewardClient(url) as client:
            client.score([RIGHT, OTHER])  # the workers are up
            workers = [w for w in shared_pool(2)._workers if w is not None]
            assert len(workers) == 2
            with ThreadPoolExecutor(1) as pool:
                answer = pool.submit(client.score, items)
                time.sleep(0.5)  # the workers are judging the slow samples
                workers[0].process.kill()
                rows = answer.result(timeout=120)
            assert shared_pool(2)._workers[0] is not workers[0]  # it died mid-batch
    assert [r["status"] for r in rows] == [
        "passed",
        "passed",
        "failed",
        "passed",
        "passed",
        "passed",
    ]
    assert [r["reward"] for r in rows] == [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]


class FailingEngine(RewardEngine):
    """The real engine whose sandbox host breaks on every batch that names HumanEval/2."""

    sizes: list[int] = []  # the batches it was given

    def score(self, items):  # type: ignore[no-untyped-def]
        self.sizes.append(len(items))
        if any(item.get("task_id") == "HumanEval/2" for item in items):
            raise OSError("the sandbox could not start: no space left on device")
        return super().score(items)


def test_an_engine_failure_gives_error_rows_never_zero_to_its_request_alone() -> None:
    engine = FailingEngine(workers=0)
    settings = ServeSettings(workers=0)
    with serve_in_thread(settings, engine, None) as (url, state):
        with RewardClient(url) as client, ThreadPoolExecutor(8) as pool:
            busy = pool.submit(client.score, [SLOW])  # the next requests merge behind it
            time.sleep(0.3)
            broken = pool.submit(client.score, [RIGHT, OTHER])
            fine = [pool.submit(client.score, [RIGHT, WRONG]) for _ in range(4)]
            busy.result(timeout=60)
            broken_rows = broken.result(timeout=60)
            fine_rows = [f.result(timeout=60) for f in fine]
        metrics = state.metrics.snapshot(state.queue.depth())
    assert [r["status"] for r in broken_rows] == ["error", "error"]
    assert [r["reward"] for r in broken_rows] == [None, None]
    assert "no space left" in broken_rows[0]["error"]
    assert all([r["reward"] for r in rows] == [1.0, 0.0] for rows in fine_rows)
    assert metrics["infra_error_rows"] == 2
    assert max(engine.sizes) > 2  # the requests did share a batch before it was split


@pytest.mark.slow
def test_bombs_in_one_request_leave_the_others_verdicts_and_latency() -> None:
    def timed(client: RewardClient, items: list[dict]) -> tuple[float, list[dict]]:
        started = time.monotonic()
        rows = client.score(items)
        return time.monotonic() - started, rows

    normal = [RIGHT, WRONG, OTHER]
    with serve_in_thread(ServeSettings(workers=2)) as (url, _):
        with RewardClient(url) as client, ThreadPoolExecutor(8) as pool:
            client.score(normal)
            alone = max(timed(client, normal)[0] for _ in range(3))
            bombs = [pool.submit(timed, client, [bomb]) for bomb in [FORK_BOMB, *MEMORY_BOMBS]]
            beside = [pool.submit(timed, client, normal) for _ in range(8)]
            bomb_answers = [f.result(timeout=120) for f in bombs]
            normal_answers = [f.result(timeout=120) for f in beside]
            after = max(timed(client, normal)[0] for _ in range(3))
    for _, rows in normal_answers:
        assert [r["status"] for r in rows] == ["passed", "failed", "passed"]
    for _, rows in bomb_answers:  # the candidate's own doing: a verdict, not an error
        assert rows[0]["status"] in ("failed", "timeout") and rows[0]["reward"] == 0.0
    # a request can share one batch with a bomb (bounded by its time limit), never more
    worst_bomb = max(latency for latency, _ in bomb_answers)
    assert max(latency for latency, _ in normal_answers) <= worst_bomb + 3 * alone + 1.0
    assert after <= 3 * alone + 0.5  # nothing left behind slows the server down


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://\S+", line)
    if not found:
        process.kill()
        raise AssertionError(f"no address: {line!r} {process.stderr.read()}")  # type: ignore[union-attr]
    return process, found.group(0)


@pytest.mark.slow
def test_sigterm_under_load_answers_every_accepted_request() -> None:
    process, url = start_server("--workers", "2")
    items = [SLOW, RIGHT, WRONG, OTHER]
    answered: list[list[dict]] = []
    refused: list[str] = []
    lost: list[str] = []
    finished: list[float] = []
    stop = threading.Event()

    def client() -> None:
        # one connection per request: a refused connection was never accepted
        while not stop.is_set():
            try:
                response = httpx.post(
                    f"{url}/v1/score",
                    json={"items": items},
                    headers={"Connection": "close"},
                    timeout=120,
                )
            except httpx.ConnectError:
                refused.append("refused")
                return
            except httpx.TransportError as exc:  # accepted, then dropped
                lost.append(repr(exc))
                return
            if response.status_code == 503:
                refused.append("draining")
                return
            assert response.status_code == 200, response.text
            answered.append(response.json()["rows"])
            finished.append(time.monotonic())

    threads = [threading.Thread(target=client) for _ in range(8)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # some answered, and several accepted but not yet
        counts = httpx.get(f"{url}/metrics", timeout=30).json()
        if len(answered) >= 8 and counts["accepted"] - counts["answered"] >= 4:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)  # with requests in flight and queued
    signalled = time.monotonic()
    stop.set()
    for thread in threads:
        thread.join(120)
    _, stderr = process.communicate(timeout=120)
    summary = re.search(r"requests: (\d+) accepted, (\d+) answered, (\d+) disconnected", stderr)
    assert summary, stderr[-2000:]
    accepted, replied, disconnected = map(int, summary.groups())
    assert not lost
    assert accepted == replied == len(answered) and disconnected == 0
    assert len(answered) >= 8
    assert any(when > signalled for when in finished)  # in-flight requests were drained
    for rows in answered:
        assert [r["status"] for r in rows] == ["passed", "passed", "failed", "passed"]
    assert process.returncode in (0, -signal.SIGTERM)


def test_the_command_refuses_to_listen_off_loopback_without_a_token() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CODEEVAL_SERVE_TOKEN": ""},
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode != 0 and "token" in result.stderr


class HalfBrokenEngine(RewardEngine):
    """The real engine whose sandbox could not start for HumanEval/2's samples (their rows
    become the infrastructure errors such a sandbox gives: status error, reward None)."""

    def score(self, items):  # type: ignore[no-untyped-def]
        rows = super().score(items)
        return [
            {**row, "status": "error", "error_kind": "infra", "reward": None}
            if row["task_id"] == "HumanEval/2"
            else row
            for row in rows
        ]


def test_openrlhf_gets_a_neutral_score_for_an_unjudged_sample_never_zero() -> None:
    prompt = "<|assistant|>"
    body = {
        "query": [
            prompt + c for c in (RIGHT["completion"], WRONG["completion"], OTHER["completion"])
        ],
        "prompts": [prompt] * 3,
        "labels": ["HumanEval/53", "HumanEval/53", "HumanEval/2"],
    }
    with serve_in_thread(ServeSettings(workers=0), HalfBrokenEngine(workers=0)) as (url, _):
        answer = httpx.post(f"{url}/get_reward", json=body, timeout=60).json()
    assert answer["rewards"] == [1.0, 0.0, 0.5]  # the mean of the judged samples
    assert answer["extra_logs"]["unscored"] == [0.0, 0.0, 1.0]
    assert answer["rows"][2]["reward"] is None
