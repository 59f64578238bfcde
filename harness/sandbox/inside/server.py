"""The fork server: started once per Sandbox, runs one confined child per sample.

Stdlib only; run as ``python -S -s -P server.py CONFIG_JSON`` (inside bubblewrap when it works):
with ``-S`` the server runs ``site`` itself, so that it can defer the at-fork hooks that the
start-up registers (:func:`load_deferring_fork_hooks`).
It talks to the trusted side over its stdin/stdout with length-prefixed JSON messages, and
enforces the case timeouts and the sample budget by reading the child's frames with deadlines.
It never decodes values: it forwards the child's frame payloads as they are, in the reply's
bytes after its JSON (:func:`write_message`), for the trusted side to check, and only reads
frame headers to know which case is running.

The server holds every problem and program it is sent, so no candidate is ever forked from
it: right after its warm imports, before it reads a request, it forks the zygote
(zygote.py), and every child and judge is a fork of that pristine process. The server hands
each one its own request in a memory file with the fork order.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import importlib.util
import json
import marshal
import math
import os
import signal
import struct
import sys
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
# The value channel's folder: beside this one, here and inside bubblewrap (bwrap.py binds both).
CHANNEL = os.path.join(os.path.dirname(HERE), "channel")
# Modules benchmark programs commonly import, loaded once so children start warm. numpy is
# left out on purpose: its mappings make every fork ~40% dearer (page tables are copied per
# fork, and forks are the main cost per sample); a program that needs it imports it itself.
PRELOAD = (
    "math re itertools collections functools heapq bisect string random typing hashlib "
    "statistics fractions decimal copy operator json datetime array cmath dataclasses enum "
    "io textwrap unicodedata"
).split()
_LEN = struct.Struct(">I")
BLOB = "blob"  # a reply's key for the bytes after its JSON (the frames' payloads)
# After this many cases in a row ran past their limits, the sample's other cases are not run
# (a request may ask for fewer: 1 when only its verdict counts).
TIMEOUTS_IN_A_ROW = 2
RESULT_PIPE_BYTES = 1 << 20  # the kernel's default pipe-max-size for an unprivileged process
# Modules whose at-fork hooks are deferred (below); the server never starts a thread.
FORK_HOOK_MODULES = ("random", "threading")


def _load(name: str, folder: str = HERE, **needs: Any) -> Any:
    """Import a sibling module by path (not via sys.path, so candidates cannot import it), with
    the modules it needs put in its globals before it runs (it has no package to import from)."""
    path = os.path.join(folder, name)
    spec = importlib.util.spec_from_file_location(f"_codeeval_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(needs)
    spec.loader.exec_module(module)
    return module


# The server's parts (stdlib only, loaded by path like everything here): the processes below
# one, the frame loop of one segment, the clean-up after a sample, its accounting, the pipes
# of a judge, the zygote.
processes = _load("processes.py")
segment = _load("segment.py", processes=processes)
cleanup = _load("cleanup.py", processes=processes)
accounting = _load("accounting.py")
judge_pipes = _load("judge_pipes.py")
zygote = _load("zygote.py")
# Where a forked process's own descriptors are lifted before it places them (clear of 0-5).
LIFTED_FD = 256


def _read_exact(fd: int, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_message(fd: int) -> dict[str, Any] | None:
    """The trusted side's next message: its JSON, and the bytes after it, past a NUL (which
    JSON as json writes it never holds), under ``BLOB`` (a problem's compiled parts)."""
    header = _read_exact(fd, 4)
    if header is None:
        return None
    body = _read_exact(fd, _LEN.unpack(header)[0])
    if body is None:
        return None
    cut = body.find(b"\0")
    if cut < 0:
        return json.loads(body)
    message = json.loads(body[:cut])
    message[BLOB] = body[cut + 1 :]
    return message


class Inbox:
    """The trusted side's messages, in order. While a sample waits between its parts, the
    messages that come before its go-on or stop (the next samples, read ahead) are kept for
    later here."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.kept: list[dict[str, Any]] = []

    def next(self) -> dict[str, Any] | None:
        """The next message (None: the trusted side closed the channel)."""
        return self.kept.pop(0) if self.kept else read_message(self.fd)

    def go_on(self, ident: Any) -> bool:
        """Whether the sample ``ident`` is to go on past a part (its ``resume`` message; a
        closed channel stops it)."""
        for index, message in enumerate(self.kept):
            if message.get("resume") == ident:
                return self.kept.pop(index).get("go") is True
        while True:
            message = read_message(self.fd)
            if message is None:
                return False
            if message.get("resume") == ident:
                return message.get("go") is True
            self.kept.append(message)


def write_message(fd: int, message: dict[str, Any], blob: bytes = b"") -> None:
    """A message: its length, its JSON, then, when it has some, a NUL and ``blob`` (the frames'
    payloads its slots point at; JSON as json writes it has no NUL byte in it)."""
    body = json.dumps(message, separators=(",", ":")).encode()
    if blob:
        body = b"%s\0%s" % (body, blob)
    view = memoryview(_LEN.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort hardening
        pass


class Server:
    """Owns the channel fds and runs one request at a time, forking through the zygote."""

    def __init__(self, cfg: dict[str, Any], codec: Any, child: Any) -> None:
        self.cfg = cfg
        self.codec = codec
        self.child = child
        self.pid1 = os.getpid() == 1
        self.work_root = cfg.get("work_root") or "/tmp"
        self.fork_hooks: list[dict[str, Any]] = []  # deferred at-fork hooks (see main)
        self._folders = 0
        # Set when a sample's folder could not be removed whole: what it left holds the work
        # root's room (bubblewrap's /tmp is sized, and its inodes are not), so the server ends
        # after this sample's reply and the samples queued behind it get a fresh one.
        self.retiring = False
        self.cap = int(cfg["max_output_bytes"])
        self.last_counters: Any = None
        self.zygote: Any = None  # zygote.Client, started by main before any request
        self.inbox: Any = None  # Inbox, and the channel to the trusted side: set by main
        self.out_fd = -1
        # Loaded by main: bridge.py (the child's end), remote.py (the judge's) and judge.py.
        self.bridge: Any = None
        self.remote: Any = None
        self.judge: Any = None

    # -- one sample ------------------------------------------------------------------------
    def run_sample(self, req: dict[str, Any]) -> dict[str, Any]:
        start = time.monotonic()
        budget = segment.Budget(float(req.get("budget_s", 30.0)), start)
        cases = req["cases"]
        state: dict[str, Any] = {
            "slots": [None] * len(cases),
            "coverage": [],
            "blob": [],  # the frames' payloads, in order (segment.attach)
            "blob_size": 0,
            "stdout": b"",
            "stderr": b"",
            "rss": 0,
            "notes": [],
            "infra": None,
            "pauses": _pauses(req),
            "sent": 0,  # the cases before this one went to the trusted side already
            "stopped": False,
        }
        # The counters after the previous sample are the ones before this one (nothing is
        # reaped in between): one snapshot per sample.
        before = self.last_counters
        next_case, first_segment = 0, True
        slots = state["slots"]
        in_a_row = req.get("timeouts_in_a_row")
        if type(in_a_row) is not int or not 1 <= in_a_row <= TIMEOUTS_IN_A_ROW:
            in_a_row = TIMEOUTS_IN_A_ROW
        while next_case < len(cases) and state["infra"] is None:
            if time.monotonic() >= budget.end and not budget.stretch(time.monotonic()):
                break
            if budget.cpu_done >= budget.seconds:  # its processes used it all, children too
                break
            if next_case >= in_a_row and all(
                segment.is_timeout(slots[i]) for i in range(next_case - in_a_row, next_case)
            ):
                # A sample that loops on every input would otherwise cost every case's limit.
                why = "the case" if in_a_row == 1 else f"the {in_a_row} cases"
                for i in range(next_case, len(cases)):
                    slots[i] = segment.verdict("timeout", f"not run: {why} before it timed out")
                break
            if next_case in state["pauses"] and next_case > state["sent"]:
                # The part ended with its child (a crash or time-out on its last case).
                if not self._part_judged(req, state, next_case, budget):
                    break
            next_case = self._segment(req, next_case, budget, first_segment, state)
            first_segment = False
        after = self.last_counters
        why = f"not run: the sample's time budget of {req['budget_s']}s ran out"
        if state["stopped"]:
            why = "not run: the trusted side stopped the sample after a part"
        for index, slot in enumerate(state["slots"]):
            if slot is None:
                state["slots"][index] = segment.verdict("timeout", why)
        return {
            "first": state["sent"],
            "slots": state["slots"][state["sent"] :],
            "coverage": state["coverage"],
            "stdout": state["stdout"].decode("utf-8", "replace"),
            "stderr": state["stderr"].decode("utf-8", "replace"),
            "max_rss_kb": state["rss"],
            "resources": accounting.resources(before, after, state["rss"]),
            "duration_s": time.monotonic() - start,
            "notes": state["notes"],
            "infra": state["infra"],
            BLOB: b"".join(state["blob"]),
        }

    def _part_judged(self, req: dict[str, Any], st: dict[str, Any], upto: int, budget: Any) -> bool:
        """Send the cases from the last part sent to ``upto`` (a part's end) to the trusted
        side, with their frames' payloads, and wait for its word: True to go on (the wait
        moves the sample's budget on: none of it is the sample's)."""
        paused = time.monotonic()
        first = st["sent"]
        message = {
            "id": req.get("id"),
            "part": True,
            "first": first,
            "slots": st["slots"][first:upto],
        }
        write_message(self.out_fd, message, b"".join(st["blob"]))
        st["blob"], st["blob_size"], st["sent"] = [], 0, upto
        go = self.inbox.go_on(req.get("id"))
        st["stopped"] = not go
        budget.shift(time.monotonic() - paused)
        return go

    def _segment(
        self, req: dict[str, Any], first: int, budget: Any, first_segment: bool, st: dict
    ) -> int:
        """Run one child for cases ``first..``; fill their slots; return the next case.

        When a case from ``first`` on is a sandbox-mode check, a judge (judge.py) runs beside
        the child: it runs those checks and sends their frames on its own pipe, and the child
        only answers the judge's operations on the program (bridge.py). Both are forked by the
        zygote, each with its own request only: the child never gets the checks' statements,
        the judge never the program.
        """
        workdir = self._private_folder()
        rfd, wfd = os.pipe()
        _widen(rfd)
        nonce = os.urandom(8).hex()
        # RLIMIT_CPU: what is left of the budget in CPU time, whatever the wall clock says.
        cpu_s = max(1, math.ceil(budget.seconds - budget.cpu_done) + 1)
        judged = any(case.get("mode") == "sandbox" for case in req["cases"][first:])
        judge = judge_pipes.Judge() if judged else None
        pauses = [p for p in st["pauses"] if p > first]
        child_end, server_end = _pause_sockets() if pauses else (-1, -1)
        stdio = (_memory_file("stdout"), _memory_file("stderr"))
        common = {"cpu_s": cpu_s, "workdir": workdir}
        procs: list[tuple[dict[str, Any], list[int]]] = []
        requests: list[int] = []
        try:
            if judge is not None:
                # The checks' own seed, never the child's (check_seed.py); none: a fresh one.
                seed = req.get("check_seed") or int.from_bytes(os.urandom(16), "big")
                part = marshal.dumps({"seed": seed, "first": first, "n": judge.nonce})
                requests.append(zygote.write_request([req["_judge_part"], part]))
                procs.append(({"kind": "judge", **common}, [requests[-1], *judge.judge_fds()]))
            sample = {
                "program": req["program"],
                "seed": req.get("seed", 0),
                "coverage": bool(req.get("coverage")),
                "first": first,
                "n": nonce,
                "pauses": pauses,
            }
            requests.append(zygote.write_request([req["_child_part"], marshal.dumps(sample)]))
            extra = list(judge.child_fds) if judge is not None else [child_end] if pauses else []
            spec = {"kind": "child", "pauses": bool(pauses), **common}
            procs.append((spec, [requests[-1], wfd, *stdio, *extra]))
            if judge is not None and self.cfg.get("drop_uid"):
                # The judge shares the work folder, which is the sample's uid's before either
                # starts (the child's own chown would race with the judge's chdir).
                os.chown(workdir, self.cfg["uid"], self.cfg["uid"])
            pids = self.zygote.spawn(procs)
            pid = pids[-1]
        except BaseException:
            _close_all(stdio)
            _close_all((server_end,) if pauses else ())
            os.close(rfd)
            if judge is not None:
                judge.close_in_server()
                judge.close()
            cleanup.remove_tree(workdir)
            raise
        finally:
            _close_all((wfd, *requests, *((child_end,) if pauses else ())))
        if judge is not None:
            judge.close_in_server()
        pidfd = os.pidfd_open(pid)
        os.set_blocking(rfd, False)
        frames = segment.Segment(
            self.codec,
            req,
            first,
            st,
            (rfd, nonce, judge),
            budget,
            lambda: segment.cpu_seconds(pids),
            pauses[0] if pauses else None,
            server_end if pauses else None,
            tree=lambda: segment.tree_cpu_seconds(self.zygote.pid),
        )
        frames.run(pidfd)
        while frames.outcome == "paused":  # the child waits at a part's end
            if not self._part_judged(req, st, frames.expected, budget):
                frames.outcome = "stopped"
                break
            _go_on(server_end)
            frames.resume(next((p for p in pauses if p > frames.expected), None))
            frames.run(pidfd)
        if pauses:
            os.close(server_end)
        if judge is not None:
            judge.close()
        status = self._finish(pid, pidfd, rfd, stdio, workdir, st)
        budget.cpu_done += st.pop("segment_cpu", 0.0)
        return frames.conclude(status)

    def _private_folder(self) -> str:
        """A new folder for one child (the work root is the server's own: a counter is
        unique)."""
        while True:
            self._folders += 1
            path = os.path.join(self.work_root, f"s{os.getpid()}-{self._folders}")
            try:
                os.mkdir(path, 0o700)
                return path
            except FileExistsError:  # left over from an earlier server with the same pid
                continue

    def _finish(
        self, pid: int, pidfd: int, rfd: int, stdio: tuple[int, int], workdir: str, st: dict
    ) -> int:
        """Kill the child and everything it left (the zygote reaps and accounts), collect
        its output, clean up; return the child's wait status."""
        try:
            done = self.zygote.finish(pid)
        finally:
            for fd in (pidfd, rfd):
                os.close(fd)
        st["rss"] = max(st["rss"], int(done["rss"]))
        before, self.last_counters = self.last_counters, done["counters"]
        if before is not None:  # every process of the segment, reaped: its CPU time
            st["segment_cpu"] = max(0.0, sum(done["counters"][:2]) - sum(before[:2]))
        for name, fd in zip(("stdout", "stderr"), stdio, strict=False):
            room = self.cap - len(st[name])
            if room > 0:
                st[name] += _read_bounded(fd, room)
        _close_all(stdio)
        cleanup.remove_tree(workdir)
        if os.path.lexists(workdir):
            self._quarantine(workdir)
            self.retiring = True
        return int(done["status"])

    def _quarantine(self, workdir: str) -> None:
        """What could not be removed (a million files) leaves the work root: a later child may
        read the work root's folders whatever their modes (the read capability, no bubblewrap),
        and must never see it. Moved into a root-only folder no view shows."""
        where = self.cfg.get("quarantine") or os.path.join(self.work_root, ".left")
        try:
            os.makedirs(where, mode=0o700, exist_ok=True)
            os.rename(workdir, os.path.join(where, os.path.basename(workdir)))
        except OSError:
            pass


def _pauses(req: dict[str, Any]) -> list[int]:
    """The cases a sample's parts start at (past the first), where the child waits until the
    trusted side has judged the part before: none with coverage or sandbox-mode checks (a
    judge process runs those, and the trusted side never asks so)."""
    pauses, cases = req.get("pauses"), req["cases"]
    if not pauses or req.get("coverage") or any(c.get("mode") == "sandbox" for c in cases):
        return []
    return sorted({p for p in pauses if type(p) is int and 0 < p < len(cases)})


def _pause_sockets() -> tuple[int, int]:
    """The child's and the server's ends of a sample's pause channel: at a part's end the
    child writes a byte (the server wakes: segment.py) and reads one (the word to go on).
    The server's end never blocks: what the candidate writes there is read and dropped."""
    import socket

    child, server = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    server.setblocking(False)
    return child.detach(), server.detach()


def _go_on(fd: int) -> None:
    """Tell a waiting child to run its next part (one that died meanwhile, or that never read
    its word, is met by the frame loop)."""
    try:
        os.write(fd, b"g")
    except OSError:
        pass


def _widen(fd: int) -> None:
    """Give a result pipe room for RESULT_PIPE_BYTES of frames: the server reads it every
    DRAIN_S (segment.py), and in a default pipe (64 KiB) a child that sends many values
    (EvalPlus's hundreds of inputs) would wait for every drain, not run."""
    import fcntl

    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, RESULT_PIPE_BYTES)
    except OSError:  # over the system's pipe-max-size: the default size still works
        pass


def _memory_file(name: str) -> int:
    """An anonymous memory file, on a high descriptor (clear of the child's fixed ones)."""
    import fcntl

    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64)
    finally:
        os.close(fd)


def _read_bounded(fd: int, size: int) -> bytes:
    """At most ``size`` bytes from the start of our own memory file (never blocks)."""
    data = bytearray()
    while len(data) < size:
        try:
            chunk = os.pread(fd, min(size - len(data), 1 << 20), len(data))
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _close_all(fds: Any) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def main(argv: list[str]) -> int:
    """Start up (hardening, warm imports, the zygote), greet, then serve requests until stdin
    closes. ``argv[1]``: the configuration as JSON, or ``-``: it is the first message on stdin
    (a view without bubblewrap is a list of thousands of paths, past what one argument holds).
    """
    cfg = json.loads(argv[1]) if argv[1] != "-" else None
    # PID 1 in its namespace: signals from inside are dropped unless handled, so keep SIG_DFL.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    _prctl(38, 1)  # PR_SET_NO_NEW_PRIVS: no setuid binary can give a child privileges back
    _prctl(4, 0)  # PR_SET_DUMPABLE=0: no process of a candidate can ptrace the server
    # Move the channel off fds 0/1 so stray prints can never corrupt it.
    in_fd, out_fd = os.dup(0), os.dup(1)
    if cfg is None:
        cfg = read_message(in_fd)
        if cfg is None:
            return 0
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    # The server runs with -u: sys.stdout and sys.stderr are unbuffered, so a child's output
    # reaches its files even if it is killed mid-case.
    fork_hooks = load_deferring_fork_hooks(PRELOAD)
    codec = _load("codec.py", CHANNEL)
    child = _load("child.py")
    server = Server(cfg, codec, child)
    server.bridge = _load("bridge.py")
    server.remote = _load("remote.py", bridge=server.bridge)
    server.judge = _load("judge.py")
    server.fork_hooks = fork_hooks
    kernel = _load("seccomp.py")
    # Everything loaded so far goes to the permanent generation: a child's garbage collection
    # then never walks (and copies on write) the zygote's whole heap.
    gc.collect()
    gc.freeze()
    # The zygote is forked now, before the first request is read: nothing of any sample is
    # ever in the memory its children start from.
    server.zygote = zygote.start(
        lambda: _zygote_setup(cfg, kernel, tcp=not server.pid1),
        lambda spec, fds: _become(server, spec, fds),
    )
    server.last_counters = server.zygote.order({"op": "counters"})["counters"]
    write_message(out_fd, {"hello": True, "pid": os.getpid(), "uid": cfg.get("uid", os.getuid())})
    problems: dict[str, dict[str, Any]] = {}
    server.inbox, server.out_fd = Inbox(in_fd), out_fd
    while True:
        request = server.inbox.next()
        if request is None:
            return 0
        if "resume" in request:  # for a sample that ended before the part it was sent for
            continue
        if "define" in request:  # a problem's trusted part, compiled by the trusted side
            problems[request["define"]] = _defined(request)
            continue
        try:
            reply = server.run_sample({**problems[request["problem"]], **request})
        except zygote.ZygoteGone:
            raise  # the server cannot fork any more: the trusted side starts a new one
        except Exception:  # noqa: BLE001 - report, keep serving
            server.last_counters = server.zygote.order({"op": "sweep"})["counters"]
            reply = {"infra": "fork server error:\n" + traceback.format_exc()[-4000:]}
        reply["id"] = request.get("id")
        write_message(out_fd, reply, reply.pop(BLOB, b""))
        if server.retiring:  # the trusted side runs what it queued here on a fresh server
            sys.stderr.write(
                f"fork server retired: a sample left more than {cleanup.MAX_REMOVED} entries "
                "in its folder\n"
            )
            return 0


def _zygote_setup(cfg: dict[str, Any], kernel: Any, tcp: bool) -> Any:
    """In the zygote, before its first fork: its counters, its kernel confinement (inherited
    by every child for free), and its handlers of the orders that end a sample."""
    counters = accounting.ChildCounters()
    confinement = kernel.Confinement(
        tcp=tcp, view=cfg.get("view"), read_cap=bool(cfg.get("read_cap"))
    )
    confinement.confine(cfg.get("work_root") or "/tmp")
    confinement.view = cfg["view"] = None  # enforced now; thousands of paths no child needs
    cfg["_kernel"] = confinement
    cfg["_read_cap"] = confinement.read_cap
    uid = cfg.get("uid") if cfg.get("drop_uid") else None
    # What the set-up made joins the permanent generation too: a child's collections never
    # walk (and copy on write) it.
    gc.collect()
    gc.freeze()

    def finish(order: dict[str, Any]) -> dict[str, Any]:
        pid = int(order["pid"])
        for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, 9)):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        status, rss = 0, 0
        try:
            _, status, usage = os.wait4(pid, 0)
            rss = int(usage.ru_maxrss)
        except ChildProcessError:
            pass
        cleanup.kill_rest(uid)
        return {"status": status, "rss": rss, "counters": counters.snapshot()}

    def sweep(order: dict[str, Any]) -> dict[str, Any]:
        cleanup.kill_rest(uid)
        return {"counters": counters.snapshot()}

    return {
        "finish": finish,
        "sweep": sweep,
        "counters": lambda order: {"counters": counters.snapshot()},
    }


def _become(server: Server, spec: dict[str, Any], fds: list[int]) -> None:
    """A process the zygote forked: its own descriptors only, its request, then the judge or
    the candidate's child (neither returns)."""
    fds = _lift(fds)
    request = zygote.read_request(fds[0])
    cfg, workdir, cpu_s = server.cfg, spec["workdir"], int(spec["cpu_s"])
    first, nonce = int(request["first"]), request["n"]
    if spec["kind"] == "judge":
        for target, fd in enumerate(fds[1:4], start=3):
            os.dup2(fd, target)
            os.close(fd)
        server.judge.run(
            server.codec, server.remote, server.child, request, first, nonce, cfg, workdir, cpu_s
        )
        return
    cfg["_stdio"] = (fds[2], fds[3])
    bridge_fds = (fds[4], fds[5]) if len(fds) >= 6 else None
    pause_fd = fds[4] if spec.get("pauses") else None
    server.child.run(
        server.codec,
        request,
        first,
        fds[1],
        nonce,
        cfg,
        workdir,
        cpu_s,
        server.fork_hooks,
        server.bridge,
        bridge_fds,
        pause_fd,
    )


def _lift(fds: list[int]) -> list[int]:
    """Move ``fds`` to LIFTED_FD and up and close every other descriptor but 0-2: what the
    zygote had open (its socket, its counters) never reaches a child."""
    lifted = [fcntl.fcntl(fd, fcntl.F_DUPFD, LIFTED_FD) for fd in fds]
    os.closerange(3, LIFTED_FD)
    os.closerange(max(lifted, default=LIFTED_FD) + 1, 1 << 20)
    return lifted


def load_deferring_fork_hooks(modules: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    """Run ``site`` (the server starts with ``-S``) and import ``modules``; return the at-fork
    hooks that this registered, instead of letting them run at every fork of a sample.

    Hooks registered with ``os.register_at_fork`` run in every forked child: ``threading``'s
    (``site``'s .pth files may import it) and ``random``'s reseed from urandom cost ~0.5 ms of
    CPU per sample, mostly copy-on-write faults. The server never starts a thread, so
    threading's bookkeeping has nothing to fix in its children, and each child seeds
    ``random`` from its request. The child registers the hooks again
    (:func:`child.run`), so forks the candidate makes itself get them as usual.
    """
    hooks: list[dict[str, Any]] = []
    register = os.register_at_fork
    os.register_at_fork = lambda **kinds: hooks.append(kinds)  # type: ignore[assignment]
    try:
        if sys.flags.no_site:
            import site

            site.main()  # what start-up does without -S: site-packages and .pth files
        for name in (*FORK_HOOK_MODULES, *modules):
            try:
                __import__(name)
            except Exception:  # noqa: BLE001 - optional (numpy)
                pass
    finally:
        os.register_at_fork = register
    return hooks


def _defined(message: dict[str, Any]) -> dict[str, Any]:
    """A problem's definition as samples use it: its cases' modes and limits, and the two parts
    the trusted side compiled (``problem_code.py``), one after the other in the message's
    bytes: the child's (``child_part`` bytes long), then the judge's, when it has one."""
    blob = message.pop(BLOB, b"")
    size = message.pop("child_part", None)
    if type(size) is not int or not 0 < size <= len(blob):
        raise ValueError("a problem's definition without its compiled parts")
    message["_child_part"] = blob[:size]
    if size < len(blob):
        message["_judge_part"] = blob[size:]
    return message


if __name__ == "__main__":
    sys.exit(main(sys.argv))
