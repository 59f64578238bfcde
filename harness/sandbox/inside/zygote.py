"""The zygote: the pristine process that every candidate child and judge is forked from.

Stdlib only; loaded by path by the fork server (server.py), which forks it right after its warm
imports and before it reads any request. From then on the zygote only forks, kills and reaps.
It never receives a program, a test, an input, an expected value or a frame: those go from the
server straight to the one process they are for, in a memory file handed over with the fork
order. So whatever a candidate finds in its own address space (freed buffers included) is its
own program and inputs, never another sample's (docs/security.md).

The server talks to it over a ``SOCK_SEQPACKET`` socket, one marshalled dict per order (its
own trusted data only: ``marshal`` is cheaper than JSON, and orders are per sample), with
descriptors passed as ``SCM_RIGHTS``:

* ``{"op": "spawn", "procs": [{"kind", "fds", "cpu_s", "workdir"}, ...]}`` with each
  process's descriptors in order (its request's memory file first): forks them in order and
  answers ``{"pids": [...]}``.
* ``{"op": "counters"}``: ``{"counters"}`` now (the first snapshot, before any sample);
  ``{"op": "sweep"}``: the same after killing and reaping everything a sample left (a
  segment the server gave up on).
* ``{"op": "finish", "pid"}``: kills the child's process group, reaps it, kills and reaps
  everything else the sample left (every process of its uid), and answers ``{"status", "rss",
  "counters"}``: the child's wait status, its peak memory and the reaped children's accounting
  (:mod:`accounting`), read from kernel counters only this process has.

The zygote is the subreaper of every process a sample starts, and it confines itself once
(seccomp, Landlock: seccomp.py) before its first fork, so each child starts confined at no
cost. It dies with the server (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import array
import marshal
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

MAX_ORDER = 64 * 1024  # bytes of one order (it carries no sample data)
MAX_FDS = 16
# glibc's mallopt() parameters (malloc.h) and what every forked process gets: blocks of up to
# MMAP_ABOVE bytes come from the heap, and up to KEEP_FREED bytes of freed heap stay mapped.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_ABOVE, KEEP_FREED = 32 << 20, 128 << 20
SOCKET_FD = 64  # the zygote's end of the socket, clear of the fds a child places
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


# -- the server's end -----------------------------------------------------------------------
class ZygoteGone(Exception):
    """The zygote died or answered nonsense: the server cannot fork samples any more."""


class Client:
    """The server's handle on its zygote."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid

    def order(self, message: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        body = marshal.dumps(message)
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        try:
            self.sock.sendmsg([body], ancillary)
            reply = self.sock.recv(MAX_ORDER)
        except OSError as exc:
            raise ZygoteGone(f"the zygote is gone: {exc}") from None
        if not reply:
            raise ZygoteGone("the zygote is gone")
        answer = marshal.loads(reply)
        if type(answer) is not dict or "error" in answer:
            raise ZygoteGone(f"the zygote failed: {answer!r:.2000}")
        return answer

    def spawn(self, procs: list[tuple[dict[str, Any], list[int]]]) -> list[int]:
        """Fork one process per ``(spec, fds)``; return their pids."""
        specs, fds = [], []
        for spec, own in procs:
            specs.append({**spec, "fds": len(own)})
            fds.extend(own)
        return list(self.order({"op": "spawn", "procs": specs}, fds)["pids"])

    def finish(self, pid: int) -> dict[str, Any]:
        return self.order({"op": "finish", "pid": pid})


def start(
    setup: Callable[[], Handlers],
    run: Callable[[dict[str, Any], list[int]], None],
    keep: tuple[int, ...] = (),
) -> Client:
    """Fork the zygote now and return the server's handle on it.

    In the zygote, every descriptor but 0-2 and ``keep`` is closed first (the server's channel
    to the trusted side above all); then ``setup()`` confines it and returns the handlers of
    the orders other than ``spawn``; then ``run(spec, fds)`` becomes each process it forks (and never returns).
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:  # the zygote
        try:
            ours.close()
            fd = os.dup2(theirs.fileno(), SOCKET_FD, inheritable=False)
            theirs.close()
            _close_all_but((0, 1, 2, SOCKET_FD, *keep))
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
            reuse_freed_memory()
            serve(socket.socket(fileno=fd), setup(), run)
        finally:
            os._exit(0)
    theirs.close()
    return Client(ours, pid)


def _close_all_but(keep: tuple[int, ...]) -> None:
    """Close every descriptor but ``keep`` (the listing of /proc/self/fd, else a range)."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, 1024))
    for fd in open_fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _prctl(option: int, value: int) -> None:
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort
        pass


def reuse_freed_memory() -> None:
    """Let a process reuse the memory it frees instead of handing it back to the kernel.

    By default glibc maps each large block on its own and unmaps it when freed, and returns
    the heap's free top; a program that builds and drops large values input after input (a
    string of millions of characters per call) then faults every page in again, and so does
    the digest of each value (canonical.py). Set here, once, every process forked from the
    zygote inherits it: HumanEval/15's reference ran its 137 inputs in 2.37 s of CPU instead of
    2.61 s. A child lives for one sample, so what it keeps is freed when it exits.
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: its own defaults stay
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_ABOVE)
    mallopt(M_TRIM_THRESHOLD, KEEP_FREED)


# -- the zygote's loop ------------------------------------------------------------------------
Handlers = dict[str, Callable[[dict[str, Any]], dict[str, Any]]]


def serve(
    sock: socket.socket, handlers: Handlers, run: Callable[[dict[str, Any], list[int]], None]
) -> None:
    """Answer orders until the server closes the socket."""
    while True:
        try:
            body, ancdata, _, _ = sock.recvmsg(MAX_ORDER, socket.CMSG_SPACE(MAX_FDS * 4))
        except InterruptedError:
            continue
        if not body:
            return
        fds = _fds(ancdata)
        try:
            order = marshal.loads(body)
            if order["op"] == "spawn":
                reply: dict[str, Any] = {"pids": _spawn(order["procs"], fds, run)}
            elif order["op"] in handlers:
                reply = handlers[order["op"]](order)
            else:
                reply = {"error": f"unknown order {order.get('op')!r}"}
        except Exception as exc:  # noqa: BLE001 - answered, the server decides
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        sock.send(marshal.dumps(reply))


def _fds(ancdata: list[tuple[int, int, bytes]]) -> list[int]:
    fds = array.array("i")
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return list(fds)


def _spawn(
    procs: list[dict[str, Any]], fds: list[int], run: Callable[[dict[str, Any], list[int]], None]
) -> list[int]:
    if sum(int(p["fds"]) for p in procs) != len(fds):
        raise ValueError("the order's descriptors do not add up")
    pids, at = [], 0
    for spec in procs:
        own = fds[at : at + int(spec["fds"])]
        at += len(own)
        pid = os.fork()
        if pid == 0:  # never returns into this loop
            try:
                for fd in fds:
                    if fd not in own:
                        os.close(fd)
                os.close(SOCKET_FD)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                run(spec, own)
            finally:
                os._exit(71)
        pids.append(pid)
    return pids


def read_request(fd: int) -> dict[str, Any]:
    """A forked process's request: marshalled parts in its memory file (from the server)."""
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0)
    while len(data) < size:  # a memory file reads whole; a short read is not expected
        data += os.pread(fd, size - len(data), len(data))
    os.close(fd)
    request: dict[str, Any] = {}
    view = memoryview(data)
    while view:
        length = int.from_bytes(view[:8], "big")
        request.update(marshal.loads(view[8 : 8 + length]))
        view = view[8 + length :]
    return request


def write_request(parts: list[bytes]) -> int:
    """A memory file holding marshalled ``parts`` (each ``marshal.dumps`` of a dict)."""
    fd = os.memfd_create("request", os.MFD_CLOEXEC)
    data = b"".join(len(part).to_bytes(8, "big") + part for part in parts)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return fd


if __name__ == "__main__":  # pragma: no cover - loaded by path only
    sys.exit("the zygote is started by server.py")
