"""The reward server's HTTP routes (Starlette, served by uvicorn: :mod:`harness.service.server`).

- ``POST /v1/score``: ``{"items": [...], "deadline_s": 30}`` -> ``{"rows": [...]}``, one
  ``results.jsonl`` row with ``reward`` per item, in order.
- ``POST /get_reward``: OpenRLHF's ``--remote_rm_url`` body -> ``{"rewards", "scores",
  "extra_logs", "rows"}`` (:func:`harness.service.payloads.openrlhf_items`).
- ``GET /health``: 200 while serving, 503 while draining. ``GET /metrics``: JSON, or
  Prometheus text with ``?format=prometheus``.

Bad input gets a 4xx naming the field before anything is queued; a full queue a 429 and a
draining server a 503, both with ``Retry-After``; a request past its ``deadline_s`` a 504.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import math
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from harness.rewardapi.verl import neutral_scores
from harness.service.batcher import (
    Batcher,
    BoundedQueue,
    Draining,
    Pending,
    QueueFull,
    Reply,
    deadline_reply,
    input_error_field,
)
from harness.service.metrics import Metrics, prometheus_text
from harness.service.payloads import BadInput, Limits, decode_json, openrlhf_items, score_request

log = logging.getLogger(__name__)

# Checks items the way the engine will (task ids, inline problems) before they are queued.
Validator = Callable[[Sequence[Mapping[str, Any]]], None]


@dataclass
class ServiceState:
    """Everything the routes share."""

    queue: BoundedQueue
    batcher: Batcher
    metrics: Metrics
    limits: Limits
    validate: Validator | None = None
    token: str | None = None
    default_deadline_s: float | None = None
    drain_s: float = 120.0

    def retry_after_s(self) -> int:
        """How long until the queue has room: its samples at the recent rate, 1..60 s."""
        rate = self.metrics.samples_per_s()
        queued = self.queue.depth()["samples"]
        wait = queued / rate if rate > 0 else 5.0
        return int(min(60, max(1, math.ceil(wait))))


def build_app(state: ServiceState) -> Starlette:
    """The ASGI app; its lifespan starts the batcher and, on shutdown, drains it."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.batcher.start()
        yield
        # uvicorn has stopped accepting and waited for in-flight requests; serve what is left
        await asyncio.to_thread(state.batcher.drain_and_stop, state.drain_s)
        await asyncio.to_thread(state.batcher.engine.close)
        counts = state.metrics.snapshot(state.queue.depth())
        summary = ", ".join(
            f"{counts[name]} {name}" for name in ("accepted", "answered", "disconnected", "expired")
        )
        print(f"codeeval serve: stopped; requests: {summary}", file=sys.stderr, flush=True)

    routes = [
        Route("/v1/score", partial(score, state), methods=["POST"]),
        Route("/get_reward", partial(get_reward, state), methods=["POST"]),
        Route("/health", partial(health, state), methods=["GET"]),
        Route("/metrics", partial(metrics, state), methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def authorized(state: ServiceState, request: Request) -> bool:
    if state.token is None:
        return True
    header = request.headers.get("authorization", "")
    given = header[len("Bearer ") :] if header.startswith("Bearer ") else ""
    return hmac.compare_digest(given.encode(), state.token.encode())


def unauthorized_body() -> dict[str, Any]:
    return {"error": "unauthorized", "field": "Authorization", "message": "Bearer TOKEN needed"}


async def read_body(request: Request, limits: Limits) -> bytes:
    """The body, refused with a 413 as soon as it passes the limit (never held whole)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise BadInput(413, "body", f"{declared} bytes; at most {limits.max_body_bytes}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise BadInput(413, "body", f"more than {limits.max_body_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def score(state: ServiceState, request: Request) -> Response:
    async def items_of(body: Any) -> tuple[list[dict[str, Any]], float | None]:
        return score_request(body, state.limits)

    return await handle(state, request, items_of, lambda rows: {"rows": rows})


async def get_reward(state: ServiceState, request: Request) -> Response:
    suite = request.query_params.get("suite")

    async def items_of(body: Any) -> tuple[list[dict[str, Any]], float | None]:
        return openrlhf_items(body, state.limits, suite), state.default_deadline_s

    return await handle(state, request, items_of, openrlhf_body)


def openrlhf_body(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What OpenRLHF reads: ``rewards`` (and, in recent versions, ``scores`` and
    ``extra_logs``). Its reward tensor has no "missing" value, so a sample the harness could
    not judge gets the neutral score verl's adapter gives (the mean of its problem's judged
    samples in the request, else of the request), never 0, and ``unscored`` 1 in the logs;
    its row keeps ``reward: null``."""
    fills = neutral_scores(rows)
    rewards = [
        fill if row["reward"] is None else row["reward"]
        for row, fill in zip(rows, fills, strict=True)
    ]
    extra = {
        "pass_rate": [1.0 if row.get("passed") else 0.0 for row in rows],
        "unscored": [1.0 if row["reward"] is None else 0.0 for row in rows],
    }
    return {"rewards": rewards, "scores": rewards, "extra_logs": extra, "rows": rows}


async def handle(
    state: ServiceState,
    request: Request,
    items_of: Callable[[Any], Any],
    shape: Callable[[list[dict[str, Any]]], dict[str, Any]],
) -> Response:
    started = time.monotonic()
    reply = await answer(state, request, items_of)
    headers = {}
    if reply.status in (429, 503):
        headers["Retry-After"] = str(state.retry_after_s())
    if reply.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    body = shape(reply.body["rows"]) if reply.status == 200 else reply.body
    state.metrics.request_done(reply.status, time.monotonic() - started)
    return JSONResponse(body, status_code=reply.status, headers=headers)


async def answer(state: ServiceState, request: Request, items_of: Callable[[Any], Any]) -> Reply:
    if not authorized(state, request):
        return Reply(401, unauthorized_body())
    if state.queue.closed:
        return Reply(503, {"error": "draining", "message": "the server is shutting down"})
    try:
        items, deadline_s = await items_of(decode_json(await read_body(request, state.limits)))
        if state.validate is not None:
            await asyncio.to_thread(state.validate, items)
    except BadInput as exc:
        return Reply(exc.status, exc.body())
    except ClientDisconnect:
        state.metrics.count("disconnected")
        return Reply(499, {"error": "disconnected"})
    except Exception as exc:  # noqa: BLE001 - the engine's checks: a bad item, or a fault
        found = input_error_field(exc)
        if found is None:
            log.exception("checking a request failed", exc_info=exc)
            message = f"checking the request failed: {type(exc).__name__}: {exc}"
            return Reply(500, {"error": "internal", "message": message[:500]})
        message = getattr(exc, "message", str(exc))
        return Reply(422, {"error": "bad_input", "field": found, "message": message})
    deadline_s = deadline_s if deadline_s is not None else state.default_deadline_s
    return await enqueue_and_wait(state, request, items, deadline_s)


async def enqueue_and_wait(
    state: ServiceState, request: Request, items: list[dict[str, Any]], deadline_s: float | None
) -> Reply:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Reply] = loop.create_future()

    def deliver(reply: Reply) -> None:  # from the batcher thread
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result(reply))

    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    pending = Pending(items, deliver, deadline)
    try:
        state.queue.put(pending, state.retry_after_s())
    except QueueFull as exc:
        return Reply(429, {"error": "queue_full", "message": str(exc)})
    except Draining:
        return Reply(503, {"error": "draining", "message": "the server is shutting down"})
    state.metrics.count("accepted")
    gone = asyncio.ensure_future(wait_disconnect(request))
    try:
        done, _ = await asyncio.wait(
            {future, gone}, timeout=deadline_s, return_when="FIRST_COMPLETED"
        )
    finally:
        gone.cancel()
    if future in done:
        state.metrics.count("answered")
        return future.result()
    pending.abandoned = True  # not scored if the batcher has not taken it yet
    if gone in done:
        state.metrics.count("disconnected")
        return Reply(499, {"error": "disconnected"})
    state.metrics.count("expired")
    state.metrics.count("answered")  # with the 504
    return deadline_reply()


async def wait_disconnect(request: Request) -> None:
    """Returns when the client has gone (the body is read: the next message is the end)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def health(state: ServiceState, request: Request) -> Response:
    draining = state.queue.closed
    body = {"status": "draining" if draining else "ok", "queue": state.queue.depth()}
    return JSONResponse(body, status_code=503 if draining else 200)


async def metrics(state: ServiceState, request: Request) -> Response:
    if not authorized(state, request):
        return JSONResponse(unauthorized_body(), 401, headers={"WWW-Authenticate": "Bearer"})
    snapshot = state.metrics.snapshot(state.queue.depth())
    if request.query_params.get("format") == "prometheus":
        return PlainTextResponse(prometheus_text(snapshot))
    return JSONResponse(snapshot)
