"""The trusted side of the sandbox: owns one fork server and turns requests into executions.

One :class:`Sandbox` per pytest-xdist worker, reused for thousands of samples. ``run`` never
raises for anything a sample does; when the server itself fails (cannot start, dies, stops
answering) it is restarted and the sample comes back with ``infra_error`` set.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from typing import Any

from harness.sandbox import bwrap
from harness.sandbox.api import (
    CaseExecution,
    SampleExecution,
    SampleRequest,
    SandboxSettings,
)
from harness.sandbox.decode import ReplyError, assemble

log = logging.getLogger("codeeval.sandbox")
START_TIMEOUT_S = 60.0  # two shared cores: a cold start can be slow
REPLY_SLACK_S = 15.0  # on top of the sample budget: cleanup, coverage, a loaded machine
_LEN = struct.Struct(">I")
_warned = False
_warn_lock = threading.Lock()


def _warn_no_bwrap() -> None:
    """Say once per process that only the in-process guards are active."""
    global _warned
    with _warn_lock:
        if not _warned:
            _warned = True
            log.warning(
                "codeeval sandbox: bubblewrap (bwrap) is not usable here; running candidates "
                "with resource limits and a private folder only (no network or file system "
                "isolation)"
            )


class InfraError(Exception):
    """The fork server failed (not the sample's fault)."""


class Sandbox:
    """Runs samples in forked children of one long-lived, isolated fork server."""

    def __init__(self, settings: SandboxSettings | None = None) -> None:
        self.settings = settings or SandboxSettings()
        use = self.settings.use_bwrap
        self.uses_bwrap = bwrap.bwrap_available() if use is None else bool(use)
        if not self.uses_bwrap:
            _warn_no_bwrap()
        self._proc: subprocess.Popen[bytes] | None = None
        self._work_root: str | None = None
        self._log_file: Any = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._buf = bytearray()
        self.restarts = 0

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def close(self) -> None:
        """Stop the fork server (it also stops by itself when this process goes away)."""
        self._stop()
        if self._work_root:
            shutil.rmtree(self._work_root, ignore_errors=True)
            self._work_root = None

    def _config(self) -> dict[str, Any]:
        cfg = asdict(self.settings)
        cfg.pop("hide_paths", None)
        cfg["drop_uid"] = os.getuid() == 0
        if self.uses_bwrap:
            cfg["work_root"] = "/tmp"
        else:
            if self._work_root is None:
                # A memory file system when there is one: per-sample folders are created and
                # removed thousands of times, and a disk-backed /tmp can cost milliseconds.
                shm = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
                self._work_root = tempfile.mkdtemp(prefix="codeeval-sbx-", dir=shm)
                os.chmod(self._work_root, 0o711)  # a child dropped to nobody reaches its folder
            cfg["work_root"] = self._work_root
        return cfg

    def _env(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": os.path.expanduser("~") if self.uses_bwrap else "/nonexistent",
            "PYTHONHASHSEED": "0",  # same set/dict orders, same verdicts, on every run
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        return env

    def _command(self) -> list[str]:
        cfg = json.dumps(self._config())
        # -s -P instead of -I: -I would also ignore PYTHONHASHSEED; the environment is ours.
        if self.uses_bwrap:
            server = f"{bwrap.INSIDE_MOUNT}/server.py"
            return bwrap.build_command(
                self.settings.hide_paths, [sys.executable, "-s", "-P", server, cfg]
            )
        server = str(bwrap.INSIDE_DIR / "server.py")
        return [sys.executable, "-s", "-P", server, cfg]

    def _start(self) -> None:
        self._stop()
        if self._log_file is None:
            self._log_file = tempfile.TemporaryFile()
        self._log_file.seek(0)
        self._log_file.truncate()
        try:
            self._proc = subprocess.Popen(
                self._command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log_file,
                env=self._env(),
                cwd="/",
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise InfraError(f"cannot start the sandbox server: {exc}") from exc
        self._buf = bytearray()
        hello = self._receive(time.monotonic() + START_TIMEOUT_S)
        if not hello.get("hello"):
            raise InfraError(f"unexpected greeting from the sandbox server: {hello!r:.200}")

    def _stop(self, now: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if now:
                raise subprocess.TimeoutExpired(proc.args, 0)
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass
        if proc.stdout:
            proc.stdout.close()

    def _server_log(self) -> str:
        if self._log_file is None:
            return ""
        self._log_file.seek(0)
        text = self._log_file.read()[-2000:].decode("utf-8", "replace").strip()
        return f"; server log: {text}" if text else ""

    # -- the channel -----------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        body = json.dumps(message, separators=(",", ":")).encode()
        try:
            self._proc.stdin.write(_LEN.pack(len(body)) + body)
            self._proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise InfraError(f"the sandbox server is gone: {exc}") from exc

    def _receive(self, deadline: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while True:
            if len(self._buf) >= 4:
                size = _LEN.unpack(self._buf[:4])[0]
                if len(self._buf) >= 4 + size:
                    body = bytes(self._buf[4 : 4 + size])
                    del self._buf[: 4 + size]
                    try:
                        message = json.loads(body)
                    except ValueError as exc:
                        raise InfraError(
                            f"unreadable reply from the sandbox server: {exc}"
                        ) from None
                    if type(message) is not dict:
                        raise InfraError("reply from the sandbox server is not an object")
                    return message
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise InfraError("the sandbox server did not answer in time")
            ready, _, _ = select.select([fd], [], [], wait)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self._proc.poll()
                    raise InfraError(
                        f"the sandbox server died (exit status {self._proc.returncode})"
                        + self._server_log()
                    )
                self._buf += chunk

    # -- samples ---------------------------------------------------------------------------
    def run(self, request: SampleRequest) -> SampleExecution:
        """Run one sample; never raises for the sample's behaviour."""
        with self._lock:
            start = time.monotonic()
            try:
                if self._proc is None or self._proc.poll() is not None:
                    if self._proc is not None:
                        self.restarts += 1
                    self._start()
                message = _request_message(request, next(self._ids))
                self._send(message)
                deadline = start + request.budget_s + REPLY_SLACK_S + START_TIMEOUT_S
                reply = self._receive(deadline)
                if reply.get("id") != message["id"]:
                    raise InfraError("reply for another request")
                result = assemble(request, reply)
            except (InfraError, ReplyError) as exc:
                self._stop(now=True)  # a fresh server for the next sample
                return _infra_result(request, str(exc), time.monotonic() - start)
            except BaseException:
                # Interrupted mid-conversation (Ctrl-C, pytest-timeout): the channel's state is
                # unknown, so the next sample gets a fresh server.
                self._stop(now=True)
                raise
            if not self.uses_bwrap:
                result.notes.append("no bubblewrap: resource limits and a private folder only")
            return result


def _request_message(request: SampleRequest, ident: int) -> dict[str, Any]:
    return {
        "id": ident,
        "program": request.program,
        "entry_point": request.entry_point,
        "test_setup": request.test_setup,
        "budget_s": float(request.budget_s),
        "coverage": bool(request.coverage),
        "seed": int(request.seed),
        "cases": [
            {
                "case_id": c.case_id,
                "mode": c.mode,
                "prelude": c.prelude,
                "calls": list(c.calls),
                "statement": c.statement,
                "timeout_s": float(c.timeout_s),
            }
            for c in request.cases
        ],
    }


def _infra_result(request: SampleRequest, message: str, duration: float) -> SampleExecution:
    cases = {
        c.case_id: CaseExecution(c.case_id, "error", message=f"sandbox failure: {message}")
        for c in request.cases
    }
    return SampleExecution(cases=cases, duration_s=duration, infra_error=message)
