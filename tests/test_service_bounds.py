"""codeeval serve's refusals and bounds, over real HTTP on loopback (issue 34, item 4).

- inline problems can be turned off, and are off by default when the server listens beyond
  loopback (their tests run as trusted code in the server);
- what one request may cost before anything is judged is bounded: the body, its items, its
  distinct inline problems (count and size), all checked before any problem is built;
- whatever a body holds, the answer is a 200 or a 4xx naming the field, never a 500 (an
  integer of 5,000 digits was a 500).
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import build_parser
from harness.service.server import ServeSettings, serve_in_thread, settings_from_args

RIGHT = {"completion": "    return x + y\n", "task_id": "HumanEval/53"}
ADD = {
    "prompt": "",
    "tests": "assert add(1, 2) == 3\n",
    "entry_point": "add",
    "reference": "def add(a, b):\n    return a + b\n",
}
HUGE = "9" * 5000


@pytest.fixture(scope="module")
def served():
    with serve_in_thread(ServeSettings(workers=0)) as (url, state):
        yield url, state


def post(url: str, path: str, body: bytes | dict, timeout: float = 60) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{url}{path}", content=content, timeout=timeout)


def serve_settings(*argv: str) -> ServeSettings:
    return settings_from_args(build_parser().parse_args(["serve", *argv]))


def test_inline_problems_are_off_by_default_beyond_loopback() -> None:
    assert serve_settings().inline_allowed()  # 127.0.0.1
    assert not serve_settings("--host", "0.0.0.0").inline_allowed()
    assert not serve_settings("--host", "::").inline_allowed()
    assert serve_settings("--host", "0.0.0.0", "--allow-inline").inline_allowed()
    assert not serve_settings("--no-allow-inline").inline_allowed()


def test_a_server_that_refuses_inline_problems_says_so_and_serves_the_rest() -> None:
    with serve_in_thread(ServeSettings(workers=0, allow_inline=False)) as (url, state):
        inline = post(url, "/v1/score", {"items": [RIGHT, {"completion": "x", "problem": ADD}]})
        named = post(url, "/v1/score", {"items": [RIGHT]})
        labels = {"query": ["x"], "prompts": [""], "labels": [json.dumps({"problem": ADD})]}
        openrlhf = post(url, "/get_reward", labels)
        built = state.batcher.engine.problems.inline.builds
    assert (inline.status_code, inline.json()["field"]) == (403, "items[1].problem")
    assert "--allow-inline" in inline.json()["message"]
    assert (openrlhf.status_code, openrlhf.json()["field"]) == (403, "labels[0]")
    assert named.status_code == 200 and named.json()["rows"][0]["reward"] == 1.0
    assert built == 0


def test_700_inline_problems_are_refused_before_any_is_built_and_hold_nobody(served) -> None:
    url, state = served
    problems = [
        {**ADD, "tests": f"assert add({i}, 2) == {i + 2}\n" + "# padding\n" * 1000}
        for i in range(700)
    ]
    body = json.dumps({"items": [{"completion": "x", "problem": p} for p in problems]}).encode()
    assert 6_000_000 < len(body) < 8 * 1024 * 1024  # under the body limit: the count decides
    built = state.batcher.engine.problems.inline.builds
    answers: dict[str, tuple[int, float]] = {}

    def other_client() -> None:
        time.sleep(0.05)
        started = time.monotonic()
        response = post(url, "/v1/score", {"items": [RIGHT]})
        answers["other"] = (response.status_code, time.monotonic() - started)

    other = threading.Thread(target=other_client)
    other.start()
    started = time.monotonic()
    big = post(url, "/v1/score", body)
    elapsed = time.monotonic() - started
    other.join(60)
    assert (big.status_code, big.json()["field"]) == (413, "items[32].problem")
    assert elapsed < 3.0
    assert state.batcher.engine.problems.inline.builds == built  # nothing was built
    assert answers["other"][0] == 200 and answers["other"][1] < 3.0


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/v1/score",
            f'{{"items": [{{"completion": {HUGE}, "task_id": "HumanEval/53"}}]}}',
            "items[0].completion",
        ),
        (
            "/v1/score",
            f'{{"items": [{{"completion": "x", "task_id": "HumanEval/53"}}], "deadline_s": {HUGE}}}',
            "deadline_s",
        ),
        (
            "/v1/score",
            f'{{"items": [{{"completion": "x", "problem": {{"prompt": "", "tests": [{HUGE}]}}}}]}}',
            "items[0].problem.tests[0]",
        ),
        ("/v1/score", f"[{HUGE}]", "body[0]"),
        ("/v1/score", f"-{HUGE}", "body"),
        ("/get_reward", f'{{"query": ["x"], "prompts": [""], "labels": [{HUGE}]}}', "labels[0]"),
    ],
)
def test_an_over_long_integer_anywhere_is_a_4xx_naming_the_field(served, path, body, field) -> None:
    url, _ = served
    response = post(url, path, body.encode())
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["field"] == field


def test_an_over_long_integer_inside_a_label_text_masks_that_sample(served) -> None:
    url, _ = served
    label = '{"task_id": ' + HUGE + "}"  # the label's own JSON: the sample's data
    answer = post(url, "/get_reward", {"query": ["x"], "prompts": [""], "labels": [label]})
    assert answer.status_code == 200
    assert answer.json()["extra_logs"]["unscored"] == [1.0]
    assert "digits" in answer.json()["rows"][0]["error"]


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["HumanEval/53", "humaneval", "    return x + y\n", "add", "HumanEval/999"]),
)
bodies = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
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
                    "reference",
                    "language",
                    "deadline_s",
                    "query",
                    "prompts",
                    "labels",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(body=bodies, path=st.sampled_from(["/v1/score", "/get_reward"]))
def test_any_body_over_http_is_answered_never_a_500(served, body, path) -> None:
    url, _ = served
    response = post(url, path, body)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.json()["field"]
