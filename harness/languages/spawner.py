"""The warm sandbox's spawner: it starts every compiler and program of one worker thread.

Stdlib only, and it imports nothing from the project (the repository is hidden inside the
sandbox). Run as ``python3 -I -S spawner.py FD`` as PID 1 of a bubblewrap, or with
``--subreaper`` as a plain process where there is no bubblewrap. FD is a Unix seqpacket socket
to the trusted side (:mod:`harness.languages.launch`): one JSON message per request, with fds:

* ``{"op": "spawn", "argv", "env", "cwd", "limits", "uid"}`` with the fds the program gets as
  0, 1, 2, 3, ... (stdin, stdout, stderr, the result channel): the native starter
  (``--starter PATH``, :mod:`harness.languages.starter`), started with ``posix_spawn``, or
  else a child forked beforehand (while nothing ran) takes its own session, those fds only,
  the resource limits, the uid (no groups, no capabilities) and execs ``argv``
  (:mod:`harness.languages.confine`, loaded by path from ``--confine PATH`` or beside this
  file, does it in the child). ``no_new_privs`` and the seccomp filter (the Python sandbox's,
  given as ``--seccomp PATH``, else one refusing the keyring calls) are this process's own,
  installed once, so every child has them. Answers ``{"ok": true}`` or ``{"error": why}``
  once the exec happened or failed: a failure before the exec comes back on a close-on-exec
  pipe (the program never holds it), never on the program's stdout or stderr, which are the
  program's to write.
* ``{"op": "wait", "timeout"}``: ``{"status": wait status}`` once the program ended, or
  ``{"status": null}`` when it still runs after ``timeout`` seconds.
* ``{"op": "finish"}``: kills every process of the run (as PID 1: everything in the namespace
  but itself; as a subreaper: the program's process group and everything left below this
  process), reaps them all, removes the System V IPC objects the run's uid left (where the
  seccomp filter lets a run make any), and answers ``{"status", "resources"}``.
* ``{"op": "run", ..., "timeout"}``: a spawn's fields and fds, then wait and finish, in one
  round trip: ``{"status", "resources", "wall_s"}`` (from the exec to the end) or
  ``{"error": why}``. A program whose output is read only after it ended (a stdio test) needs
  nothing between, and every message between the two processes is a wake-up of each, which a
  loaded machine makes dear. Runs may be queued: each starts once the one before has ended.
* ``{"op": "cancel"}``: every run queued before it and not answered yet ends now (the running
  one killed, the others never started), each answered with ``"cancelled": true``; then
  ``{"ok": true}``. The trusted side writes a byte on the ``--bell FD`` pipe after it, which
  is what a waiting run watches.

One program runs at a time. Its accounting comes from kernel counters this trusted process
reads, never from the program: CPU times are the change of ``RUSAGE_CHILDREN`` over the run
(every orphan of the run is reparented to this process and reaped by it, so everything the run
started counts), peak memory the largest ``ru_maxrss`` of the reaped processes (a child's count
starts with this process's image, in which it runs until its first exec: ~14 MiB), I/O the
change of this process's reaped-children counters (``/proc/self/io`` minus its own thread's).
"""

from __future__ import annotations

import array
import collections
import ctypes
import fcntl
import gc
import json
import os
import resource
import select
import signal
import socket
import sys
import time
from typing import Any

IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes")
LIMITS = {
    "data": resource.RLIMIT_DATA,
    "cpu": resource.RLIMIT_CPU,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
    "msgqueue": resource.RLIMIT_MSGQUEUE,
}
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
_LIBC = ctypes.CDLL(None, use_errno=True)
_prctl = _LIBC.prctl  # looked up once, not in every child
# The child's confinement (harness.languages.confine), loaded by path in main() before any fork.
confine: Any = None


def _load_confine(path: str) -> Any:
    """The confinement module at ``path`` (stdlib only; the repository is not in this view)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("codeeval_confine", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _zygote(sock: socket.socket, host_fd: int, status: int) -> None:
    """A prepared child: confined as far as it can be without its request (while nothing
    waits for it), it waits for one request, then finishes its confinement and execs (never
    returns)."""
    try:
        os.close(host_fd)  # the trusted side must see the spawner's end close when it dies
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        failure: BaseException | None = None
        try:
            confine.prelude()
        except BaseException as exc:  # noqa: BLE001 - reported on the status pipe, on request
            failure = exc
        data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 16)
        if data:  # the trusted side's request as it came: nothing is encoded twice
            req: dict[str, Any] = {"argv": ["(the request)"], "env": {}, "cwd": "/"}
            limits: list[tuple[int, tuple[int, int]]] = []
            try:  # the spawner read it already; a failure still goes to the status pipe
                req = json.loads(data)
                limits = _rlimits(req["limits"])
            except Exception as exc:  # noqa: BLE001
                failure = failure or exc
            confine.child(req, fds, limits, status, preluded=True, prelude_failure=failure)
    finally:
        os._exit(127)


# This process's hard limits, read once: it never changes its own (a child's cannot be raised).
_HARD = {name: resource.getrlimit(kind)[1] for name, kind in LIMITS.items()}


def _rlimits(limits: dict[str, int]) -> list[tuple[int, tuple[int, int]]]:
    out = []
    for name, value in limits.items():
        hard = _HARD[name]
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # a hard limit cannot be raised
        out.append((LIMITS[name], (value, value)))
    return out


class Counters:
    """RUSAGE_CHILDREN and the reaped children's I/O (this process is single-threaded)."""

    def __init__(self) -> None:
        self.own = os.open(f"/proc/self/task/{os.getpid()}/io", os.O_RDONLY)
        self.whole = os.open("/proc/self/io", os.O_RDONLY)

    def snapshot(self) -> tuple[float, float, dict[str, int]]:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        own_raw = os.pread(self.own, 4096, 0)  # read first: its bytes are taken off below
        whole, own = _io(os.pread(self.whole, 4096, 0)), _io(own_raw)
        io = {key: whole.get(key, 0) - own.get(key, 0) for key in IO_KEYS}
        io["rchar"] -= len(own_raw)
        return usage.ru_utime, usage.ru_stime, io


def _io(data: bytes) -> dict[str, int]:
    out = {}
    for line in data.splitlines():
        key, _, value = line.partition(b": ")
        out[key.decode()] = int(value)
    return out


class Spawner:
    def __init__(self, pid1: bool, host_fd: int) -> None:
        self.pid1 = pid1
        self.host_fd = host_fd
        self.counters = Counters()
        self.pid = 0
        self.pidfd = -1
        self.status: int | None = None
        self.rss = 0
        self.before: tuple[float, float, dict[str, int]] | None = None
        self.uid: int | None = None
        self.zygote: tuple[int, socket.socket, int] | None = None  # pid, socket, status pipe
        self.starter: str | None = None  # the native starter, where it works (main())

    def prepare(self) -> None:
        """Fork the next program's process now, while nothing runs (a fork copies this
        process's page tables, and a loaded machine makes it dearer): a spawn then only hands
        it the request and its fds, and it confines itself and execs."""
        if self.zygote is not None or self.pid or self.starter:
            return
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            status_r, status_w = os.pipe()  # close-on-exec, both
            pid = os.fork()
        except OSError:  # the spawn forks then
            return
        if pid == 0:
            os.close(status_r)
            _zygote(theirs, self.host_fd, status_w)
        theirs.close()
        os.close(status_w)
        self.zygote = (pid, ours, status_r)

    def spawn(self, req: dict[str, Any], fds: list[int], data: bytes) -> dict[str, Any]:
        """Start ``req`` (``data``: its message); answer once it exec'd or failed before."""
        return self._exec_result(self._launch(req, fds, data))

    def _launch(self, req: dict[str, Any], fds: list[int], data: bytes) -> int:
        """Start ``req`` with the starter, in the prepared child, or in a new one: the read end
        of its status pipe."""
        if self.pid:
            self.finish()  # one program at a time: a forgotten one does not outlive its turn
        limits = _rlimits(req["limits"])  # checked before anything starts
        self.before = self.counters.snapshot()
        self.status, self.rss, self.uid = None, 0, req.get("uid")
        started = self._start(req, fds, limits) if self.starter else self._hand_over(data, fds)
        if started is None:
            status_r, status_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                confine.child(req, fds, limits, status_w)
            os.close(status_w)
            started = (pid, status_r)
        pid, status_r = started
        self.pid, self.pidfd = pid, os.pidfd_open(pid)
        return status_r

    def _exec_result(self, status_r: int) -> dict[str, Any]:
        # Until the exec (or the failure before it) closes the child's end.
        failure = _read_all(status_r)
        if failure:
            self.finish()
            return {"error": f"spawner: {failure.decode('utf-8', 'replace')}"}
        return {"ok": True}

    def _start(
        self, req: dict[str, Any], fds: list[int], limits: list[tuple[int, tuple[int, int]]]
    ) -> tuple[int, int]:
        """``posix_spawn`` the native starter (no copy of this process), which confines itself
        and execs the program: its pid and status pipe."""
        assert self.starter is not None
        uid = req.get("uid")
        ruleset, keep_cap, _ = confine.start_settings(uid)
        status_r, status_w = os.pipe()
        moved: list[int] = []
        try:
            # Out of the way of the targets 0 .. len(fds)+1 first: no dup2 overwrites a source.
            for fd in [*fds, status_w]:
                moved.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64))
            count = len(fds)
            actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(moved)]
            if ruleset >= 0:
                actions.append((os.POSIX_SPAWN_DUP2, ruleset, count + 1))
            argv = [
                self.starter,
                str(count),
                str(count + 1 if ruleset >= 0 else -1),
                str(-1 if uid is None else uid),
                str(keep_cap),
                str(len(limits)),
                *[str(part) for kind, (value, _) in limits for part in (kind, value)],
                req["cwd"],
                req["argv"][0],
                *req["argv"],
            ]
            pid = os.posix_spawn(self.starter, argv, req["env"], file_actions=actions)
        except BaseException:
            os.close(status_r)
            raise
        finally:
            for fd in moved:
                os.close(fd)
            os.close(status_w)
        return pid, status_r

    def _hand_over(self, data: bytes, fds: list[int]) -> tuple[int, int] | None:
        """The prepared process takes the request: its pid and status pipe (None: there is
        none, or it is gone)."""
        if self.zygote is None:
            return None
        pid, sock, status_r = self.zygote
        self.zygote = None
        try:
            socket.send_fds(sock, [data], fds, socket.MSG_NOSIGNAL)  # gone: EPIPE, no signal
            return pid, status_r
        except OSError:
            os.close(status_r)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            return None
        finally:
            sock.close()

    def run(
        self, req: dict[str, Any], fds: list[int], data: bytes, inbox: Inbox | None = None
    ) -> dict[str, Any]:
        """Spawn, wait and finish: one answer for the whole run.

        The starter execs microseconds after it starts, so its program's end is waited for
        first and the status pipe read after (one wake-up of this process fewer a run, dear on
        a loaded machine); a fork confines itself in Python first, so its time runs from its
        exec."""
        status_r = self._launch(req, fds, data)
        if not self.starter:
            started = self._exec_result(status_r)
            if "error" in started:
                return started
        begun = time.monotonic()
        status = self.wait(float(req["timeout"]), inbox)["status"]  # None: still ran
        wall = time.monotonic() - begun
        if self.starter:
            started = self._exec_result(status_r)  # at its end by now: no wait
            if "error" in started:
                return started
        cancelled = {"cancelled": True} if inbox is not None and inbox.cancels else {}
        return {**self.finish(), "status": status, "wall_s": round(wall, 6), **cancelled}

    def wait(self, timeout: float, inbox: Inbox | None = None) -> dict[str, Any]:
        """Until the program ends or ``timeout`` runs out (or ``inbox`` gets a cancel)."""
        if self.pid and self.status is None:
            deadline = time.monotonic() + max(0.0, timeout)
            while True:
                watch = [self.pidfd, *(inbox.watched() if inbox is not None else ())]
                ready = select.select(watch, [], [], max(0.0, deadline - time.monotonic()))[0]
                if not ready or self.pidfd in ready or (inbox is not None and inbox.cancelled()):
                    break
            self._reap_main(os.WNOHANG)
        return {"status": self.status}

    def _reap_main(self, flags: int) -> None:
        try:
            pid, status, usage = os.wait4(self.pid, flags)
        except ChildProcessError:
            return
        if pid:
            self.status = status
            self.rss = max(self.rss, usage.ru_maxrss)

    def finish(self) -> dict[str, Any]:
        if not self.pid:
            return {"status": None, "resources": {}}
        self._kill_all()
        after = self.counters.snapshot()
        before = self.before or after
        resources: dict[str, Any] = {
            "cpu_user_s": round(max(0.0, after[0] - before[0]), 6),
            "cpu_system_s": round(max(0.0, after[1] - before[1]), 6),
            "max_rss_kib": int(self.rss),
            **{key: max(0, after[2][key] - before[2][key]) for key in IO_KEYS},
        }
        os.close(self.pidfd)
        self.pid, self.pidfd = 0, -1
        if not confine.refuses_ipc():  # else no run can make one: nothing to look for
            _remove_ipc(self.uid)
        return {"status": self.status, "resources": resources}

    def _kill_all(self) -> None:
        """SIGKILL every process of the run and reap them all, the program first."""
        for attempt in range(500):
            if self.pid1:  # everything in the namespace but this process
                targets = [-1]
            else:  # the program's group while its unreaped pid holds the group's id; then
                # whatever was reparented to this subreaper
                targets = [-self.pid] if self.status is None else []
                targets += _children() if attempt else []
            for target in targets:
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if self.status is None:
                self._reap_main(0)  # killed: it ends at once (the rest is polled below)
            while True:
                try:
                    pid, _, usage = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    return
                if pid == 0:
                    break
                self.rss = max(self.rss, usage.ru_maxrss)
            time.sleep(0.001 if attempt < 20 else 0.01)


def _read_all(fd: int, timeout: float = 30.0) -> bytes:
    """Read the pipe ``fd`` to its end (bounded in size and time) and close it."""
    out, deadline = b"", time.monotonic() + timeout
    try:
        while len(out) < 8192:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                return out or b"the program did not reach its exec in time"
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            out += chunk
    finally:
        os.close(fd)
    return out


def _children() -> list[int]:
    """This process's children (orphans of a run reparent to it: it is a subreaper)."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read()
                if int(stat[stat.rindex(b")") + 2 :].split()[1]) == me:
                    found.append(int(name))
            except (OSError, ValueError, IndexError):
                continue
    return found


_IPC = {"shm": 0, "msg": 1, "sem": 2}


def _remove_ipc(uid: int | None) -> None:
    """Remove the System V IPC objects a run left (they outlive processes; the namespace is
    shared by the runs). Only the owner may, so a child takes the run's uid to do it."""
    found: list[tuple[int, int]] = []
    if uid is None:
        return
    for kind, code in _IPC.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        # key, id, perms, size/..., cpid, lpid, ... uid: only the run's own objects
        found += [(code, int(f[1])) for f in map(str.split, lines) if len(f) > 7 and _owned(f, uid)]
    if not found:
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for code, ident in found:
                if code == 0:
                    _LIBC.shmctl(ident, 0, None)  # IPC_RMID
                elif code == 1:
                    _LIBC.msgctl(ident, 0, None)
                else:
                    _LIBC.semctl(ident, 0, 0)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _owned(fields: list[str], uid: int) -> bool:
    return str(uid) in fields[4:]


def _starter_works(path: str) -> bool:
    """The native starter can be started here (it exits 126 on a short command line)."""
    try:
        pid = os.posix_spawn(path, [path], {})
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 126
    except OSError:
        return False


class Inbox:
    """The trusted side's requests, read ahead of their turn while a run is waited for: a
    ``cancel`` among them ends every run queued before it, the running one killed and the
    others never started (tests queued behind a failed one, which nothing will judge)."""

    def __init__(self, sock: socket.socket, bell: int = -1) -> None:
        self.sock = sock
        self.bell = bell  # rung after a cancel is sent (else the socket itself is watched)
        self.ahead: collections.deque[tuple[bytes, list[int]]] = collections.deque()
        self.cancels = 0  # cancels read and not yet served
        self.closed = False

    def next(self) -> tuple[bytes, list[int]]:
        """The next request (b"" once the trusted side is gone)."""
        if not self.ahead and not self.closed:
            self._read(0)
        return self.ahead.popleft() if self.ahead else (b"", [])

    def watched(self) -> list[Any]:
        """What wakes a waiting run for a cancel."""
        if self.bell >= 0:
            return [self.bell]
        return [] if self.closed else [self.sock]

    def cancelled(self) -> bool:
        """Whether a cancel has come, after reading whatever has come meanwhile."""
        if self.bell >= 0:
            try:
                if not os.read(self.bell, 4096):  # the trusted side is gone
                    self.bell = -1
            except BlockingIOError:
                pass
        try:
            while not self.closed:
                self._read(socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass
        return self.cancels > 0

    def _read(self, flags: int) -> None:
        try:
            data, fds = _recv(self.sock, flags)
        except BlockingIOError:
            raise
        except OSError:
            data, fds = b"", []
        if not data:
            self.closed = True
            return
        self.ahead.append((data, fds))
        if b'"op": "cancel"' in data:
            self.cancels += 1


_FDS_SPACE = socket.CMSG_LEN(16 * array.array("i").itemsize)


def _recv(sock: socket.socket, flags: int) -> tuple[bytes, list[int]]:
    """One message and the fds it carries (``socket.recv_fds`` drops ``flags`` before 3.12)."""
    data, ancillary, _, _ = sock.recvmsg(1 << 20, _FDS_SPACE, flags)
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def serve(sock: socket.socket, pid1: bool, starter: str | None = None, bell: int = -1) -> None:
    spawner = Spawner(pid1, sock.fileno())
    # Only with the filter on this process: the starter installs none itself.
    if starter and confine.start_settings(None)[2] and _starter_works(starter):
        spawner.starter = starter
    sock.send(json.dumps({"ready": True}).encode(), socket.MSG_NOSIGNAL)
    spawner.prepare()
    inbox = Inbox(sock, bell)
    while True:
        data, fds = inbox.next()
        if not data:
            return
        req = json.loads(data)
        try:
            if req["op"] == "cancel":
                inbox.cancels -= 1
                reply = {"ok": True}
            elif req["op"] == "run" and inbox.cancels:  # queued before a cancel: never started
                reply = {"status": None, "resources": {}, "cancelled": True}
            elif req["op"] == "spawn":
                reply = spawner.spawn(req, fds, data)
            elif req["op"] == "run":
                reply = spawner.run(req, fds, data, inbox)
            elif req["op"] == "wait":
                reply = spawner.wait(float(req["timeout"]))
            elif req["op"] == "finish":
                reply = spawner.finish()
            else:
                reply = {"error": f"unknown op {req['op']!r}"}
        except Exception as exc:  # noqa: BLE001 - the trusted side reports it as infra
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            sock.send(json.dumps(reply).encode(), socket.MSG_NOSIGNAL)
        except OSError:  # the trusted side is gone
            return
        if req["op"] in ("finish", "run"):
            spawner.prepare()  # after the answer: the trusted side goes on meanwhile


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def main(argv: list[str]) -> int:
    pid1 = os.getpid() == 1
    if not pid1 and "--subreaper" not in argv:
        # kill(-1) is "every process of the run" only inside the run's own PID namespace.
        print(
            "spawner: must run as PID 1 of its own PID namespace, or --subreaper", file=sys.stderr
        )
        return 2
    if not pid1 and _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("spawner: cannot become a child subreaper", file=sys.stderr)
        return 2
    # A same-uid program (a harness not run as root) must not ptrace or read this process.
    _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    # Python ignores these; a program gets them as a fresh process has them (once here rather
    # than in every child: handled signals are reset by exec, ignored ones are not).
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    global confine
    here = os.path.dirname(os.path.abspath(__file__))
    confine = _load_confine(_option(argv, "--confine") or os.path.join(here, "confine.py"))
    if "--seccomp" in argv:
        confine.use_shared_filter(_option(argv, "--seccomp"))
    if "--view" in argv:  # without bubblewrap: Landlock's allow-list, on every run
        writable = _option(argv, "--writable") or "/nonexistent"
        confine.read_cap_needed = "--read-cap" in argv
        try:
            confine.restrict_view(writable, _option(argv, "--view"))
        except OSError as exc:
            print(f"spawner: cannot confine runs to the view: {exc}", file=sys.stderr)
            return 2
    confine.filter_self()  # last: every child inherits it
    gc.freeze()  # a collection would touch (and so copy) every page a prepared child shares
    bell = int(_option(argv, "--bell") or -1)
    if bell >= 0:
        os.set_blocking(bell, False)
        os.set_inheritable(bell, False)
    serve(socket.socket(fileno=int(argv[1])), pid1, _option(argv, "--starter"), bell)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
