"""The fork server: started once per Sandbox, forks one confined child per sample.

Stdlib only; run as ``python -S -s -P server.py CONFIG_JSON`` (inside bubblewrap when it works):
with ``-S`` the server runs ``site`` itself, so that it can defer the at-fork hooks that the
start-up registers (:func:`load_deferring_fork_hooks`).
It talks to the trusted side over its stdin/stdout with length-prefixed JSON messages, and
enforces the case timeouts and the sample budget by reading the child's frames with deadlines.
It never decodes values: it forwards the child's frame payloads (base64) for the trusted side
to check, and only reads frame headers to know which case is running.
"""

from __future__ import annotations

import base64
import ctypes
import gc
import importlib.util
import json
import math
import os
import resource
import select
import signal
import struct
import sys
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
# The value channel's folder: beside this one, here and inside bubblewrap (bwrap.py binds both).
CHANNEL = os.path.join(os.path.dirname(HERE), "channel")
MODULE_FLOOR_S = 2.0  # the program's module body gets at least this long
DRAIN_S = 0.02  # the longest the server sleeps before it reads the child's frames
END_TIMEOUT_S = 5.0  # time for the child to report coverage after the last case
KIND_STARTED = 5  # header-only frame: confinement done, candidate code about to run
# Modules benchmark programs commonly import, loaded once so children start warm. numpy is
# left out on purpose: its mappings make every fork ~40% dearer (page tables are copied per
# fork, and forks are the main cost per sample); a program that needs it imports it itself.
PRELOAD = (
    "math re itertools collections functools heapq bisect string random typing hashlib "
    "statistics fractions decimal copy operator json datetime array cmath dataclasses enum "
    "io textwrap unicodedata"
).split()
_LEN = struct.Struct(">I")
# After this many cases in a row ran past their limits, the sample's other cases are not run.
TIMEOUTS_IN_A_ROW = 2
STOPPED_AFTER_TIMEOUTS = f"not run: the {TIMEOUTS_IN_A_ROW} cases before it timed out"
# Modules whose at-fork hooks are deferred (below); the server never starts a thread.
FORK_HOOK_MODULES = ("random", "threading")
# The accounting keys of a sample (docs/formats.md, ``execution``); every language emits them.
IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes")


def _load(name: str, folder: str = HERE) -> Any:
    """Import a sibling module by path (not via sys.path, so candidates cannot import it)."""
    path = os.path.join(folder, name)
    spec = importlib.util.spec_from_file_location(f"_codeeval_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_exact(fd: int, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_message(fd: int) -> dict[str, Any] | None:
    header = _read_exact(fd, 4)
    if header is None:
        return None
    body = _read_exact(fd, _LEN.unpack(header)[0])
    return None if body is None else json.loads(body)


def write_message(fd: int, message: dict[str, Any]) -> None:
    body = json.dumps(message, separators=(",", ":")).encode()
    view = memoryview(_LEN.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view) :]


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort hardening
        pass


class Server:
    """Owns the channel fds and runs one request at a time."""

    def __init__(self, cfg: dict[str, Any], codec: Any, child: Any) -> None:
        self.cfg = cfg
        self.codec = codec
        self.child = child
        self.pid1 = os.getpid() == 1
        self.work_root = cfg.get("work_root") or "/tmp"
        self.fork_hooks: list[dict[str, Any]] = []  # deferred at-fork hooks (see main)
        self._folders = 0
        self.cap = int(cfg["max_output_bytes"])
        self.counters = ChildCounters()
        self.last_counters: tuple | None = None
        self.bridge: Any = None  # bridge.py and judge.py, loaded by main
        self.judge: Any = None

    # -- process hygiene -------------------------------------------------------------------
    def _descendants(self) -> list[int]:
        """Every process below this server (scan of /proc; used without a PID namespace)."""
        parents: dict[int, list[int]] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read()
                ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(name))
        found, todo = [], [os.getpid()]
        while todo:
            for pid in parents.get(todo.pop(), ()):
                found.append(pid)
                todo.append(pid)
        return found

    def _kill_rest(self) -> None:
        """Kill and reap every leftover process of the sample (grandchildren included)."""
        for attempt in range(200):
            if self.pid1:
                try:
                    os.kill(-1, signal.SIGKILL)  # PID 1: everything in the namespace but us
                except ProcessLookupError:
                    pass
            elif attempt:
                for pid in self._descendants():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    return
                if pid == 0:
                    break
            time.sleep(0.002 if attempt < 10 else 0.02)

    # -- one sample ------------------------------------------------------------------------
    def run_sample(self, req: dict[str, Any]) -> dict[str, Any]:
        start = time.monotonic()
        budget_end = start + float(req.get("budget_s", 30.0))
        cases = req["cases"]
        state: dict[str, Any] = {
            "slots": [None] * len(cases),
            "coverage": [],
            "stdout": b"",
            "stderr": b"",
            "rss": 0,
            "notes": [],
            "infra": None,
        }
        # The counters after the previous sample are the ones before this one (nothing is
        # reaped in between): one snapshot per sample.
        before = self.last_counters or self.counters.snapshot()
        next_case, first_segment = 0, True
        slots = state["slots"]
        while next_case < len(cases) and state["infra"] is None:
            if time.monotonic() >= budget_end:
                break
            if next_case >= TIMEOUTS_IN_A_ROW and all(
                _is_timeout(slots[i]) for i in range(next_case - TIMEOUTS_IN_A_ROW, next_case)
            ):
                # A sample that loops on every input would otherwise cost every case's limit.
                for i in range(next_case, len(cases)):
                    slots[i] = _verdict("timeout", STOPPED_AFTER_TIMEOUTS)
                break
            next_case = self._segment(req, next_case, budget_end, first_segment, state)
            first_segment = False
        after = self.last_counters = self.counters.snapshot()
        for index, slot in enumerate(state["slots"]):
            if slot is None:
                state["slots"][index] = _verdict(
                    "timeout", f"not run: the sample's time budget of {req['budget_s']}s ran out"
                )
        return {
            "slots": state["slots"],
            "coverage": state["coverage"],
            "stdout": state["stdout"].decode("utf-8", "replace"),
            "stderr": state["stderr"].decode("utf-8", "replace"),
            "max_rss_kb": state["rss"],
            "resources": _resources(before, after, state["rss"]),
            "duration_s": time.monotonic() - start,
            "notes": state["notes"],
            "infra": state["infra"],
        }

    def _segment(
        self, req: dict[str, Any], first: int, budget_end: float, first_segment: bool, st: dict
    ) -> int:
        """Fork one child for cases ``first..``; fill their slots; return the next case.

        When a case from ``first`` on is a sandbox-mode check, a judge (judge.py) is forked
        beside the child: it runs those checks and sends their frames on its own pipe, and the
        child only answers the judge's operations on the program (bridge.py).
        """
        cases = req["cases"]
        codec = self.codec
        workdir = self._private_folder()
        rfd, wfd = os.pipe()
        nonce = os.urandom(8).hex()
        cpu_s = max(1, math.ceil(budget_end - time.monotonic()) + 1)
        judged = [case.get("mode") == "sandbox" for case in cases]
        judge = self._fork_judge(req, first, workdir, cpu_s) if any(judged[first:]) else None
        bridge_fds = judge.child_fds if judge is not None else None
        pid = os.fork()
        if pid == 0:  # the child: never returns into the server loop
            try:
                os.close(rfd)
                if judge is not None:
                    judge.close_in_child()
                self.child.run(
                    codec,
                    req,
                    first,
                    wfd,
                    nonce,
                    self.cfg,
                    workdir,
                    cpu_s,
                    self.fork_hooks,
                    self.bridge,
                    bridge_fds,
                )
            finally:
                os._exit(71)
        os.close(wfd)
        if judge is not None:
            judge.close_in_server()
        pidfd = os.pidfd_open(pid)
        os.set_blocking(rfd, False)
        # The server does not wake for every frame: it sleeps until the child ends, the next
        # deadline, or DRAIN_S, and then reads whatever the child wrote (frames wait in the
        # pipe). A typical sample wakes it once; a deadline is enforced at most DRAIN_S late.
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        buf = bytearray()
        judge_buf = bytearray()
        phase, expected, started, dead = "module", first, False, False
        clock = time.monotonic()
        module_limit = max(_timeout(cases[first]), MODULE_FLOOR_S)
        deadline = min(clock + module_limit, budget_end)
        outcome = ""
        while not outcome:
            # Complete frames first: each moves the phase on and restarts the clock. A judged
            # case's frame is read from the judge's pipe only: the child cannot send it.
            while not outcome:
                from_judge = phase == "case" and judged[expected] and judge is not None
                source = judge_buf if from_judge else buf
                if len(source) < codec.HEADER_SIZE:
                    break
                try:
                    kind, index, length = _header(codec, bytes(source[: codec.HEADER_SIZE]))
                except codec.ChannelError:
                    outcome = "corrupt"
                    break
                if len(source) < codec.HEADER_SIZE + length:
                    break
                body = bytes(source[codec.HEADER_SIZE : codec.HEADER_SIZE + length])
                del source[: codec.HEADER_SIZE + length]
                now = time.monotonic()
                frame_nonce = judge.nonce if from_judge else nonce
                packed = {"nonce": frame_nonce, "data": base64.b64encode(body).decode()}
                if kind == KIND_STARTED and not started and phase == "module":
                    started = True
                elif not started:
                    outcome = "corrupt"
                elif phase == "module" and kind == codec.KIND_READY and index == first:
                    if body.startswith(b'{"status":"ok",'):
                        phase, clock = "case", now
                        deadline = min(now + _timeout(cases[first]), budget_end)
                    else:  # the program or test setup raised: every remaining case gets it
                        for i in range(first, len(cases)):
                            st["slots"][i] = dict(packed, kind="setup")
                        outcome = "done"
                elif phase == "case" and kind == codec.KIND_CASE and index == expected:
                    st["slots"][expected] = dict(packed, kind="frame")
                    expected += 1
                    clock = now
                    if expected == len(cases):
                        phase, deadline = "end", now + END_TIMEOUT_S
                    else:
                        deadline = min(now + _timeout(cases[expected]), budget_end)
                elif phase == "end" and kind == codec.KIND_END and index == len(cases):
                    st["coverage"].append(packed)
                    outcome = "done"
                else:
                    outcome = "corrupt"
            if outcome:
                break
            if dead:
                outcome = "exited"
                break
            wait = deadline - time.monotonic()
            if wait <= 0:
                outcome = "timeout"
                break
            if poller.poll(max(1, math.ceil(min(wait, DRAIN_S) * 1000))):
                dead = True
            buf += _drain(rfd)  # what the child wrote before it died still counts
            if judge is not None:
                judge_buf += _drain(judge.frames)
        if judge is not None:
            judge.close()
        elapsed = time.monotonic() - clock
        status = self._finish(pid, pidfd, rfd, workdir, st)
        remaining = range(expected, len(cases))
        if outcome == "done" or phase == "end":
            if phase == "end" and outcome != "done":
                st["notes"].append("coverage was not reported by the child")
            return len(cases)
        if not started and outcome != "corrupt":
            st["infra"] = f"the sandbox child failed before running the program ({_why(status)})"
            return len(cases)
        if outcome == "corrupt":
            verdict = _verdict("crashed", "corrupted result channel", elapsed)
        elif outcome == "timeout":
            budget = time.monotonic() >= budget_end - 1e-3
            limit = module_limit if phase == "module" else _timeout(cases[expected])
            if budget and elapsed < limit:
                msg = f"the sample's time budget of {req['budget_s']}s ran out"
            elif phase == "module":
                msg = f"the program did not finish loading within {limit:g}s"
            else:
                msg = f"timed out after {limit:g}s"
            verdict = _verdict("timeout", msg, elapsed)
        else:
            where = "while the program was loading" if phase == "module" else "during the case"
            verdict = _verdict("crashed", f"the child {_why(status)} {where}", elapsed)
        if phase == "module":  # the module itself failed: every remaining case shares it
            for i in remaining:
                st["slots"][i] = dict(verdict)
            return len(cases)
        st["slots"][expected] = verdict
        return expected + 1

    def _fork_judge(self, req: dict[str, Any], first: int, workdir: str, cpu_s: int) -> Judge:
        """Fork the judge of a segment's sandbox-mode cases (it never runs candidate code)."""
        judge = Judge()
        # The judge shares the work folder, which is the dropped uid's before either starts
        # (the child's own chown would race with the judge's chdir).
        if self.cfg.get("drop_uid"):
            os.chown(workdir, self.child.NOBODY, self.child.NOBODY)
        pid = os.fork()
        if pid == 0:
            try:
                judge.place_in_judge()
                self.judge.run(
                    self.codec,
                    self.bridge,
                    self.child,
                    req,
                    first,
                    judge.nonce,
                    self.cfg,
                    workdir,
                    cpu_s,
                )
            finally:
                os._exit(71)
        judge.pid = pid
        return judge

    def _private_folder(self) -> str:
        """A new folder for one child (the work root is the server's own: a counter is unique).

        Made here too, before the fork, for the child's ``confine``: its stdout and stderr as
        memory files (``cfg["_stdio"]``) that the server reads back through its own
        descriptors, never by a path the candidate could replace; and, before the first, the
        kernel confinement (seccomp.py), installed on the server itself so that every child
        inherits it at no cost (``cfg["_kernel"]``: the clean-up a child still does, if any).
        """
        if "_kernel" not in self.cfg:
            # PID 1: bubblewrap's own network namespace already keeps TCP to the sample.
            kernel = _load("seccomp.py").Confinement(tcp=not self.pid1)
            kernel.confine(self.work_root)
            self.cfg["_kernel"] = kernel
        _close_all(self.cfg.get("_stdio", ()))  # a segment that failed before _finish
        self.cfg["_stdio"] = (_memory_file("stdout"), _memory_file("stderr"))
        while True:
            self._folders += 1
            path = os.path.join(self.work_root, f"s{os.getpid()}-{self._folders}")
            try:
                os.mkdir(path, 0o700)
                return path
            except FileExistsError:  # left over from an earlier server with the same pid
                continue

    def _finish(self, pid: int, pidfd: int, rfd: int, workdir: str, st: dict) -> int:
        """Kill the child and everything it left, collect rusage and output, clean up."""
        for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, 9)):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        status = 0
        try:
            _, status, usage = os.wait4(pid, 0)
            st["rss"] = max(st["rss"], int(usage.ru_maxrss))
        except ChildProcessError:
            pass
        self._kill_rest()
        for fd in (pidfd, rfd):
            os.close(fd)
        stdio = self.cfg.pop("_stdio", ())
        for name, fd in zip(("stdout", "stderr"), stdio, strict=False):
            room = self.cap - len(st[name])
            if room > 0:
                st[name] += _read_bounded(fd, room)
        _close_all(stdio)
        remove_tree(workdir)
        return status


class Judge:
    """The pipes of one segment's judge: frames to the server, the bridge to the child."""

    def __init__(self) -> None:
        self.nonce = os.urandom(8).hex()
        self.pid = 0
        self.frames, self._frames_w = os.pipe()  # judge -> server
        self._to_child_r, self._to_child_w = os.pipe()  # judge -> child
        self._from_child_r, self._from_child_w = os.pipe()  # child -> judge
        self.child_fds = (self._to_child_r, self._from_child_w)

    def place_in_judge(self) -> None:
        """In the forked judge: its three ends on fds 3, 4 and 5, nothing else of them."""
        import fcntl

        mine = (self._frames_w, self._to_child_w, self._from_child_r)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 16) for fd in mine]
        for fd in (
            self.frames,
            self._frames_w,
            self._to_child_r,
            self._to_child_w,
            self._from_child_r,
            self._from_child_w,
        ):
            os.close(fd)
        for target, fd in enumerate(high, start=3):
            os.dup2(fd, target)
            os.close(fd)

    def close_in_child(self) -> None:
        """In the candidate's child: only its two bridge ends stay (child.run moves them)."""
        for fd in (self.frames, self._frames_w, self._to_child_w, self._from_child_r):
            os.close(fd)

    def close_in_server(self) -> None:
        """After both forks: the server keeps only the read end of the judge's frames."""
        for fd in (
            self._frames_w,
            self._to_child_r,
            self._to_child_w,
            self._from_child_r,
            self._from_child_w,
        ):
            os.close(fd)
        os.set_blocking(self.frames, False)

    def close(self) -> None:
        os.close(self.frames)


class ChildCounters:
    """CPU time and I/O of every process this server has reaped, summed (grandchildren too).

    The kernel adds a reaped child's CPU times to the parent's ``RUSAGE_CHILDREN`` and its I/O
    counters (and those of everything it reaped) to the parent's process-wide counters,
    ``/proc/self/io``; the thread's own counters, ``/proc/self/task/<pid>/io``, leave them
    out. The server is single-threaded, so the difference is its children's I/O, read with no
    right over the (other-user) child and nothing the child can forge. The thread's file is
    read first: that read's own bytes then show in the process-wide counters and are taken
    off. Both files stay open (``pread`` at 0 regenerates them): ~10 us per snapshot.
    """

    def __init__(self) -> None:
        try:
            self._fds: tuple[int, int] | None = (
                os.open(f"/proc/self/task/{os.getpid()}/io", os.O_RDONLY),
                os.open("/proc/self/io", os.O_RDONLY),
            )
        except OSError:  # no /proc or no I/O accounting: I/O counts as zero
            self._fds = None

    def snapshot(self) -> tuple[float, float, dict[str, int]]:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        io = dict.fromkeys(IO_KEYS, 0)
        if self._fds is not None:
            try:
                own_raw = os.pread(self._fds[0], 4096, 0)  # one read: the file is ~120 bytes
                whole, own = _io_counters(os.pread(self._fds[1], 4096, 0)), _io_counters(own_raw)
                io = {key: whole.get(key, 0) - own.get(key, 0) for key in IO_KEYS}
                io["rchar"] -= len(own_raw)
            except (OSError, ValueError):
                pass
        return usage.ru_utime, usage.ru_stime, io


def _io_counters(data: bytes) -> dict[str, int]:
    counters = {}
    for line in data.splitlines():
        key, _, value = line.partition(b": ")
        counters[key.decode()] = int(value)
    return counters


def _resources(before: tuple, after: tuple, rss: int) -> dict[str, Any]:
    """One sample's accounting from two snapshots; peak memory is the largest ``ru_maxrss``
    of the sample's forked children (wait4: the child and what it reaped)."""
    out: dict[str, Any] = {
        "cpu_user_s": round(max(0.0, after[0] - before[0]), 6),
        "cpu_system_s": round(max(0.0, after[1] - before[1]), 6),
        "max_rss_kib": int(rss),
    }
    for key in IO_KEYS:
        out[key] = max(0, after[2][key] - before[2][key])
    return out


def _timeout(case: dict[str, Any]) -> float:
    return float(case.get("timeout_s") or 1.0)


def _why(status: int) -> str:
    """How a child ended, in words (from its wait status)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"was killed by signal {name}"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)}"
    return "ended"


def _header(codec: Any, raw: bytes) -> tuple[int, int, int]:
    magic, kind, index, length = struct.unpack(">4sBII", raw)
    if magic != codec.MAGIC or length > codec.MAX_FRAME:
        raise codec.ChannelError("bad frame header")
    if kind not in (codec.KIND_READY, codec.KIND_CASE, codec.KIND_END, KIND_STARTED):
        raise codec.ChannelError("bad frame kind")
    return kind, index, length


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


MAX_REMOVED = 1_000_000  # entries one clean-up removes; past that the rest stays, closed


def remove_tree(path: str) -> None:
    """Remove a child's folder: nothing in it is followed, no recursion, any permissions.

    The folder is first made ours (root's) and 0700, so whatever could not be removed is
    closed to every later sample. Sub-folders are moved up into it and emptied one at a time (a
    deep tree needs no deep recursion), each made ours and 0700 first: the server may lack
    CAP_DAC_OVERRIDE (bubblewrap keeps only the capabilities it names).
    """
    try:
        os.chown(path, os.getuid(), os.getgid(), follow_symlinks=False)
        os.chmod(path, 0o700)
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    queue: list[str | None] = [None]
    count = 0
    try:
        while queue and count < MAX_REMOVED:
            name = queue.pop()
            fd = top if name is None else _claim(top, name)
            if fd is None:
                continue
            try:
                with os.scandir(fd) as entries:
                    listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                for entry, is_dir in listed:
                    count += 1
                    try:
                        if not is_dir:
                            os.unlink(entry, dir_fd=fd)
                        elif fd == top:
                            queue.append(entry)
                        else:
                            moved = f".rm-{os.urandom(6).hex()}"
                            _claim(fd, entry, keep_open=False)
                            os.rename(entry, moved, src_dir_fd=fd, dst_dir_fd=top)
                            queue.append(moved)
                    except OSError:
                        pass
            finally:
                if fd != top:
                    os.close(fd)
            if name is not None:
                try:
                    os.rmdir(name, dir_fd=top)
                except OSError:
                    pass
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _claim(parent: int, name: str, keep_open: bool = True) -> int | None:
    """Make sub-folder ``name`` ours and 0700 without following links; open it."""
    try:
        os.chown(name, os.getuid(), os.getgid(), dir_fd=parent, follow_symlinks=False)
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
        if not keep_open:
            return None
        return os.open(
            name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent
        )
    except OSError:
        return None


def _drain(fd: int) -> bytes:
    data = bytearray()
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _is_timeout(slot: dict[str, Any] | None) -> bool:
    return slot is not None and slot.get("kind") == "verdict" and slot.get("status") == "timeout"


def _verdict(status: str, message: str, duration: float = 0.0) -> dict[str, Any]:
    return {"kind": "verdict", "status": status, "message": message, "duration_s": duration}


def main(argv: list[str]) -> int:
    """Start up (hardening, warm imports), greet, then serve requests until stdin closes."""
    cfg = json.loads(argv[1])
    # PID 1 in its namespace: signals from inside are dropped unless handled, so keep SIG_DFL.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    if os.getpid() != 1:
        _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of a sample come back to us
    _prctl(38, 1)  # PR_SET_NO_NEW_PRIVS: no setuid binary can give a child privileges back
    _prctl(4, 0)  # PR_SET_DUMPABLE=0: a child of the same user cannot ptrace the server
    # Move the channel off fds 0/1 so stray prints can never corrupt it.
    in_fd, out_fd = os.dup(0), os.dup(1)
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
    server.judge = _load("judge.py")
    server.fork_hooks = fork_hooks
    # Everything loaded so far goes to the permanent generation: a child's garbage collection
    # then never walks (and copies on write) the server's whole heap.
    gc.collect()
    gc.freeze()
    write_message(out_fd, {"hello": True, "pid": os.getpid(), "uid": os.getuid()})
    problems: dict[str, dict[str, Any]] = {}
    while True:
        request = read_message(in_fd)
        if request is None:
            return 0
        if "define" in request:  # a problem's trusted part: compiled once, inherited by forks
            problems[request["define"]] = _compiled(request)
            continue
        try:
            reply = server.run_sample({**problems[request["problem"]], **request})
        except Exception:  # noqa: BLE001 - report, keep serving
            server._kill_rest()
            server.last_counters = None  # what was just reaped belongs to no sample
            reply = {"infra": "fork server error:\n" + traceback.format_exc()[-4000:]}
        reply["id"] = request.get("id")
        write_message(out_fd, reply)


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


def _compiled(problem: dict[str, Any]) -> dict[str, Any]:
    """The problem with its benchmark code compiled (trusted code: the children reuse it).

    Code that does not compile is left to the child, which then reports the SyntaxError
    where it belongs (the case or the test setup).
    """

    def code(source: str, mode: str, name: str = "<check>") -> Any:
        try:
            return compile(source, name, mode) if source else None
        except (SyntaxError, ValueError):
            return None

    problem["test_setup_code"] = code(problem.get("test_setup", ""), "exec", "<test_setup>")
    problem["helpers_code"] = code(problem.get("helpers", ""), "exec", "<helpers>")
    for case in problem["cases"]:
        case["prelude_code"] = code(case.get("prelude", ""), "exec")
        case["statement_code"] = code(case.get("statement", ""), "exec")
        case["calls_code"] = [code(expr, "eval") for expr in case.get("calls", ())]
    return problem


if __name__ == "__main__":
    sys.exit(main(sys.argv))
