"""The child of the fork server: confine itself, run the program and its cases, send frames.

Stdlib only; loaded by path by the server and run right after ``os.fork()``. It never returns:
every path ends in ``os._exit`` so no atexit handler, finalizer or non-daemon thread of the
candidate runs after the cases (the server kills whatever is left).
"""

from __future__ import annotations

import builtins
import ctypes
import dis
import os
import resource
import signal
import sys
import threading as _threading
import time
import types
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

RESULT_FD = 3
# The object bridge to the judge (bridge.py), when the segment has sandbox-mode cases: the
# judge's requests come in on 4 and the answers go out on 5.
BRIDGE_IN_FD, BRIDGE_OUT_FD = 4, 5
# A sample run in parts (never with a judge) says so here at the end of each part, and waits
# until the server writes one byte back: the trusted side has judged the part and wants the
# next one.
PAUSE_FD = 4
PAUSED, GO_ON = b"p", b"g"
# Captured when the server loads this module: a candidate may patch builtins or ``time``.
_compile, _exec, _eval, _dict, _len, _range = compile, exec, eval, dict, len, range
_type, _str, _memoryview, _zip = type, str, memoryview, zip
_perf = time.perf_counter
_exit = os._exit
_read, _write = os.read, os.write
_getpid = os.getpid
# Opcodes the coverage tracer needs, looked up once in the server (children inherit them).
_RESUME = dis.opmap.get("RESUME")
_PUSH_EXC_INFO = dis.opmap.get("PUSH_EXC_INFO")


PR_SET_KEEPCAPS = 8


_libc = ctypes.CDLL(None, use_errno=True)  # loaded by the server, before any fork


def _prctl(option: int, value: int) -> None:
    _libc.prctl(option, value, 0, 0, 0)


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):  # cannot raise a hard limit; keep the lower one we have
        soft, hard = resource.getrlimit(kind)
        if hard == resource.RLIM_INFINITY or value <= hard:
            resource.setrlimit(kind, (min(value, hard), hard))


def limit_and_drop(cfg: dict[str, Any], cpu_s: int) -> None:
    """No core files, CPU seconds, file size, processes; then the sample's own unprivileged
    uid (as root: leased for this server alone, harness.sandbox.uids), keeping at most the one
    capability that reads the view without bubblewrap (seccomp.py).

    Every process that runs in a sample's sandbox gets these: the child and the judge."""
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_CPU, cpu_s)
    _limit(resource.RLIMIT_FSIZE, int(cfg["max_file_mb"]) * 1024 * 1024)
    _limit(resource.RLIMIT_NPROC, int(cfg["max_processes"]))
    if cfg.get("drop_uid"):
        uid = int(cfg["uid"])
        cap = cfg.get("_read_cap")
        kernel = cfg.get("_kernel")
        if cap is not None:
            _prctl(PR_SET_KEEPCAPS, 1)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if cap is not None and kernel is not None:
            kernel.keep_read_cap(cap)


def limit_files_and_memory(cfg: dict[str, Any]) -> None:
    """Open files and address space: set last, once the process opened what it needs."""
    _limit(resource.RLIMIT_NOFILE, int(cfg["max_open_files"]))
    _limit(resource.RLIMIT_AS, int(cfg["memory_mb"]) * 1024 * 1024)


def confine(cfg: dict[str, Any], workdir: str, wfd: int, cpu_s: int) -> None:
    """Own session, fds 0-3 only, resource limits, unprivileged user, private folder."""
    os.setsid()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    # Writes past RLIMIT_FSIZE then fail with EFBIG instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if wfd != RESULT_FD:
        os.dup2(wfd, RESULT_FD)
    if cfg.get("drop_uid"):
        os.chown(workdir, int(cfg["uid"]), int(cfg["uid"]))
    limit_and_drop(cfg, cpu_s)
    os.chdir(workdir)
    null = os.open("/dev/null", os.O_RDONLY)
    # stdout and stderr: memory files the server made before the fork and reads back through
    # its own descriptors (a path here could be replaced by a link or a FIFO).
    stdio = cfg.get("_stdio") or [os.open("/dev/null", os.O_WRONLY)] * 2
    os.dup2(null, 0)
    os.dup2(stdio[0], 1)
    os.dup2(stdio[1], 2)
    os.environ["TMPDIR"] = workdir  # the only folder it may write to
    kernel = cfg.get("_kernel")
    if kernel is not None:
        # Writes only here, no other sample's sockets, processes or signals (Landlock); no
        # keyrings, IPC, ptrace, io_uring, bpf or namespaces (seccomp): see seccomp.py.
        kernel.confine(workdir)
        kernel.limit_candidate()
    # The server's channels (and everything else it had open) must be gone before any
    # candidate code runs: only stdio and the result pipe stay.
    # Fds 4 and 5 are the judge's bridge or closed already (run's _place): the server's own
    # channel to the trusted side never reaches the candidate.
    os.closerange(BRIDGE_OUT_FD + 1, 1 << 20)
    limit_files_and_memory(cfg)
    # sys.stdin/stdout/stderr are the server's own objects on fds 0-2 (set up unbuffered by
    # the server before any fork): they now read /dev/null and write the child's files.
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__


def _text(value: Any, limit: int = 2000) -> str:
    """A string for a message, tolerating hostile ``__str__`` methods."""
    try:
        text = _str(value)
        if _type(text) is not str:
            return "<unprintable>"
    except BaseException:  # noqa: B036
        return "<unprintable>"
    return text if _len(text) <= limit else text[:limit] + "..."


def _exception(exc: BaseException) -> dict[str, str]:
    cls = type(exc)
    name = cls.__name__ if type(cls.__name__) is str else "?"
    return {"type": name, "message": _text(exc)}


class _Sender:
    """Writes frames to the result pipe (holds the nonce the trusted side checks)."""

    def __init__(self, codec: Any, nonce: str) -> None:
        self._frame = codec.frame
        self._values_frame = codec.values_frame
        self._kind_case = codec.KIND_CASE
        self._write = os.write
        self._nonce = nonce
        self._pid = _getpid()  # the child the server waits for
        # Only where frames are built with the pure-Python json encoder (which looks builtins
        # up at call time) are the original builtins put back while a frame is built: a
        # candidate that patched isinstance or len must not break our own frames.
        self._guard_builtins = codec.FRAME_NEEDS_BUILTINS
        if self._guard_builtins:
            self._builtins = builtins.__dict__
            self._original = dict(builtins.__dict__)
            self._copy, self._clear, self._update = dict.copy, dict.clear, dict.update

    def _framed(self, kind: int, index: int, payload: dict[str, Any]) -> bytes:
        payload["n"] = self._nonce
        payload["i"] = index
        if not self._guard_builtins:
            return self._frame(kind, index, payload)
        saved = self._copy(self._builtins)  # pragma: no cover - no json C accelerator
        self._update(self._builtins, self._original)
        try:
            return self._frame(kind, index, payload)
        finally:
            self._clear(self._builtins)
            self._update(self._builtins, saved)

    def send(self, kind: int, index: int, payload: dict[str, Any]) -> None:
        self._write_frame(self._framed(kind, index, payload))

    def values(self, index: int, values: list[Any], duration: float) -> None:
        """A compare case that ran: its encoded values and time, written as the frame
        ``send`` writes of ``{status, values, duration_s}``, without building that object
        (where frames are built in C; else through ``send``)."""
        if self._guard_builtins:  # pragma: no cover - no json C accelerator
            payload = {"status": "ok", "values": values, "duration_s": duration}
            self.send(self._kind_case, index, payload)
            return
        self._write_frame(self._values_frame(index, values, duration, self._nonce))

    def _write_frame(self, data: bytes) -> None:
        if _getpid() != self._pid:
            # A process the candidate forked, back in our loop (a fork bomb's copies raise
            # out of the candidate): it never speaks for the sample. Its frames would only
            # race the child's, a corrupted channel or not by chance.
            _exit(0)
        view = _memoryview(data)
        while view:
            written = self._write(RESULT_FD, view)
            view = view[written:]


class _ArcTracer:
    """Records the line-to-line arcs executed in one file, as coverage.py's tracer does.

    Arcs are ``(from, to)`` line pairs; a negative number is a code object's entry or exit
    (``-co_firstlineno``). The trusted side turns them into line and branch coverage with
    coverage.py's own parser (:mod:`harness.sandbox.coverage_data`), so the child does no
    analysis: tracing costs a few microseconds per line, not a coverage.py session per child.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.arcs: set[tuple[int, int]] = set()

    def start(self) -> None:
        resume, push_exc_info = _RESUME, _PUSH_EXC_INFO
        # Python 3.12+ reports the yield, 3.13 the instruction after it (coverage.py's rule).
        lasti_is_yield = sys.version_info[:2] != (3, 13)
        path, add = self.path, self.arcs.add

        def call(frame: Any, event: str, arg: Any) -> Any:
            code = frame.f_code
            if event != "call" or code.co_filename != path:
                return None
            if resume is not None:
                real_call = code.co_code[frame.f_lasti + 1] == 0
            else:
                real_call = frame.f_lasti < 0
            last = [-code.co_firstlineno if real_call else frame.f_lineno]

            def local(frame: Any, event: str, arg: Any) -> Any:
                if event == "line":
                    lasti = frame.f_lasti
                    if push_exc_info is not None and code.co_code[lasti] == push_exc_info:
                        return local
                    line = frame.f_lineno
                    add((last[0], line))
                    last[0] = line
                elif event == "return":
                    co_code, lasti = code.co_code, frame.f_lasti
                    if resume is None or _len(co_code) == lasti + 2:
                        real_return = True
                    else:
                        real_return = co_code[lasti + 2 if lasti_is_yield else lasti] != resume
                    if real_return:
                        add((last[0], -code.co_firstlineno))
                return local

            return local

        sys.settrace(call)
        _threading.settrace(call)

    def stop(self) -> dict[str, Any]:
        sys.settrace(None)
        return {"arcs": sorted([a, b] for a, b in self.arcs)}


def run(
    codec: Any,
    request: dict[str, Any],
    first: int,
    wfd: int,
    nonce: str,
    cfg: dict[str, Any],
    workdir: str,
    cpu_s: int,
    fork_hooks: Sequence[Mapping[str, Any]] = (),
    bridge: Any = None,
    bridge_fds: tuple[int, int] | None = None,
    pause_fd: int | None = None,
) -> NoReturn:
    """Run the program and cases ``first..`` of ``request``; never returns.

    ``fork_hooks`` are the at-fork hooks the server deferred (``server.load_deferring_fork_hooks``):
    registered again here, they run at forks the candidate makes, as in a plain interpreter.
    ``bridge_fds`` (read, write): the pipes to the segment's judge, when it has one.
    ``pause_fd``: the child's end of the pause socket, when the request has ``pauses`` (the
    cases each next part starts at): before each of them the child says so there and waits.
    """
    code = 0
    try:
        for hooks in fork_hooks:
            os.register_at_fork(**hooks)
        wfd = _place(wfd, bridge_fds, pause_fd)
        confine(cfg, workdir, wfd, cpu_s)
        os.write(RESULT_FD, codec.MAGIC + bytes([5]) + first.to_bytes(4, "big") + bytes(4))
        served = bridge.ChildSide(codec, {}, BRIDGE_IN_FD, BRIDGE_OUT_FD) if bridge_fds else None
        _run(codec, request, first, _Sender(codec, nonce), workdir, served, pause_fd is not None)
    except BaseException:  # noqa: B036 - a broken confinement is reported by the exit code
        code = 70
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: B036
        pass
    _exit(code)


def _code(holder: dict[str, Any], field: str, mode: str, name: str = "<check>") -> Any:
    """The code the server compiled for ``field``, or compiled here (raising SyntaxError)."""
    return holder.get(field + "_code") or _compile(holder[field], name, mode)


def _place(wfd: int, bridge_fds: tuple[int, int] | None, pause_fd: int | None = None) -> int:
    """The result pipe on fd 3 and the bridge's pipes on 4 and 5, or the pause socket on 4 (each
    first moved above them: numbers may clash). What is not placed of 4 and 5 is closed: they
    may be the server's own channel to the trusted side, on which the candidate could forge
    replies."""
    import fcntl

    mine = (wfd, *(bridge_fds or (() if pause_fd is None else (pause_fd,))))
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 16) for fd in mine]
    for fd in mine:
        os.close(fd)
    for fd in (RESULT_FD, BRIDGE_IN_FD, BRIDGE_OUT_FD):
        try:
            os.close(fd)
        except OSError:
            pass
    for target, fd in zip((RESULT_FD, BRIDGE_IN_FD, BRIDGE_OUT_FD), high, strict=False):
        os.dup2(fd, target)
        os.close(fd)
    return RESULT_FD


def _run(
    codec: Any,
    request: dict[str, Any],
    first: int,
    sender: _Sender,
    workdir: str,
    served: Any = None,
    pausing: bool = False,
) -> None:
    """Run the program, then its cases ``first..``, sending one frame each, then the end;
    ``pausing``: wait on PAUSE_FD before each case the request's ``pauses`` name."""
    import random

    random.seed(request.get("seed", 0))  # verdicts must not depend on the fork's entropy
    path = _write_program(request, workdir)
    cov = _ArcTracer(path) if request.get("coverage") else None
    if cov is not None:
        cov.start()
    env = _run_module(codec, request, first, sender, path, served)
    if env is None:
        return
    entry = request["entry_point"]
    cases = request["cases"]
    pauses = frozenset(request.get("pauses") or ()) if pausing else frozenset()
    for index in _range(first, _len(cases)):
        if index in pauses and index > first:
            _write(PAUSE_FD, PAUSED)
            if _read(PAUSE_FD, 1) != GO_ON:
                _exit(0)  # the server stops the sample (it kills the child anyway)
        case = cases[index]
        if served is not None and case.get("mode") == "sandbox":
            # The judge runs this check; the child only answers its operations on the program.
            if not served.serve():
                return
            continue
        _run_case(codec, case, env, entry, sender, index)
    end: dict[str, Any] = {}
    if cov is not None:
        try:
            end["coverage"] = cov.stop()
        except BaseException as exc:  # noqa: B036
            end["coverage_error"] = _exception(exc)
    sender.send(codec.KIND_END, _len(cases), end)


def _write_program(request: dict[str, Any], workdir: str) -> str:
    """The program as ``solution.py`` in the work folder (its tracebacks name it), and the
    sample's fetched packages on ``sys.path``; return the file's path."""
    path = os.path.join(workdir, "solution.py")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, request["program"].encode("utf-8", "surrogatepass"))
    finally:
        os.close(fd)
    deps = request.get("deps_path")
    if deps:  # fetched third-party packages (harness.deps): after the stdlib, before the rest
        at = next((i for i, p in enumerate(sys.path) if "-packages" in p), _len(sys.path))
        sys.path.insert(at, deps)
    return path


def _run_module(
    codec: Any, request: dict[str, Any], first: int, sender: _Sender, path: str, served: Any
) -> dict[str, Any] | None:
    """Run the program's module body and the test setup, and send the ready frame; return
    the module's namespace, or None when either raised (every case then shares it)."""
    module = types.ModuleType("solution")
    module.__file__ = path
    sys.modules["solution"] = module
    env = module.__dict__
    if served is not None:
        served.env = env
    try:
        _exec(_compile(request["program"], path, "exec"), env)
        if request.get("test_setup"):
            _exec(_code(request, "test_setup", "exec", "<test_setup>"), env)
    except BaseException as exc:  # noqa: B036 - SystemExit at import is the program's failure
        sender.send(codec.KIND_READY, first, {"status": "raised", "exception": _exception(exc)})
        return None
    sender.send(codec.KIND_READY, first, {"status": "ok"})
    return env


def _run_case(
    codec: Any, case: dict[str, Any], env: dict[str, Any], entry: str, sender: _Sender, index: int
) -> None:
    """One compare-mode case: send its calls' values, encoded, or what the candidate raised."""
    perf = _perf
    start = perf()
    payload: dict[str, Any]
    try:
        ns = _dict(env)
        if entry in env:
            ns["candidate"] = env[entry]
        ns["__plain__"] = codec.plain
        if entry not in env and case.get("mode") == "compare":
            raise NameError(f"entry point {entry!r} is not defined by the program")
        if case.get("prelude"):
            _exec(_code(case, "prelude", "exec"), ns)
        if case["mode"] != "compare":  # never judged here: only the judge (judge.py) does
            raise RuntimeError("a sandbox-mode check reached the child without its judge")
        values = []
        compiled = case.get("calls_code") or [None] * _len(case["calls"])
        # The server sends the source of a call only where it did not compile.
        for expr, code in _zip(case["calls"], compiled):
            values.append(_eval(code or _compile(expr, "<check>", "eval"), ns))
        # Encoding consumes iterators (the candidate's code): part of the case's time.
        encoded = [codec.encode_value(v) for v in values]
        duration = perf() - start
    except AssertionError as exc:
        duration = perf() - start
        payload = {"status": "assertion", "exception": _exception(exc)}
    except BaseException as exc:  # noqa: B036 - SystemExit/KeyboardInterrupt: candidate's
        duration = perf() - start
        payload = {"status": "raised", "exception": _exception(exc)}
    else:
        sender.values(index, encoded, duration)
        return
    payload["duration_s"] = duration
    sender.send(codec.KIND_CASE, index, payload)
