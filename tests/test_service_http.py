"""codeeval serve over real HTTP on loopback: rows, bad input, the token, the queue, deadlines.

Each test runs a real uvicorn server in a thread (harness.service.server.serve_in_thread)
with the real RewardEngine and its warm judging workers; clients are real HTTP clients.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.rewardapi import RewardEngine
from harness.service.client import RewardClient, ServiceError
from harness.service.payloads import BadInput, Limits, openrlhf_samples, score_request
from harness.service.rows import timing_free as comparable
from harness.service.server import ServeSettings, check_exposure, serve_in_thread

RIGHT = {"completion": "    return x + y\n", "task_id": "HumanEval/53"}
WRONG = {"completion": "    return x - y\n", "task_id": "HumanEval/53"}
RAISES = {"completion": "    raise ValueError('no')\n", "task_id": "HumanEval/2"}
# the sleep runs once, when the program is loaded, not once per case
SLOW = {
    "completion": "    return x + y\n\nimport time\ntime.sleep(0.8)\n",
    "task_id": "HumanEval/53",
}


@pytest.fixture(scope="module")
def served():
    with serve_in_thread(ServeSettings(workers=2, max_batch_samples=64)) as (url, state):
        yield url, state


def post(url: str, body, **kwargs) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{url}/v1/score", content=content, timeout=60, **kwargs)


def test_rows_are_the_engines_rows(served) -> None:
    url, _ = served
    items = [RIGHT, WRONG, RAISES, RIGHT]
    with RewardClient(url) as client:
        rows = client.score(items)
    direct = RewardEngine(workers=0).score(items)
    assert [comparable(r) for r in rows] == [comparable(r) for r in direct]
    assert [r["status"] for r in rows] == ["passed", "failed", "failed", "passed"]
    assert [r["reward"] for r in rows] == [1.0, 0.0, 0.0, 1.0]
    assert [r["sample_id"] for r in rows] == ["0", "1", "2", "3"]


def test_concurrent_clients_each_get_their_own_rows(served) -> None:
    url, state = served
    batches_before = state.metrics.batches
    requests = [[RIGHT, WRONG][i % 2 :] + [RAISES] * (i % 3) for i in range(16)]
    with RewardClient(url) as client, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(client.score, requests))
    for items, rows in zip(requests, answers, strict=True):
        assert [r["task_id"] for r in rows] == [i["task_id"] for i in items]
        assert [r["completion"] for r in rows] == [i["completion"] for i in items]
        assert [r["passed"] for r in rows] == [i is RIGHT for i in items]
    assert state.metrics.batches - batches_before < len(requests)  # requests shared batches


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (b'{"items": [{"completion": "x", ', 400, "body"),
        (b"\xff\xfe", 400, "body"),
        (b"[" * 100_000, 400, "body"),
        ([1, 2], 422, "body"),
        ({"item": []}, 422, "items"),
        ({"items": {"completion": "x"}}, 422, "items"),
        ({"items": []}, 422, "items"),
        ({"items": [RIGHT, {"task_id": "HumanEval/53"}]}, 422, "items[1].completion"),
        ({"items": [{"completion": 5, "task_id": "HumanEval/53"}]}, 422, "items[0].completion"),
        ({"items": [{"completion": "x", "task_id": 53}]}, 422, "items[0].task_id"),
        ({"items": [{"completion": "x"}]}, 422, "items[0].task_id"),
        (
            {"items": [RIGHT, {"completion": "x", "task_id": "HumanEval/999"}]},
            422,
            "items[1].task_id",
        ),
        ({"items": [{"completion": "x", "task_id": "1", "suite": "nope"}]}, 422, "items[0].suite"),
        (
            {"items": [{"completion": "x", "problem": {"prompt": "p"}}]},
            422,
            "items[0].problem.tests",
        ),
        ({"items": [RIGHT], "deadline_s": "soon"}, 422, "deadline_s"),
        ({"items": [RIGHT], "deadline_s": -1}, 422, "deadline_s"),
    ],
)
def test_bad_input_gets_a_4xx_naming_the_field(served, body, status, field) -> None:
    url, _ = served
    response = post(url, body)
    assert response.status_code == status, response.text
    assert response.json()["field"] == field


def test_oversize_bodies_are_refused_without_reading_them_whole() -> None:
    limits = Limits(max_body_bytes=10_000, max_items=4, max_completion_chars=2_000)
    with serve_in_thread(ServeSettings(workers=0, limits=limits)) as (url, _):
        big = post(url, {"items": [{"completion": "x" * 20_000, "task_id": "HumanEval/53"}]})
        many = post(url, {"items": [RIGHT] * 5})
        long = post(url, {"items": [{"completion": "x" * 3_000, "task_id": "HumanEval/53"}, RIGHT]})
        chunked = httpx.post(
            f"{url}/v1/score", content=iter([b'{"items": [', b" " * 20_000]), timeout=30
        )
        fine = post(url, {"items": [RIGHT]})
    assert (big.status_code, big.json()["field"]) == (413, "body")
    assert (many.status_code, many.json()["field"]) == (413, "items")
    # A completion past the limit is the model's output: it fails, its batch is judged.
    assert long.status_code == 200
    overlong, right = long.json()["rows"]
    assert (overlong["status"], overlong["reward"], overlong["cases"]) == ("failed", 0.0, [])
    assert "3000 characters; at most 2000" in overlong["error"]
    assert (right["status"], right["reward"], right["sample_id"]) == ("passed", 1.0, "1")
    assert (chunked.status_code, chunked.json()["field"]) == (413, "body")
    assert fine.status_code == 200


def test_bad_requests_lose_nothing_of_the_good_ones_beside_them(served) -> None:
    url, _ = served
    bad = {"items": [RIGHT, {"completion": "x", "task_id": "HumanEval/999"}]}
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(lambda i: post(url, bad if i % 2 else {"items": [RIGHT, WRONG]}), range(12))
        )
    for i, response in enumerate(answers):
        if i % 2:
            assert response.status_code == 422
        else:
            assert [r["passed"] for r in response.json()["rows"]] == [True, False]


def test_openrlhf_remote_rm_body(served) -> None:
    url, _ = served
    prompt = "<|user|>add two numbers<|assistant|>"
    body = {
        "query": [
            prompt + RIGHT["completion"],
            prompt + WRONG["completion"],
            prompt + "    return 0\n",
        ],
        "prompts": [prompt] * 3,
        "labels": [
            "HumanEval/53",
            json.dumps({"task_id": "HumanEval/53"}),
            {"task_id": "HumanEval/53", "suite": "humaneval"},
        ],
    }
    answer = httpx.post(f"{url}/get_reward", json=body, timeout=60).json()
    assert answer["rewards"] == [1.0, 0.0, 0.0]
    assert answer["scores"] == answer["rewards"]
    assert answer["rows"][0]["completion"] == RIGHT["completion"]
    missing = httpx.post(f"{url}/get_reward", json={"query": ["x"], "prompts": [""]}, timeout=60)
    assert (missing.status_code, missing.json()["field"]) == (422, "labels")


def test_a_candidate_s_lone_surrogate_costs_no_row(served) -> None:
    """An exception message with a lone surrogate in it reaches the row: the answer is still
    JSON, and the other samples of the request keep their rows."""
    url, _ = served
    odd = {"completion": "    raise ValueError(chr(0xD800))\n", "task_id": "HumanEval/53"}
    response = post(url, {"items": [RIGHT, odd, RIGHT]})
    assert response.status_code == 200, response.text
    assert [r["status"] for r in response.json()["rows"]] == ["passed", "failed", "passed"]
    surrogate_in_request = (
        b'{"items": [{"completion": "    return x + y  # \\ud800\\n", "task_id": "HumanEval/53"}]}'
    )
    response = post(url, surrogate_in_request)
    assert response.status_code == 200, response.text  # a program no file can hold: it fails
    assert response.json()["rows"][0]["status"] == "failed"


def test_an_overlong_response_fails_at_the_lowest_reward_not_the_neutral() -> None:
    """A model must not escape its score by writing more: a response past the size limit
    gets the reward config's lowest reward, not the neutral score of an unjudged sample."""
    limits = Limits(max_completion_chars=2_000)
    prompt = "<|user|>add two numbers<|assistant|>"
    padded = prompt + WRONG["completion"] + " " * 3_000
    with serve_in_thread(ServeSettings(workers=0, limits=limits)) as (url, _):
        judged = httpx.post(
            f"{url}/get_reward",
            json={
                "query": [prompt + RIGHT["completion"]],
                "prompts": [prompt],
                "labels": ["HumanEval/53"],
            },
            timeout=60,
        ).json()
        answer = httpx.post(
            f"{url}/get_reward",
            json={"query": [padded], "prompts": [prompt], "labels": ["HumanEval/53"]},
            timeout=60,
        ).json()
    assert judged["rewards"] == [1.0]  # the problem's running mean is now 1.0
    assert answer["rewards"] == [0.0] and answer["extra_logs"]["unscored"] == [0.0]
    row = answer["rows"][0]
    assert (row["status"], row["task_id"], row["reward"]) == ("failed", "HumanEval/53", 0.0)
    assert "at most 2000" in row["error"]


def test_a_body_sent_too_slowly_gets_408_and_frees_its_connection() -> None:
    """A client trickling its body would hold one of --max-connections for as long as it
    likes: past ``body_timeout_s`` it gets a 408 and its connection is closed."""
    limits = Limits(body_timeout_s=1.0)
    with serve_in_thread(ServeSettings(workers=0, limits=limits)) as (url, _):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as slow:
            slow.sendall(
                b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n" + b'{"items": ['
            )
            started = time.monotonic()
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = slow.recv(4096)
                if not chunk:
                    break
                answer += chunk
            waited = time.monotonic() - started
        fine = post(url, {"items": [RIGHT]})
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert 0.9 <= waited < 10, waited
    assert fine.status_code == 200


def test_health_and_metrics(served) -> None:
    url, _ = served
    with RewardClient(url) as client:
        client.score([RIGHT])
        health, metrics = client.health(), client.metrics()
    assert health["status"] == "ok"
    assert metrics["samples_scored"] >= 1 and metrics["latency_s"]["p50"] > 0
    assert set(metrics["queue"]) == {"requests", "samples", "max_samples"}
    text = httpx.get(f"{url}/metrics?format=prometheus").text
    assert "codeeval_samples_scored_total" in text and 'quantile="p99"' in text


def test_a_token_is_required_off_loopback_and_checked() -> None:
    with pytest.raises(SystemExit, match="token"):
        check_exposure(ServeSettings(host="0.0.0.0"))
    check_exposure(ServeSettings(host="0.0.0.0", token="s3cret"))
    check_exposure(ServeSettings(host="::1"))
    with serve_in_thread(ServeSettings(workers=0, token="s3cret")) as (url, _):
        anonymous = post(url, {"items": [RIGHT]})
        wrong = post(url, {"items": [RIGHT]}, headers={"Authorization": "Bearer nope"})
        with RewardClient(url, token="s3cret") as client:
            rows = client.score([RIGHT])
        with pytest.raises(ServiceError) as refused:
            RewardClient(url, token="nope", retries=0).score([RIGHT])
    assert anonymous.status_code == wrong.status_code == 401
    assert refused.value.status == 401 and refused.value.field == "Authorization"
    assert rows[0]["passed"]


def test_a_full_queue_answers_429_with_retry_after_and_the_client_gets_through() -> None:
    with serve_in_thread(ServeSettings(workers=1, max_queue_samples=2, max_batch_samples=1)) as (
        url,
        state,
    ):
        with ThreadPoolExecutor(6) as pool:
            raw = list(pool.map(lambda _: post(url, {"items": [SLOW]}), range(6)))
        refused = [r for r in raw if r.status_code == 429]
        assert refused and all(int(r.headers["Retry-After"]) >= 1 for r in refused)
        assert all(r.status_code in (200, 429) for r in raw)
        assert state.queue.depth()["samples"] <= 2
        with (
            RewardClient(url, backoff_s=0.1, max_wait_s=1) as client,
            ThreadPoolExecutor(6) as pool,
        ):
            answers = list(pool.map(lambda _: client.score([RIGHT]), range(6)))
    assert all(rows[0]["passed"] for rows in answers)


def test_a_request_past_its_deadline_gets_504_and_the_next_is_served() -> None:
    with serve_in_thread(ServeSettings(workers=1, max_batch_samples=1)) as (url, state):
        with ThreadPoolExecutor(2) as pool:
            slow = pool.submit(post, url, {"items": [SLOW, SLOW]})
            time.sleep(0.2)
            late = pool.submit(post, url, {"items": [RIGHT], "deadline_s": 0.3}).result()
            assert slow.result().status_code == 200
        assert (late.status_code, late.json()["field"]) == (504, "deadline_s")
        assert post(url, {"items": [RIGHT]}).json()["rows"][0]["passed"]
        assert state.metrics.expired >= 1


def test_a_client_that_disconnects_mid_request_costs_nobody_else() -> None:
    with serve_in_thread(ServeSettings(workers=1)) as (url, state):
        host, port = url.removeprefix("http://").split(":")
        body = json.dumps({"items": [SLOW, SLOW]}).encode()
        sock = socket.create_connection((host, int(port)))
        sock.sendall(
            b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        others: list[httpx.Response] = []
        waiting = threading.Thread(
            target=lambda: others.append(post(url, {"items": [RIGHT, WRONG]}))
        )
        waiting.start()
        time.sleep(0.3)
        sock.close()  # gone while its batch is being judged
        waiting.join(60)
        deadline = time.monotonic() + 10
        while state.metrics.disconnected < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        after = post(url, {"items": [RIGHT]})
    assert [r["passed"] for r in others[0].json()["rows"]] == [True, False]
    assert after.json()["rows"][0]["passed"]
    assert state.metrics.disconnected == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "items",
                    "completion",
                    "task_id",
                    "suite",
                    "problem",
                    "prompt",
                    "tests",
                    "entry_point",
                    "deadline_s",
                    "query",
                    "prompts",
                    "labels",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_body_is_accepted_or_refused_with_a_field(body) -> None:
    for parse in (
        lambda b: score_request(b, Limits()),
        lambda b: openrlhf_samples(b, Limits(), None),
    ):
        try:
            parse(body)
        except BadInput as exc:
            assert exc.field and 400 <= exc.status < 500


def test_the_async_client_keeps_many_requests_in_flight(served) -> None:
    import asyncio

    from harness.service.client import AsyncRewardClient

    url, _ = served

    async def main() -> list[list[dict]]:
        client = AsyncRewardClient(url)
        try:
            return await asyncio.gather(*(client.score([RIGHT, WRONG]) for _ in range(8)))
        finally:
            await client.aclose()

    answers = asyncio.run(main())
    assert all([r["passed"] for r in rows] == [True, False] for rows in answers)


def test_the_client_gives_up_on_a_server_that_is_not_there() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    started = time.monotonic()
    with pytest.raises(httpx.ConnectError):
        RewardClient(f"http://127.0.0.1:{port}", retries=2, backoff_s=0.05).score([RIGHT])
    assert time.monotonic() - started < 5
