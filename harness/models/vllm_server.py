"""A vLLM OpenAI-compatible server that the harness starts, uses and always stops.

``--llm-model vllm-server:MODEL`` starts ``python -m vllm.entrypoints.openai.api_server`` for
MODEL's weights on a free loopback port, waits until it answers, generates through the
project's OpenAI client with many requests in flight, and stops the server's whole process
group at the end: on success, on failure, on Ctrl-C, and (through the parent-death signal)
when the harness itself is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness.models.base import Generation, GenerationSettings, Prompt
from harness.models.openai_http import Endpoint, OpenAIBackend
from harness.models.registry import ModelSpec
from harness.models.vllm_backend import (
    ROWS_PER_CALL,
    VLLMUnavailable,
    engine_kwargs,
    vllm_status,
)

READY_TIMEOUT_S = 600.0
# Requests in flight: vLLM batches whatever is waiting, so more in flight is a fuller batch.
IN_FLIGHT = 64


class ServerError(RuntimeError):
    """The server did not start or died (the message holds the end of its log)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_arguments(settings: dict[str, Any]) -> list[str]:
    """Engine settings as the server's flags: ``max_model_len=4096`` -> ``--max-model-len 4096``."""
    flags: list[str] = []
    for key, value in settings.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is not False and value is not None:
            flags += [flag, str(value)]
    return flags


def _die_with_parent() -> None:
    """In the child before exec: its own process group, and SIGTERM when the parent dies."""
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class VLLMServer:
    """One vLLM server process (group) serving ``folder`` as ``served_name``."""

    def __init__(self, folder: str, served_name: str, settings: dict[str, Any]) -> None:
        self.folder = folder
        self.served_name = served_name
        self.settings = settings
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.folder,
            "--served-model-name",
            self.served_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--seed",
            "0",
            *server_arguments(self.settings),
        ]

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> VLLMServer:
        self.port = free_port()
        handle, name = tempfile.mkstemp(prefix="codeeval-vllm-server-", suffix=".log")
        self.log_path = Path(name)
        env = {**os.environ, "VLLM_LOGGING_LEVEL": os.environ.get("VLLM_LOGGING_LEVEL", "INFO")}
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - setsid + prctl, no locks taken
        )
        os.close(handle)
        atexit.register(self.stop)
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError(
                    f"the vLLM server exited with status {self.process.returncode} before it "
                    f"was ready; the end of its log ({self.log_path}):\n{self.log_tail()}"
                )
            with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            time.sleep(0.5)
        raise ServerError(
            f"the vLLM server did not answer {url} within {timeout_s:.0f} s; the end of its "
            f"log ({self.log_path}):\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 25) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self, grace_s: float = 15.0) -> None:
        """Stop the server's process group: SIGTERM, then SIGKILL after ``grace_s``."""
        process, self.process = self.process, None
        if process is None:
            return
        atexit.unregister(self.stop)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # Workers of the engine may outlive the server's main process: end the group, and
        # return once it is gone (its memory and cores are free for what comes next).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            time.sleep(0.1)

    def __enter__(self) -> VLLMServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServerBackend:
    """The OpenAI client in front of a :class:`VLLMServer` it owns (``close`` stops it)."""

    rows_per_call = ROWS_PER_CALL

    def __init__(self, server: VLLMServer, client: OpenAIBackend) -> None:
        self.server = server
        self.client = client
        self.name = client.name
        self.default_style = client.default_style
        self.stop = client.stop
        self.instruction = client.instruction

    @classmethod
    def from_spec(cls, spec: ModelSpec, timeout_s: float = READY_TIMEOUT_S) -> ServerBackend:
        from harness.models.loading import resolve_folder

        status = vllm_status()
        if not status.usable:
            raise VLLMUnavailable(f"vllm-server:{spec.name}: {status.reason}")
        folder, _ = resolve_folder(spec.name)
        server = VLLMServer(folder, spec.name, engine_kwargs(spec, status.device))
        print(f"codeeval: starting a vLLM server for {spec.name} ...", file=sys.stderr)
        server.start(timeout_s)
        return cls(server, OpenAIBackend.from_spec(spec, Endpoint(server.base_url, spec.name)))

    def generate(
        self, prompts: list[Prompt], settings: GenerationSettings
    ) -> list[list[Generation]]:
        import dataclasses

        busy = dataclasses.replace(settings, batch_size=max(settings.batch_size, IN_FLIGHT))
        return self.client.generate(prompts, busy)

    def close(self) -> None:
        self.server.stop()
