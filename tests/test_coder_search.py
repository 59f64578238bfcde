"""The Coder's search against a real OpenAI-compatible HTTP server of the test's own.

The server (http.server in a thread) answers ``/v1/chat/completions`` from a script that looks
at the request (the last assistant message, the sample index in the seed, the temperature),
and records every request, so the tests see exactly what the Coder sent. The analyzer is the
real mypy.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness.coder import Coder

GOOD = "y: int = 1\n"


def bad(errors: int, tag: str = "a") -> str:
    """A completion with exactly ``errors`` mypy errors."""
    return "".join(f'{tag}{i}: int = "x"\n' for i in range(errors))


def fenced(code: str) -> str:
    return f"Here you go:\n```python\n{code}```\n"


Script = Callable[[dict[str, Any]], str]


class ScriptedServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    outer.requests.append(body)
                text = outer.script(body)
                reply = {
                    "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                    "usage": {"completion_tokens": len(text.split())},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def model(self) -> str:
        return f"openai:http://127.0.0.1:{self.server.server_address[1]}/v1#scripted"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve(tmp_path, monkeypatch) -> Iterator[Callable[[Script], ScriptedServer]]:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    servers: list[ScriptedServer] = []

    def start(script: Script) -> ScriptedServer:
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def last_assistant(body: dict[str, Any]) -> str | None:
    said = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
    return said[-1] if said else None


def sample_index(body: dict[str, Any]) -> int:
    return body["seed"] % 1_000_003  # the backend sends seed * 1_000_003 + index


CODE = "import os\n\nx: int = 0\n"


@pytest.mark.parametrize("variant", ["coworker", "separate"])
def test_feedback_reaches_the_second_request_and_the_search_stops_when_it_passes(serve, variant):
    server = serve(lambda body: fenced(GOOD if last_assistant(body) else bad(1)))
    coder = Coder(
        analyzers=["mypy"], model_first=server.model, max_iter=5, feedback_variant=variant
    )
    assert coder.complete(CODE) == GOOD
    assert len(server.requests) == 2  # it stopped as soon as the analyzers passed
    feedback = server.requests[1]["messages"][-1]
    assert feedback["role"] == "user"
    assert "[mypy]" in feedback["content"]
    assert "Incompatible types in assignment" in feedback["content"]
    assert server.requests[1]["messages"][-2]["content"] == fenced(bad(1))
    if variant == "separate":  # a fresh conversation: system, code, latest completion, feedback
        assert [m["role"] for m in server.requests[1]["messages"]] == [
            "system", "user", "assistant", "user",
        ]  # fmt: skip
    run = coder.last_run
    assert run is not None and run.best is not None and run.best.passed
    assert [it["iteration"] for it in run.iterations] == [1, 2]


def test_it_stops_at_once_when_the_first_completion_passes(serve):
    server = serve(lambda body: fenced(GOOD))
    coder = Coder(analyzers=["mypy"], model_first=server.model, max_iter=5)
    assert coder.complete(CODE) == GOOD
    assert len(server.requests) == 1


def test_a_duplicate_is_dropped_and_the_temperature_rises(serve):
    def script(body: dict[str, Any]) -> str:
        if last_assistant(body) is None:
            return fenced(bad(1))  # both samples of the first step: one is a duplicate
        if body["temperature"] < 0.4:
            return fenced(bad(1))  # repeats the mistake it was told about
        return fenced(GOOD)

    server = serve(script)
    coder = Coder(
        analyzers=["mypy"], model_first=server.model, n=2, max_n=8, temperature=0.2,
        delta_temperature=0.3, max_iter=5,
    )  # fmt: skip
    assert coder.complete(CODE) == GOOD
    run = coder.last_run
    assert run is not None
    first, second = run.iterations
    assert first["dropped"]["duplicate"] == 1 and first["children"] == [1]
    assert second["dropped"]["repeated_mistake"] == 2
    assert [a["temperature"] for a in second["attempts"]] == pytest.approx([0.2, 0.5])
    assert [a["n"] for a in second["attempts"]] == [2, 4]
    temperatures = sorted(round(b["temperature"], 3) for b in server.requests)
    assert temperatures == [0.2] * 4 + [0.5] * 4


def backtracking_script(body: dict[str, Any]) -> str:
    previous = last_assistant(body)
    if previous is None:  # two first completions: one error and two errors
        return fenced(bad(1) if sample_index(body) == 0 else bad(2, "b"))
    if previous == fenced(bad(2, "b")):
        return fenced(GOOD)
    # expanding the one-error conversation only makes things worse (five errors)
    return fenced(bad(5, f"c{sample_index(body)}_{len(body['messages'])}_"))


def test_with_backtracking_the_search_returns_to_an_earlier_better_conversation(serve):
    server = serve(backtracking_script)
    coder = Coder(analyzers=["mypy"], model_first=server.model, n=2, max_iter=5)
    assert coder.complete(CODE) == GOOD
    third = server.requests[4]  # steps run one after another: 2 requests per step
    assert last_assistant(third) == fenced(bad(2, "b"))  # back to the two-error conversation
    run = coder.last_run
    assert run is not None
    assert [it["expanded"] for it in run.iterations] == [0, 1, 2]


def test_without_backtracking_only_the_newest_conversations_are_expanded(serve):
    server = serve(backtracking_script)
    coder = Coder(analyzers=["mypy"], model_first=server.model, n=2, max_iter=3, backtracking=False)
    completion = coder.complete(CODE)
    run = coder.last_run
    assert run is not None
    assert [it["expanded"] for it in run.iterations] == [0, 1, 4]  # never back to 2
    assert completion == bad(1)  # the best it saw; nothing passed
    assert run.best is not None and not run.best.passed


def test_the_judge_analyzer_and_reviewer_metric_read_the_judges_rating(serve):
    from harness.coder.analyzers import Completion
    from harness.coder.analyzers.score import ScoreAnalyzer
    from harness.coder.metrics import PairRun, gpt_reviewer_score
    from harness.coder.pairs import Pair

    def script(body: dict[str, Any]) -> str:
        if "from 0" in body["messages"][0]["content"]:  # the judge's and the reviewer's prompts
            return "7 - it works but the name is poor."
        return fenced(GOOD)

    server = serve(script)
    (result,) = ScoreAnalyzer(server.model).analyze([Completion(CODE, GOOD)])
    assert result.type == "informative" and result.passed
    assert result.score == pytest.approx(-0.3) and result.details["rating"] == 7.0
    assert "```python\n" + GOOD in server.requests[0]["messages"][0]["content"]
    review = PairRun(Pair(CODE, GOOD, {}), GOOD, judge_model=server.model)
    assert gpt_reviewer_score(review) == pytest.approx(0.7)
    # an informative analyzer ranks conversations but never stops or blocks the search
    coder = Coder(analyzers=["mypy", "score"], judge_model=server.model, model_first=server.model)
    assert coder.complete(CODE) == GOOD
    assert coder.last_run is not None and coder.last_run.best is not None
    assert coder.last_run.best.results["score"].score == pytest.approx(-0.3)


def test_meta_temperature_samples_conversations_by_score():
    from harness.coder.analyzers import AnalyzerResult
    from harness.coder.search import Conversation

    def conversation(index: int, score: float) -> Conversation:
        result = AnalyzerResult("mypy", "critical", score, score == 0)
        return Conversation(index, [], completion=str(index), results={"mypy": result})

    queue = [conversation(1, -1.0), conversation(2, -3.0), conversation(3, -1.0)]
    greedy = Coder(analyzers=["mypy"], meta_temperature=0.0)
    assert greedy._pick(queue).index == 3  # the best score; the newest among equals
    picks = [
        Coder(analyzers=["mypy"], meta_temperature=1.0, seed=s)._pick(queue).index
        for s in range(200)
    ]
    counts = {i: picks.count(i) for i in (1, 2, 3)}
    assert all(counts.values())  # every conversation can be chosen
    assert counts[2] < min(counts[1], counts[3])  # e^-2 as likely as the better ones
