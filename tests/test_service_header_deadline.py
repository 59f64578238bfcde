"""The deadline on a request's headers (harness.service.header_deadline), on real uvicorn
servers over loopback, with both of uvicorn's HTTP protocols (h11 and, where installed,
httptools) and through ``codeeval serve``'s own server."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from harness.service.header_deadline import header_deadline_protocol
from harness.service.server import ServeSettings, serve_in_thread

DEADLINE_S = 0.6
PROTOCOLS = [pytest.param(H11Protocol, id="h11")]
if importlib.util.find_spec("httptools") is not None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    PROTOCOLS.append(pytest.param(HttpToolsProtocol, id="httptools"))


async def slow_app(scope, receive, send) -> None:  # noqa: ANN001 - the ASGI signature
    """Answers ``/slow`` after twice the deadline (a request in progress is never cut)."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/slow":
        await asyncio.sleep(2 * DEADLINE_S)
    headers = [(b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


@contextlib.contextmanager
def server(protocol: type) -> Iterator[tuple[str, int]]:
    config = uvicorn.Config(
        slow_app,
        host="127.0.0.1",
        port=0,
        http=header_deadline_protocol(DEADLINE_S, protocol),
        log_level="error",
        lifespan="off",
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not running.started:
        time.sleep(0.01)
    try:
        yield sock.getsockname()
    finally:
        running.should_exit = True
        thread.join(10)


def read_until_closed(conn: socket.socket) -> tuple[bytes, float]:
    """What the server sent until it closed the connection, and how long that took."""
    started, answer = time.monotonic(), b""
    while chunk := conn.recv(4096):
        answer += chunk
    return answer, time.monotonic() - started


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_headers_trickled_get_408_and_the_connection_closed(protocol: type) -> None:
    with server(protocol) as address, socket.create_connection(address, timeout=10) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # and then nothing more
        answer, waited = read_until_closed(slow)
        fine = httpx.get(f"http://{address[0]}:{address[1]}/", timeout=10)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert DEADLINE_S * 0.8 <= waited < 5, waited
    assert fine.status_code == 200


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_silent_connection_is_closed_without_an_answer(protocol: type) -> None:
    """Nothing sent (a new connection, or an idle keep-alive one): closed, no stray 408 that
    a client reusing the connection could take for its next request's answer."""
    with server(protocol) as address, socket.create_connection(address, timeout=10) as idle:
        answer, waited = read_until_closed(idle)
    assert answer == b""
    assert waited < 5


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_request_in_time_is_answered_however_long_it_takes(protocol: type) -> None:
    """The deadline is on the headers: a slow answer, and a second request on the same
    keep-alive connection, are untouched."""
    with server(protocol) as address:
        with httpx.Client(base_url=f"http://{address[0]}:{address[1]}", timeout=10) as client:
            first = client.get("/slow")
            second = client.get("/slow")
    assert (first.status_code, first.text) == (200, "ok")
    assert (second.status_code, second.text) == (200, "ok")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_keep_alive_connection_trickling_its_next_request_gets_408(protocol: type) -> None:
    with server(protocol) as address, socket.create_connection(address, timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while not first.endswith(b"ok"):
            first += conn.recv(4096)
        conn.sendall(b"GET / HTTP/1.1\r\nHo")  # the next request, never finished
        answer, _ = read_until_closed(conn)
    assert first.startswith(b"HTTP/1.1 200")
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_codeeval_serve_closes_a_connection_trickling_its_headers() -> None:
    settings = ServeSettings(workers=0, header_timeout_s=DEADLINE_S)
    with serve_in_thread(settings) as (url, _):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as slow:
            slow.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\n")
            answer, waited = read_until_closed(slow)
        health = httpx.get(f"{url}/health", timeout=10)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert waited < 5
    assert health.status_code == 200
