"""The reward server's HTTP routes (Starlette, served by uvicorn: :mod:`harness.service.server`).

- ``POST /v1/score``: ``{"items": [...], "deadline_s": 30}`` -> ``{"rows": [...]}``, one
  ``results.jsonl`` row with ``reward`` per item, in order.
- ``POST /get_reward``: OpenRLHF's ``--reward.remote_url`` body -> ``{"rewards", "scores",
  "extra_logs", "rows"}`` (:func:`harness.service.payloads.openrlhf_samples`). A sample whose
  data cannot be judged is masked (neutral score, ``extra_logs.unscored`` 1), never a 4xx:
  OpenRLHF retries a 4xx and then trains without the sample's reward. A response past the
  size limit is not masked but failed, at the reward config's lowest reward, on both routes
  (:func:`overlong_row`): the model chose its length.
- ``GET /health``: 200 while serving, 503 while draining. ``GET /metrics``: JSON, or
  Prometheus text with ``?format=prometheus``.

Bad input gets a 4xx naming the field before anything is queued (never a 500); a full queue a
429 and a draining server a 503, both with ``Retry-After``; a request past its ``deadline_s``
a 504.
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
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from harness.rewardapi.codedata import suite_for
from harness.rewardapi.engine import log_unjudged, masked_row
from harness.rewardapi.neutral import DEFAULT_NEUTRAL, RunningMeans, neutral_scores
from harness.service.answers import Answer
from harness.service.batcher import (
    Batcher,
    BoundedQueue,
    Draining,
    Pending,
    QueueFull,
    Reply,
    deadline_reply,
    input_error_field,
    numbered,
)
from harness.service.metrics import Metrics, prometheus_text
from harness.service.payloads import (
    BadInput,
    Limits,
    OpenRLHFSample,
    decode_json,
    openrlhf_samples,
    overlong,
    score_request,
)

log = logging.getLogger(__name__)

# Checks items the way the engine will (task ids, inline problems) before they are queued.
Validator = Callable[[Sequence[Mapping[str, Any]]], None]
# Checks a suite name (OpenRLHF's ?suite=) the way the engine will.
SuiteCheck = Callable[[str], None]


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
    check_suite: SuiteCheck | None = None
    neutral: float = DEFAULT_NEUTRAL  # OpenRLHF's score of an unjudged sample, when nothing else
    lowest: float | None = 0.0  # the reward config's lowest: a completion past the size limit
    running: RunningMeans = field(default_factory=RunningMeans)

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
    """The body, refused with a 413 as soon as it passes the limit (never held whole), and
    with a 408 when it has not all come within ``limits.body_timeout_s``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise BadInput(413, "body", f"{declared} bytes; at most {limits.max_body_bytes}")
    chunks: list[bytes] = []

    async def collect() -> None:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limits.max_body_bytes:
                raise BadInput(413, "body", f"more than {limits.max_body_bytes} bytes")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(collect(), limits.body_timeout_s)  # asyncio.timeout: 3.11+
    except asyncio.TimeoutError:
        raise BadInput(
            408, "body", f"not received in {limits.body_timeout_s:g} s (sent too slowly)"
        ) from None
    return b"".join(chunks)


async def score(state: ServiceState, request: Request) -> Response:
    return await respond(state, answer(state, request))


async def get_reward(state: ServiceState, request: Request) -> Response:
    return await respond(state, openrlhf_answer(state, request))


async def respond(state: ServiceState, work: Any) -> Response:
    """Await ``work`` (a :class:`Reply`), count it, and answer with its headers."""
    started = time.monotonic()
    reply = await work
    headers = {}
    if reply.status in (429, 503):
        headers["Retry-After"] = str(state.retry_after_s())
    if reply.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    state.metrics.request_done(reply.status, time.monotonic() - started)
    return Answer(reply.body, status_code=reply.status, headers=headers)


def openrlhf_body(
    rows: list[dict[str, Any]],
    running: RunningMeans | None = None,
    neutral: float = DEFAULT_NEUTRAL,
) -> dict[str, Any]:
    """What OpenRLHF reads: ``rewards``, ``scores`` and ``extra_logs`` (one list entry per
    sample; its agent path sends one). Its reward tensor has no "missing" value, so a sample
    the harness could not judge gets the neutral score of :mod:`harness.rewardapi.neutral`
    (the mean of its problem's judged samples in the request, else on this server, else of
    the request, else of the server, else ``neutral``), never 0, and ``unscored`` 1 in the
    logs; its row keeps ``reward: null`` and says why in ``error``."""
    if running is not None:
        running.add(rows)
    fills = neutral_scores(rows, running, neutral)
    rewards = [
        fill if row["reward"] is None else row["reward"]
        for row, fill in zip(rows, fills, strict=True)
    ]
    extra = {
        "pass_rate": [1.0 if row.get("passed") else 0.0 for row in rows],
        "unscored": [1.0 if row["reward"] is None else 0.0 for row in rows],
    }
    return {"rewards": rewards, "scores": rewards, "extra_logs": extra, "rows": rows}


def refused(state: ServiceState, request: Request) -> Reply | None:
    if not authorized(state, request):
        return Reply(401, unauthorized_body())
    if state.queue.closed:
        return Reply(503, {"error": "draining", "message": "the server is shutting down"})
    return None


def bad_input(field_name: str, message: str, status: int = 422) -> Reply:
    return Reply(status, {"error": "bad_input", "field": field_name, "message": message})


def check_each(validate: Validator, items: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Per item, ``("", "")`` when the engine would take it, else (the field within the item,
    such as ``.task_id``, the message). Whatever the check raises names its item: bad input is
    never an error 500."""
    found = []
    for item in items:
        try:
            validate([item])
            found.append(("", ""))
        except Exception as exc:  # noqa: BLE001 - the engine's checks: a bad item, or a fault
            name = input_error_field(exc)
            if name is None:
                log.warning("checking an item failed", exc_info=exc)
                message = f"could not be read: {type(exc).__name__}: {exc}"[:500]
                found.append(("", message))
            else:
                found.append((name.removeprefix("items[0]"), getattr(exc, "message", str(exc))))
    return found


async def answer(state: ServiceState, request: Request) -> Reply:
    """A ``/v1/score`` request: its rows, or the 4xx of its first bad item."""
    arrived = time.monotonic()  # a deadline counts from here, checks included
    early = refused(state, request)
    if early is not None:
        return early
    try:
        items, deadline_s = score_request(
            decode_json(await read_body(request, state.limits)), state.limits
        )
    except BadInput as exc:
        return Reply(exc.status, exc.body())
    except ClientDisconnect:
        state.metrics.count("disconnected")
        return Reply(499, {"error": "disconnected"})
    # A completion past the size limit fails without running: the model's output, not the
    # client's error, so the rest of the batch is judged as usual.
    too_long = {
        i: reason
        for i, item in enumerate(items)
        if (reason := overlong(item.get("completion"), f"items[{i}]", state.limits))
    }
    if state.validate is not None:
        checks = await asyncio.to_thread(check_each, state.validate, items)
        for i, (where, message) in enumerate(checks):
            if message:
                return bad_input(f"items[{i}]{where}", message)
    deadline_s = deadline_s if deadline_s is not None else state.default_deadline_s
    if not too_long:
        return await enqueue_and_wait(state, request, items, deadline_s, arrived)
    wanted = [item for i, item in enumerate(items) if i not in too_long]
    scored: list[dict[str, Any]] = []
    if wanted:
        reply = await enqueue_and_wait(state, request, wanted, deadline_s, arrived)
        if reply.status != 200:
            return reply
        scored = reply.body["rows"]
    failed = {
        i: overlong_row(
            str(items[i].get("suite") or ""),
            str(items[i].get("task_id") or ""),
            items[i].get("completion"),
            reason,
            state.lowest,
        )
        for i, reason in too_long.items()
    }
    return Reply(200, {"rows": in_order(failed, scored, len(items))})


def overlong_row(
    suite: str, task_id: str, completion: Any, reason: str, reward: float | None
) -> dict[str, Any]:
    """The row of a sample whose completion is past the size limit: a masked row's fields,
    but failed, not run, at the reward config's lowest reward (a model must not escape its
    score by writing more)."""
    log_unjudged(log, reason, "failed at the lowest reward")
    row = masked_row(suite, task_id, completion, reason)
    return {**row, "status": "failed", "error_kind": None, "reward": reward}


def in_order(
    others: Mapping[int, dict[str, Any]], scored: list[dict[str, Any]], count: int
) -> list[dict[str, Any]]:
    """A request's ``count`` rows in its items' order, numbered: ``others`` (the rows of items
    that were not judged) at their positions, the judged rows, in order, everywhere else."""
    judged = iter(scored)
    return numbered([others[i] if i in others else next(judged) for i in range(count)])


async def openrlhf_answer(state: ServiceState, request: Request) -> Reply:
    """An OpenRLHF request: every sample gets a reward. One whose data cannot be judged (an
    unknown task id or suite in its label, a label that cannot be read) is masked with its
    reason; only a request OpenRLHF could not have meant (a bad body, ``?suite=`` naming no
    suite, an empty label: ``--data.label_key`` unset) gets a 4xx, and the log says why."""
    arrived = time.monotonic()
    early = refused(state, request)
    if early is not None:
        return early
    suite = request.query_params.get("suite")
    try:
        if suite is not None:
            suite = suite_for(suite)
            if state.check_suite is not None:
                await asyncio.to_thread(state.check_suite, suite)
        raw = decode_json(await read_body(request, state.limits))
        samples = openrlhf_samples(raw, state.limits, suite)
    except BadInput as exc:
        log.warning("codeeval serve: refused an OpenRLHF request: %s: %s", exc.field, exc.message)
        return Reply(exc.status, exc.body())
    except ClientDisconnect:
        state.metrics.count("disconnected")
        return Reply(499, {"error": "disconnected"})
    except Exception as exc:  # noqa: BLE001 - the suite check
        message = getattr(exc, "message", str(exc))
        message = f"{message}; set ?suite= in --reward.remote_url to one of them"
        log.warning("codeeval serve: refused an OpenRLHF request: suite: %s", message)
        return bad_input("suite", message, 400)
    if state.validate is not None:
        wanted = [(i, s) for i, s in enumerate(samples) if s.item is not None]
        checks = await asyncio.to_thread(check_each, state.validate, [s.item for _, s in wanted])
        for (i, sample), (where, message) in zip(wanted, checks, strict=True):
            if message:
                sample.reason = f"labels[{i}]{where}: {message}"
                sample.item = None
    judged = [s for s in samples if s.item is not None]
    scored: list[dict[str, Any]] = []
    if judged:
        reply = await enqueue_and_wait(
            state, request, [s.item for s in judged if s.item], state.default_deadline_s, arrived
        )
        if reply.status != 200:
            return reply
        scored = reply.body["rows"]
    rows = assemble(samples, scored, state.lowest)
    return Reply(200, openrlhf_body(rows, state.running, state.neutral))


def assemble(
    samples: list[OpenRLHFSample], scored: list[dict[str, Any]], lowest: float | None
) -> list[dict[str, Any]]:
    """The request's rows in order: the judged ones, a failed row for each overlong one (at
    the ``lowest`` reward), and a masked row for each other sample."""
    others: dict[int, dict[str, Any]] = {}
    for i, sample in enumerate(samples):
        if sample.item is not None:
            continue
        fields = (sample.suite, sample.task_id, sample.completion, sample.reason)
        if sample.overlong:
            others[i] = overlong_row(*fields, lowest)
        else:
            log_unjudged(log, sample.reason)
            others[i] = masked_row(*fields)
    return in_order(others, scored, len(samples))


async def enqueue_and_wait(
    state: ServiceState,
    request: Request,
    items: list[dict[str, Any]],
    deadline_s: float | None,
    arrived: float | None = None,
) -> Reply:
    """Queue the items and wait for their rows; ``deadline_s`` counts from ``arrived`` (when
    the request came in: its checks may have waited for a batch to build problems)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Reply] = loop.create_future()

    def deliver(reply: Reply) -> None:  # from the batcher thread
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result(reply))

    now = time.monotonic()
    deadline = None if deadline_s is None else (arrived or now) + deadline_s
    if deadline is not None and deadline <= now:
        state.metrics.count("expired")
        state.metrics.count("answered")
        return deadline_reply()
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
            {future, gone},
            timeout=None if deadline is None else deadline - now,
            return_when="FIRST_COMPLETED",
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
