"""A suite without its mirror falls back to the Hugging Face hub (suites/hub.py): an endpoint
that gives no answer fails the load within seconds, naming the mirror's folder and what to do;
one that answers anything lets the library go on; offline mode asks nothing."""

from __future__ import annotations

import errno
import http.server
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from suites import hub
from suites.registry import load_suite

# The libraries' own retries took about 26 s here for one suite; the probe's refusal, well
# under a second. The bound leaves room for a slow machine, not for the retries.
FAST_S = 10.0


@pytest.fixture(autouse=True)
def _online_and_unprobed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in hub.OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    hub._reached.clear()
    yield
    hub._reached.clear()


@pytest.fixture
def closed_endpoint(monkeypatch: pytest.MonkeyPatch) -> str:
    """A loopback address nothing listens on: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    return endpoint


class _Answers404(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_HEAD(self) -> None:  # noqa: N802 - the http.server name
        self.seen.append(f"HEAD {self.path}")
        self.send_response(404)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def answering_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers404)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint + "/")
    _Answers404.seen = []
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("suite", "mirror"),
    [
        ("humaneval-plus", "evalplus/HumanEvalPlus"),
        ("classeval", "ClassEval_data.json"),
        ("coophumaneval", "CoopHumanEval.jsonl"),
        ("livecodebench", "livecodebench/"),
        ("codecontests", "code_contests/"),
    ],
)
def test_an_unreachable_hub_fails_the_load_within_seconds(
    suite: str, mirror: str, closed_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODEEVAL_DATA_DIR", raising=False)  # no mirror anywhere
    started = time.monotonic()
    with pytest.raises(ValueError) as caught:  # SuiteError, or a loader's SuiteDataError
        load_suite(suite, data_dir=tmp_path)
    assert time.monotonic() - started < FAST_S
    message = str(caught.value)
    assert mirror in message  # where the mirror would go
    assert f"hub at {closed_endpoint} cannot be reached" in message
    assert "HF_HUB_OFFLINE=1" in message


def test_a_hub_that_answers_anything_is_there(answering_endpoint: str) -> None:
    hub.check_hub_reachable()
    assert _Answers404.seen == ["HEAD /"]
    hub.check_hub_reachable()  # asked once per process
    assert _Answers404.seen == ["HEAD /"]


def test_a_refusal_is_not_remembered(closed_endpoint: str) -> None:
    for _ in range(2):  # the network may come back: each load asks again
        with pytest.raises(hub.HubUnreachable):
            hub.check_hub_reachable()
    assert closed_endpoint not in hub._reached


@pytest.mark.parametrize("name", hub.OFFLINE_VARIABLES)
@pytest.mark.parametrize("value", ["1", "true", "ON", " yes "])
def test_offline_mode_asks_nothing(
    name: str, value: str, closed_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    hub.check_hub_reachable()  # the libraries read their own cache, failing fast themselves


@pytest.mark.parametrize("value", ["", "0", "false", "off"])
def test_offline_mode_unset_still_asks(
    value: str, closed_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    with pytest.raises(hub.HubUnreachable):
        hub.check_hub_reachable()


@pytest.mark.parametrize(
    ("reason", "nothing"),
    [
        (socket.gaierror(-2, "Name or service not known"), True),
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), True),
        (TimeoutError("timed out"), True),
        (OSError(errno.ENETUNREACH, "Network is unreachable"), True),
        (OSError(errno.EHOSTUNREACH, "No route to host"), True),
        # Something answered: the libraries, with their own proxies and certificates, decide.
        (ssl.SSLCertVerificationError(1, "self-signed certificate in chain"), False),
        (ConnectionResetError(errno.ECONNRESET, "reset by peer"), False),
        (OSError(errno.EACCES, "Permission denied"), False),
        ("unknown url type: ftp", False),
    ],
)
def test_only_a_sure_sign_of_nothing_there_fails_fast(reason: object, nothing: bool) -> None:
    assert hub.nothing_there(reason) is nothing


def test_a_server_that_answers_garbage_is_left_to_the_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as server:  # accepts, then hangs up without a word of HTTP
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")

        def hang_up() -> None:
            connection, _ = server.accept()
            connection.close()

        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        hub.check_hub_reachable()
        thread.join(5)


def test_an_endpoint_that_is_no_url_is_left_to_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "huggingface.co")  # no scheme: urllib cannot ask it
    hub.check_hub_reachable()
