"""``codeeval serve``: the reward server on uvicorn, its settings and its command line.

    codeeval serve --port 8765 --reward weighted --workers 2
    codeeval serve --host 0.0.0.0 --token-file /run/secrets/codeeval   # a token off loopback

Inline problems (their tests run as trusted code) are accepted on loopback and refused when
the server listens beyond it, unless ``--allow-inline`` says otherwise.

SIGTERM drains: the server answers new requests 503 for half a second (so a connection the
kernel has queued is answered, not reset), stops accepting, waits for the requests it has
accepted (their rows come from the batcher, which keeps running), then runs the app's shutdown,
which scores anything still queued and closes the engine. No accepted request is lost.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.rewardapi.neutral import DEFAULT_NEUTRAL
from harness.service.batcher import Batcher, BoundedQueue, ScoringEngine
from harness.service.header_deadline import header_deadline_protocol
from harness.service.metrics import Metrics
from harness.service.payloads import Limits

if TYPE_CHECKING:  # the app needs starlette, which `codeeval --help` does not
    from harness.service.app import ServiceState

TOKEN_ENV = "CODEEVAL_SERVE_TOKEN"


@dataclass
class ServeSettings:
    """How the server runs; the command line sets each field."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    reward: str | None = None
    workers: int = 2
    executor: str = "local"
    data_dir: Path | None = None
    max_queue_samples: int = 4096
    max_batch_samples: int = 256
    default_deadline_s: float | None = None
    drain_s: float = 120.0
    max_connections: int = 1000  # past this uvicorn answers 503: no file descriptors run out
    # A connection whose request line and headers have not all come by then is closed (408):
    # one that trickles them would hold one of max_connections for as long as it liked.
    header_timeout_s: float = 10.0
    limits: Limits = field(default_factory=Limits)
    log_level: str = "warning"
    # Inline problems: None accepts them on loopback and refuses them beyond it.
    allow_inline: bool | None = None
    neutral: float = DEFAULT_NEUTRAL  # OpenRLHF's score of an unjudged sample, when nothing else

    def inline_allowed(self) -> bool:
        return is_loopback(self.host) if self.allow_inline is None else self.allow_inline


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(settings: ServeSettings) -> None:
    """Off loopback, a token is required: anyone who can reach the port could run code."""
    if not is_loopback(settings.host) and not settings.token:
        raise SystemExit(
            f"codeeval serve: --host {settings.host} is reachable from other machines; "
            f"give a token (--token-file FILE or ${TOKEN_ENV}) so only your trainers can call it"
        )


def default_engine(settings: ServeSettings) -> tuple[ScoringEngine, Any]:
    """The public reward engine and its validator (the engine's own item and task checks)."""
    from harness.rewardapi import RewardEngine
    from harness.rewardapi.items import check_items

    engine = RewardEngine(
        reward=settings.reward,
        workers=settings.workers,
        data_dir=settings.data_dir,
        executor=settings.executor,
        allow_inline=settings.inline_allowed(),
    )

    def validate(items: Any) -> None:
        checked = check_items(items)
        # building a problem takes turns with the batches (RewardEngine.exclusive); task ids of
        # loaded suites are lookups, so such requests are checked at once
        with engine.exclusive(engine.problems.needs_building(checked)):
            engine.problems.resolve(checked)

    return engine, validate


def suite_check(engine: Any) -> Any:
    """The check of a suite name the engine's own resolver makes (None: no such resolver)."""
    problems = getattr(engine, "problems", None)
    if problems is None or not hasattr(problems, "suite"):
        return None

    def check(name: str) -> None:
        with engine.exclusive():
            problems.suite(name, "suite")

    return check


def lowest_reward(engine: Any) -> float | None:
    """The lowest reward the engine's reward config gives (0 for an engine without one)."""
    reward = getattr(engine, "reward", None)
    if reward is None:
        return 0.0
    from harness.reward import least_reward

    return least_reward(reward)


def make_state(
    settings: ServeSettings, engine: ScoringEngine, validate: Any = None
) -> ServiceState:
    from harness.service.app import ServiceState

    metrics = Metrics()
    queue = BoundedQueue(settings.max_queue_samples)
    batcher = Batcher(engine, queue, metrics, settings.max_batch_samples)
    limits = dataclasses.replace(
        settings.limits, allow_inline=settings.limits.allow_inline and settings.inline_allowed()
    )
    return ServiceState(
        queue=queue,
        batcher=batcher,
        metrics=metrics,
        limits=limits,
        validate=validate,
        token=settings.token,
        default_deadline_s=settings.default_deadline_s,
        drain_s=settings.drain_s,
        check_suite=suite_check(engine),
        neutral=settings.neutral,
        lowest=lowest_reward(engine),
    )


def make_server(state: ServiceState, settings: ServeSettings) -> Any:
    import uvicorn

    from harness.service.app import build_app

    config = uvicorn.Config(
        build_app(state),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        timeout_graceful_shutdown=settings.drain_s,
        limit_concurrency=settings.max_connections,
        http=header_deadline_protocol(settings.header_timeout_s),
        access_log=False,
    )
    return _draining_server_class()(config, state)


# How long a stopping server still answers (503, "draining") before it stops listening.
DRAIN_GRACE_S = 0.5


@functools.cache
def _draining_server_class() -> type:
    import uvicorn

    class DrainingServer(uvicorn.Server):
        """uvicorn's server, which on SIGTERM closes its socket at once: connections the kernel
        had queued for it, and accepted ones whose request was still arriving, were reset (two
        of eight clients under load). This one refuses new work first (503 with Retry-After)
        and keeps answering for a moment, so they get a reply, then shuts down as uvicorn does."""

        def __init__(self, config: Any, state: ServiceState) -> None:
            super().__init__(config)
            self.state = state

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            self.state.queue.close()  # from here a new request is answered 503 "draining"
            await asyncio.sleep(DRAIN_GRACE_S)
            await super().shutdown(sockets)

    return DrainingServer


def serve(settings: ServeSettings, sock: socket.socket | None = None) -> None:
    """Run until SIGTERM or SIGINT (then drain). ``sock``: an already bound socket."""
    check_exposure(settings)
    engine, validate = default_engine(settings)
    server = make_server(make_state(settings, engine, validate), settings)
    threading.Thread(target=announce, args=(server,), daemon=True).start()
    server.run(sockets=[sock] if sock is not None else None)


@contextlib.contextmanager
def serve_in_thread(
    settings: ServeSettings, engine: ScoringEngine | None = None, validate: Any = None
) -> Iterator[tuple[str, ServiceState]]:
    """A real server on a free loopback port in a thread of this process (tests, benchmarks,
    a trainer that wants the service beside it): yields its URL and state; drains on exit."""
    if engine is None:
        engine, validate = default_engine(settings)
    state = make_state(settings, engine, validate)
    server = make_server(state, settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((settings.host, 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the reward server did not start")
        time.sleep(0.02)
    try:
        yield f"http://{settings.host}:{sock.getsockname()[1]}", state
    finally:
        server.should_exit = True
        thread.join(settings.drain_s + 30)


def announce(server: Any) -> None:
    """One line with the address once the server listens (``--port 0`` picks a free port)."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    print(f"codeeval serve: listening on http://{host}:{port}", flush=True)


def add_serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="a long-running reward server for trainers (HTTP)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--token-file", type=Path, help=f"the bearer token (else ${TOKEN_ENV})")
    p.add_argument("--reward", default=None, help="a preset or reward YAML (default: binary)")
    p.add_argument("--workers", type=int, default=2, help="warm judging processes")
    p.add_argument("--executor", choices=("local", "ray"), default="local")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--max-queue-samples", type=int, default=4096, help="past this: 429")
    p.add_argument("--max-batch-samples", type=int, default=256)
    p.add_argument("--max-body-mb", type=float, default=8.0)
    p.add_argument(
        "--body-timeout-s",
        type=float,
        default=Limits.body_timeout_s,
        help="a client that has not sent its whole body by then gets 408 (frees its connection)",
    )
    p.add_argument("--max-items", type=int, default=1024, help="items per request; past this: 413")
    p.add_argument(
        "--allow-inline",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="accept inline problems (their tests run as trusted code); default: on loopback "
        "only, refused when --host reaches beyond it",
    )
    p.add_argument(
        "--max-inline-problems",
        type=int,
        default=32,
        help="distinct inline problems per request; past this: 413",
    )
    p.add_argument(
        "--neutral-reward",
        type=float,
        default=DEFAULT_NEUTRAL,
        help="OpenRLHF's score of an unjudged sample when nothing has been judged yet",
    )
    p.add_argument("--deadline-s", type=float, default=None, help="default per-request deadline")
    p.add_argument("--drain-s", type=float, default=120.0, help="longest drain on SIGTERM")
    p.add_argument("--max-connections", type=int, default=1000, help="past this: 503")
    p.add_argument(
        "--header-timeout-s",
        type=float,
        default=ServeSettings.header_timeout_s,
        help="a connection that has not sent a request's headers by then is closed (408)",
    )
    p.add_argument("--log-level", default="warning")


def settings_from_args(args: argparse.Namespace) -> ServeSettings:
    """The settings ``codeeval serve``'s command line asks for."""
    token = args.token_file.read_text().strip() if args.token_file else os.environ.get(TOKEN_ENV)
    return ServeSettings(
        host=args.host,
        port=args.port,
        token=token or None,
        reward=args.reward,
        workers=args.workers,
        executor=args.executor,
        data_dir=args.data_dir,
        max_queue_samples=args.max_queue_samples,
        max_batch_samples=args.max_batch_samples,
        default_deadline_s=args.deadline_s,
        drain_s=args.drain_s,
        max_connections=args.max_connections,
        header_timeout_s=args.header_timeout_s,
        limits=Limits(
            max_body_bytes=int(args.max_body_mb * 1024 * 1024),
            body_timeout_s=args.body_timeout_s,
            max_items=args.max_items,
            max_inline_problems=args.max_inline_problems,
        ),
        log_level=args.log_level,
        allow_inline=args.allow_inline,
        neutral=args.neutral_reward,
    )


def run_serve(args: argparse.Namespace) -> int:
    serve(settings_from_args(args))
    return 0
