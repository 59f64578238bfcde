"""The trusted side of the sandbox: owns one fork server and turns requests into executions.

One :class:`Sandbox` per pytest-xdist worker, reused for thousands of samples. ``run`` never
raises for anything a sample does; when the server itself fails (cannot start, dies, stops
answering) it is restarted and the sample comes back with ``infra_error`` set.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import asdict
from typing import Any

import harness.sandbox.bwrap as bwrap
import harness.sandbox.uids as uids
from harness.memo import IdentityMemo
from harness.paths import deps_root
from harness.sandbox.api import (
    CaseExecution,
    CaseRequest,
    SampleExecution,
    SampleRequest,
    SandboxSettings,
)
from harness.sandbox.check_seed import check_seed
from harness.sandbox.decode import ReplyError, assemble
from harness.sandbox.landlock_view import closed_to_others, landlock_view, no_bwrap_guards
from harness.sandbox.problem_parts import problem_parts
from harness.sandbox.server_files import MAX_STRETCH, server_module
from harness.sandbox.server_pipes import InfraError, Reader, Writer

log = logging.getLogger("codeeval.sandbox")
DEPS_MOUNT = "/tmp/.codeeval-deps"  # where the dependency overlays' root shows inside
START_TIMEOUT_S = 60.0  # two shared cores: a cold start can be slow
REPLY_SLACK_S = 15.0  # on top of the sample budget: cleanup, coverage, a loaded machine
# Sandboxes whose server this process started. They are closed at exit, before the
# interpreter tears its modules down: as root, closing forks (the uid sweep), and a fork
# then runs every library's at-fork hooks over cleared modules (filelock's print tracebacks).
_started: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_warned = False
_warn_lock = threading.Lock()


def _warn_no_bwrap() -> None:
    """Say once per process that only the in-process guards are active."""
    global _warned
    with _warn_lock:
        if not _warned:
            _warned = True
            log.warning(
                "codeeval sandbox: bubblewrap (bwrap) is not usable here; %s",
                no_bwrap_guards().text,
            )


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
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._reader: Reader | None = None
        self._writer: Writer | None = None
        self._defined: set[str] = set()  # problems the running server has compiled
        # Submitted, not yet collected: ticket -> (request, when it was sent; None: not sent).
        self._pending: dict[int, tuple[SampleRequest, float | None]] = {}
        self._failed: dict[int, tuple[SampleRequest, str, float]] = {}
        # Samples in parts: those whose parts a SampleParts reads now, and those given up
        # unread (stopped; their replies dropped as they come).
        self._reading: set[int] = set()
        self._dropped: set[int] = set()
        self.restarts = 0
        self._deps_root: str | None = None  # the overlays' root the running server sees
        # As root, candidates run as a uid of this sandbox's own (harness.sandbox.uids).
        self._uids: uids.UidLease | None = None
        self._started_by: int | None = None  # the pid that started the server
        self._greeting_due = False  # started by start_soon: the next submit waits for it

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
        """Stop the fork server (it also stops by itself when this process goes away).

        It is killed, not asked to finish: it holds nothing worth flushing, and a run that
        ends should not wait for interpreters to tear down.
        """
        self._stop(now=True)
        lease, self._uids = self._uids, None
        if lease is not None:
            lease.release()

    def start_soon(self) -> None:
        """Start the fork server unless it is running, without waiting for it to be up: the
        next :meth:`submit` waits for its greeting. An xdist worker calls it before collecting,
        so that the server's start overlaps the collection. Call it from a thread that lives
        as long as the server should: bubblewrap dies with the thread that started it. A start
        that fails is left for the next :meth:`submit`, which tries again and reports it."""
        with self._lock:
            if self._server_alive():
                return
            try:
                self._spawn()
            except Exception:  # noqa: BLE001 - met again, and reported, by the next submit
                self._stop(now=True)  # which then starts afresh, not as a restart

    def _config(self) -> dict[str, Any]:
        cfg = asdict(self.settings)
        cfg.pop("hide_paths", None)
        cfg["drop_uid"] = os.getuid() == 0
        if cfg["drop_uid"]:
            if self._uids is None:
                try:
                    self._uids = uids.lease(1)
                except uids.NoUidLeft as exc:
                    raise InfraError(str(exc)) from None
            cfg["uid"] = self._uids.uid()
        else:
            cfg["uid"] = os.getuid()
        if self.uses_bwrap:
            cfg["work_root"] = "/tmp"
        else:
            if self._work_root is None:
                # A memory file system when there is one: per-sample folders are created and
                # removed thousands of times, and a disk-backed /tmp can cost milliseconds.
                shm = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
                self._work_root = tempfile.mkdtemp(prefix="codeeval-sbx-", dir=shm)
                os.chmod(self._work_root, 0o711)  # a dropped child reaches its own folder
            cfg["work_root"] = self._work_root
            cfg["quarantine"] = self._work_root + "-left"  # beside it, outside every view
            # What the candidate may read, list and execute: Landlock's allow-list.
            root = str(deps_root())
            keep = [root] if os.path.isdir(root) else []
            cfg["view"] = landlock_view(self.settings.hide_paths, keep)
            # The one capability that reads the view, only where file modes would hide it.
            cfg["read_cap"] = closed_to_others([*bwrap.python_dirs(), *keep])
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
        # The dependency overlays (harness.deps), read-only, when any were fetched: their root
        # is under the hidden $HOME, so it is shown at a fixed place instead.
        root = str(deps_root())
        self._deps_root = root if os.path.isdir(root) else None
        # -s -P instead of -I: -I would also ignore PYTHONHASHSEED; the environment is ours.
        # -S: the server runs site itself (server.load_deferring_fork_hooks). "-": its
        # configuration is the first message on its stdin (_start).
        if self.uses_bwrap:
            server = f"{bwrap.INSIDE_MOUNT}/server.py"
            binds = [(root, DEPS_MOUNT)] if self._deps_root else []
            return bwrap.build_command(
                self.settings.hide_paths,
                [sys.executable, "-u", "-S", "-s", "-P", server, "-"],
                binds,
                memory_mb=self.settings.memory_mb,
            )
        server = str(bwrap.INSIDE_DIR / "server.py")
        return [sys.executable, "-u", "-S", "-s", "-P", server, "-"]

    def _start(self) -> None:
        self._spawn()
        self._greet()

    def _spawn(self) -> None:
        """Start the server and send its configuration (:meth:`_greet` waits for its answer)."""
        self._stop()
        self._started_by = os.getpid()
        _started.add(self)
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
        assert self._proc.stdout is not None and self._proc.stdin is not None
        # The reader and writer threads own their own copies of the pipes and close them when
        # the server is gone, so a closed descriptor number can never be reused under their feet.
        self._reader = Reader(os.dup(self._proc.stdout.fileno()))
        self._writer = Writer(os.dup(self._proc.stdin.fileno()))
        self._proc.stdout.close()
        self._proc.stdin.close()
        self._reader.start()
        self._writer.start()
        self._defined = set()
        self._send(self._config())
        self._greeting_due = True

    def _greet(self) -> None:
        """Wait for the started server's greeting (raises :class:`InfraError` without one)."""
        self._greeting_due = False
        hello = self._wait_reply(None, time.monotonic() + START_TIMEOUT_S)
        if not hello.get("hello"):
            raise InfraError(f"unexpected greeting from the sandbox server: {hello!r:.200}")

    def _stop(self, now: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            self._discard_work_root()
            return
        writer, self._writer = self._writer, None
        try:
            if now:
                raise subprocess.TimeoutExpired(proc.args, 0)
            if writer is not None:
                writer.finish()  # the server ends once it reads the end of its input
            proc.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass
        if self._reader is not None:
            self._reader.join(timeout=5.0)  # sees end of file once the server is gone
            self._reader = None
        if writer is not None:
            writer.finish()
            writer.join(timeout=5.0)  # its write fails once the server is gone
        if self._uids is not None:
            # What the server's candidates left (without bubblewrap nothing kills them with
            # it): the next server of this sandbox runs under the same uid.
            uids.sweep(self._uids.uid())
        self._discard_work_root()

    def _discard_work_root(self) -> None:
        """Remove the gone server's work root (without bubblewrap: a folder of the real /tmp).

        A server killed mid-sample leaves the sample's folder there, and a later server's
        children (the same uid) could read it by its name: each server gets a new root, and
        the old one is removed as the server removes a sample's folder (nothing followed).
        """
        root, self._work_root = self._work_root, None
        if root:
            server_module("cleanup").remove_tree(root)
            server_module("cleanup").remove_tree(root + "-left")

    def _server_log(self) -> str:
        if self._log_file is None:
            return ""
        self._log_file.seek(0)
        text = self._log_file.read()[-2000:].decode("utf-8", "replace").strip()
        return f"; server log: {text}" if text else ""

    # -- the channel -----------------------------------------------------------------------
    def _send(self, message: dict[str, Any], blob: bytes = b"") -> None:
        writer = self._writer
        assert self._proc is not None and writer is not None
        writer.send(message, blob)

    def _wait_reply(self, ident: int | None, deadline: float, part: bool = False) -> dict[str, Any]:
        """The reply with ``ident`` (None: the greeting), read by the reader thread; ``part``:
        the next message of a sample run in parts (a part, or its last reply), else its last
        reply, its parts left unread dropped."""
        reader = self._reader
        assert reader is not None
        with reader.ready:
            while True:
                if part and reader.parts.get(ident):
                    return reader.parts[ident].pop(0)
                if ident in reader.replies:
                    reader.parts.pop(ident, None)
                    return reader.replies.pop(ident)
                if reader.failure is not None:
                    raise InfraError(reader.failure + self._server_log())
                wait = deadline - time.monotonic()
                if wait <= 0:
                    raise InfraError("the sandbox server did not answer in time")
                reader.ready.wait(min(wait, 1.0))

    # -- samples ---------------------------------------------------------------------------
    def run(self, request: SampleRequest) -> SampleExecution:
        """Run one sample; never raises for the sample's behaviour."""
        return self.collect(self.submit(request))

    def submit(self, request: SampleRequest) -> int:
        """Queue ``request`` on the fork server and return its ticket for :meth:`collect`.

        The server runs queued samples one after another while the caller does other work
        (reporting the previous sample), so one trusted process keeps two cores busy.
        """
        with self._lock:
            ticket = next(self._ids)
            self._pending[ticket] = (request, None)
            try:
                if not self._server_alive():
                    if self._proc is not None:
                        self.restarts += 1
                        del self._pending[ticket]
                        self._fail_pending("the sandbox server died" + self._server_log())
                        self._pending[ticket] = (request, None)
                    self._start()
                elif self._greeting_due:  # started by start_soon
                    self._greet()
                deps = self._deps_inside(request.deps_path)
                key = _problem_key(
                    request.entry_point, request.test_setup, request.cases, deps, request.helpers
                )
                if key not in self._defined:
                    self._send(*_define_message(key, request, deps))
                    self._defined.add(key)
                self._send(_sample_message(request, key, ticket))
                self._pending[ticket] = (request, time.monotonic())
            except InfraError as exc:
                self._fail_pending(str(exc))
            return ticket

    def _deps_inside(self, path: str) -> str:
        """Where a dependency overlay's folder shows to the child ("" when none is asked)."""
        if not path or not self.uses_bwrap:
            return path
        root = self._deps_root
        if root and (path == root or path.startswith(root.rstrip("/") + "/")):
            return DEPS_MOUNT + path[len(root.rstrip("/")) :]
        # Not under the root mounted at start (fetched since, or elsewhere): the child's
        # imports then fail, as they would without the overlay.
        log.warning("dependency overlay %s is not under the mounted root %s", path, root)
        return path

    def _server_alive(self) -> bool:
        # The reader sees the end of the channel before the process can be reaped: both count.
        if self._proc is None or self._reader is None or self._reader.failure is not None:
            return False
        if self._writer is None or self._writer.failure is not None:
            return False
        return self._proc.poll() is None

    def collect(self, ticket: int) -> SampleExecution:
        """The execution of a submitted sample (waits for it); never raises for the sample.
        A request with ``pauses`` is read with :meth:`parts` instead."""
        return self.next_part(ticket, 0, last=True)[0]

    def parts(self, ticket: int) -> SampleParts:
        """The parts of a submitted sample with ``pauses``, one by one, each run only once
        the caller asks for it, having judged the one before (:class:`SampleParts`).

        The server runs samples in the order they were submitted, and waits at a part's end
        for the word to go on: so a sample in parts submitted before the one the caller now
        waits for, and not being read, is stopped and forgotten (the caller passed it by);
        :meth:`holds` then says False of it."""
        with self._lock:
            self._reading.add(ticket)
        return SampleParts(self, ticket)

    def holds(self, ticket: int) -> bool:
        """Whether ``ticket`` was submitted and is still to be collected."""
        return ticket in self._pending or ticket in self._failed

    def resume(self, ticket: int, go: bool) -> None:
        """Tell the server whether the sample ``ticket``, paused (or to pause) at the end of a
        part, runs its next part; a sample that ended meanwhile ignores it. Without the lock:
        another thread may hold it, waiting for a sample queued behind this one."""
        writer = self._writer
        if writer is not None:
            try:
                writer.send({"resume": ticket, "go": go})
            except InfraError:
                pass  # met by the next read, as the server's failure

    def _drop_passed_parts(self, ticket: int) -> None:
        """Stop the samples in parts queued before ``ticket`` that nobody reads (see
        :meth:`parts`), and drop the replies of those stopped before."""
        for other in [t for t in self._pending if t < ticket]:
            if self._pending[other][0].pauses and other not in self._reading:
                del self._pending[other]
                self._dropped.add(other)
                self.resume(other, False)
        reader = self._reader
        if reader is not None and self._dropped:
            with reader.ready:
                for other in [t for t in self._dropped if t in reader.replies]:
                    del reader.replies[other]
                    reader.parts.pop(other, None)
                    self._dropped.discard(other)

    def next_part(
        self, ticket: int, first: int, last: bool = False
    ) -> tuple[SampleExecution, int | None]:
        """The execution of the sample's cases from ``first`` to the end of the part that
        came back (waits for it), and where its next part starts (None: the sample is over,
        its output and accounting are in this one). ``last``: skip to the sample's end (the
        caller stopped it, or it has no parts). Never raises for the sample."""
        with self._lock:
            if ticket in self._failed:
                request, message, elapsed = self._failed.pop(ticket)
                self._reading.discard(ticket)
                return _infra_result(request, message, elapsed, first), None
            if ticket not in self._pending:
                raise KeyError(f"unknown or already collected sandbox ticket {ticket}")
            self._drop_passed_parts(ticket)
            request, sent = self._pending[ticket]
            start = sent or time.monotonic()
            try:
                reply = self._wait_reply(ticket, self._deadline(ticket), part=not last)
                if reply.get("part"):
                    result = assemble(request, reply, first)
                    return result, first + len(reply["slots"])
                del self._pending[ticket]
                self._reading.discard(ticket)
                if last:  # parts left unread: the rest starts where the server says
                    first = _rest_from(request, reply, first)
                result = assemble(request, reply, first)
            except (InfraError, ReplyError) as exc:
                self._pending.pop(ticket, None)
                self._reading.discard(ticket)
                self._stop(now=True)  # a fresh server for the next sample
                self._fail_pending(str(exc))
                return _infra_result(request, str(exc), time.monotonic() - start, first), None
            except BaseException:
                # Interrupted mid-conversation (Ctrl-C, pytest-timeout): the channel's state is
                # unknown, so the next sample gets a fresh server.
                self._stop(now=True)
                self._fail_pending("interrupted")
                raise
            if not self.uses_bwrap:
                result.notes.append(f"no bubblewrap: {no_bwrap_guards().text}")
            return result, None

    def _deadline(self, ticket: int) -> float:
        """When to give up on ``ticket``: every sample queued before it may use its budget."""
        now = time.monotonic()
        total = 0.0
        replied = self._reader.replies if self._reader is not None else {}
        for other, (request, sent) in self._pending.items():
            if other > ticket:
                break
            if other in replied:
                continue
            # A starved sample's budget stretches (segment.MAX_STRETCH) before it times out.
            total += request.budget_s * MAX_STRETCH + REPLY_SLACK_S
            if sent is None:
                total += START_TIMEOUT_S
        return now + total + START_TIMEOUT_S

    def _fail_pending(self, message: str) -> None:
        """Every queued sample comes back as an infrastructure error (the server is gone)."""
        now = time.monotonic()
        for ticket, (request, sent) in self._pending.items():
            self._failed[ticket] = (request, message, now - (sent or now))
        self._pending.clear()
        self._dropped.clear()  # their replies never come: the server is gone


class SampleParts:
    """A sample whose child pauses at the end of each part (``SampleRequest.pauses``): iterate
    for each part's execution in turn; asking for the next one tells the child to go on, and
    :meth:`stop` ends the sample where it is (its child killed, no further case run)."""

    def __init__(self, sandbox: Sandbox, ticket: int) -> None:
        self._sandbox = sandbox
        self._ticket = ticket
        self._next: int | None = 0  # where the part to read starts; None: the sample is over
        self._read = False  # a part was read, and its child waits for the word to go on

    def __iter__(self) -> SampleParts:
        return self

    def __next__(self) -> SampleExecution:
        if self._next is None:
            raise StopIteration
        if self._read:
            self._sandbox.resume(self._ticket, True)
        execution, self._next = self._sandbox.next_part(self._ticket, self._next)
        self._read = True
        return execution

    def stop(self) -> SampleExecution | None:
        """End the sample before its next part: the execution of the rest (no case ran: the
        sample's output and accounting); None when it was over already."""
        if self._next is None:
            return None
        self._sandbox.resume(self._ticket, False)
        rest, self._next = self._sandbox.next_part(self._ticket, self._next, last=True)
        rest.cases = {}
        return rest


def _problem_key(
    entry_point: str,
    test_setup: str,
    cases: tuple[CaseRequest, ...],
    deps: str = "",
    helpers: str = "",
) -> str:
    """A name for a problem's trusted part, sent to the server once with its compiled parts.

    Kept by the identity of the cases' tuple (held, so its id is not reused), as the pipeline
    builds it once per problem: a cache keyed by the tuple itself hashed its thousand cases
    on every sample (about 2% of a judging worker's CPU on HumanEval+).
    """

    def compute() -> str:
        fields = [_case_fields(c) for c in cases]
        text = json.dumps([entry_point, test_setup, fields, deps, helpers])
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    return _problem_keys.get(cases, compute, entry_point, test_setup, deps, helpers)


_problem_keys: IdentityMemo[str] = IdentityMemo()


def _case_fields(case: CaseRequest) -> list[Any]:
    """What the server is told of a case, in a fixed order (cheaper than ``asdict``: a problem
    can have a thousand cases)."""
    calls = list(case.calls)
    return [case.case_id, case.mode, case.prelude, calls, case.statement, float(case.timeout_s)]


def _define_message(key: str, request: SampleRequest, deps: str = "") -> tuple[dict, bytes]:
    """A problem's definition for the server, and its bytes: the parts compiled here (or read
    from the cache, :mod:`harness.sandbox.problem_parts`). The server needs each case's mode
    and limit beside them, not its code."""

    def definition() -> dict[str, Any]:
        return {
            "deps_path": deps,
            "entry_point": request.entry_point,
            "test_setup": request.test_setup,
            "helpers": request.helpers,
            "cases": [
                {
                    "mode": c.mode,
                    "prelude": c.prelude,
                    "calls": list(c.calls),
                    "statement": c.statement,
                }
                for c in request.cases
            ],
        }

    child, judge = problem_parts(key, definition)
    message = {
        "define": key,
        "deps_path": deps,
        "entry_point": request.entry_point,
        "cases": [{"mode": c.mode, "timeout_s": float(c.timeout_s)} for c in request.cases],
        "child_part": len(child),
    }
    return message, child + judge


def _sample_message(request: SampleRequest, key: str, ident: int) -> dict[str, Any]:
    pauses = {"pauses": list(request.pauses)} if request.pauses else {}
    return {
        **pauses,
        "id": ident,
        "problem": key,
        "program": request.program,
        "budget_s": float(request.budget_s),
        "coverage": bool(request.coverage),
        "seed": int(request.seed),
        # the judge's seed (check_seed.py): the child is never handed it
        "check_seed": check_seed(request.seed, request.program),
        "timeouts_in_a_row": int(request.timeouts_in_a_row),
    }


def _rest_from(request: SampleRequest, reply: dict[str, Any], first: int) -> int:
    """Where a sample's last reply starts, read past parts not read: ``first`` or the start
    of a later part (anything else is for :func:`assemble` to refuse)."""
    start = reply.get("first")
    return start if type(start) is int and start > first and start in request.pauses else first


def _infra_result(
    request: SampleRequest, message: str, duration: float, first: int = 0
) -> SampleExecution:
    cases = {
        c.case_id: CaseExecution(c.case_id, "error", message=f"sandbox failure: {message}")
        for c in request.cases[first:]
    }
    return SampleExecution(cases=cases, duration_s=duration, infra_error=message)


@atexit.register
def _close_started_sandboxes() -> None:
    """Close this process's sandboxes while its modules still work (see ``_started``); a
    forked child's inherited ones are its parent's, not its own to stop."""
    for sandbox in list(_started):
        if sandbox._started_by == os.getpid():
            try:
                sandbox.close()
            except Exception:  # noqa: BLE001 - exiting: one failure must not skip the rest
                log.debug("closing a sandbox at exit failed", exc_info=True)
