"""One segment's frame loop: the server reads the frames of a child (and of its judge) with
deadlines, and turns how the segment ended into the slots of its cases.

Stdlib only; loaded by path by the fork server. It never decodes values: it forwards each
frame's payload as it is (in the reply's bytes after its JSON: ``server.write_message``) for the
trusted side to check, and reads only frame headers, to know which case is running. The frames must come in exactly one order (started, ready, one per
case, end); anything else fails the sample as a corrupted channel.
"""

from __future__ import annotations

import math
import os
import select
import signal
import struct
import time
from typing import Any

if __name__.startswith("harness."):  # imported by name (tests, type checkers)
    from harness.sandbox.inside import processes
# Otherwise its loader (the fork server, server_files.py) put ``processes`` here first.

MODULE_FLOOR_S = 2.0  # the program's module body gets at least this long
DRAIN_S = 0.02  # the longest the server sleeps before it reads the child's frames
END_TIMEOUT_S = 5.0  # time for the child to report coverage after the last case
KIND_STARTED = 5  # header-only frame: confinement done, candidate code about to run
# A time-out needs evidence that the program used its time: a limit (a case's, the module's,
# the sample's budget) is CPU time. When its wall time runs out while the sample's processes
# have had less than USED of it on a CPU, the machine was busy, not the program slow: the
# deadline moves on by what is left, up to MAX_STRETCH times the limit in wall time (where a
# program that sleeps, or waits on nothing, times out).
USED = 0.95  # of a limit, in CPU time: the program used it (clock ticks are 10 ms)
MAX_STRETCH = 4.0
# How often the CPU of every process of the sample (its unreaped children too) is checked
# against its whole budget: a sample that computes in children it never waits for must not
# outlast its budget while each of its cases finishes in time.
TREE_CHECK_S = 0.25
_HEADER = struct.Struct(">4sBII")  # a frame's header: magic, kind, case index, payload length
_HEADER_SIZE = _HEADER.size


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of ``pids`` and the children they reaped, from /proc (0 for a gone one)."""
    total = 0
    for pid in pids:
        found = processes.stat(pid)
        if found is not None:
            total += found[1]
    return total / processes.TICK


def tree_cpu_seconds(root: int) -> float:
    """CPU time of every process below ``root``, each with the children it reaped.

    ``root`` is the zygote: the subreaper of every process a sample starts, which reaps none
    of them before the segment ends. So this counts what :func:`cpu_seconds` of the child
    cannot see: processes it forked and never reaped (running, or ended and not waited for),
    orphans included. A scan of /proc (a few processes in bubblewrap's PID namespace), so it
    is read at deadlines and every ``TREE_CHECK_S``, not at every wake.
    """
    return sum(processes.below(root).values()) / processes.TICK


class Budget:
    """A sample's time budget in wall time, stretched while the machine starves it, and moved on
    while the sample waits for the trusted side between its parts."""

    def __init__(self, seconds: float, start: float) -> None:
        self.seconds = seconds
        self.start = start
        self.end = start + seconds
        self.cpu_done = 0.0  # CPU of the sample's finished segments

    def shift(self, seconds: float) -> None:
        """The sample waited ``seconds`` (paused between parts): none of it is the sample's."""
        self.start += seconds
        self.end += seconds

    def stretch(self, now: float, cpu_live: float = 0.0) -> bool:
        """At its end: True (and a later end) when the sample has not used it on a CPU."""
        used = self.cpu_done + cpu_live
        cap = self.start + MAX_STRETCH * self.seconds
        if used >= USED * self.seconds or now >= cap:
            return False
        self.end = min(cap, now + max(self.seconds - used, DRAIN_S))
        return True


class Segment:
    """The state of one segment while its frames come in: the phase (``module``, ``case``,
    ``end``), the case expected next, the running deadline and, once known, the outcome
    (``done``, ``corrupt``, ``exited``, ``timeout``, ``too_large``: the reply's bytes are full;
    ``paused``: the child sent the last frame
    of a part, ``pause_at`` is the next case, and it waits until :meth:`resume`; ``stopped``:
    the trusted side wanted no more parts)."""

    def __init__(
        self,
        codec: Any,
        req: dict[str, Any],
        first: int,
        st: dict[str, Any],
        channels: tuple[int, str, Any],
        budget: Budget,
        cpu: Any = None,
        pause_at: int | None = None,
        wake: int | None = None,
        tree: Any = None,
    ) -> None:
        self.codec = codec
        # Read per wake: two frames of the most a frame holds. What may wait unread in a pipe's
        # buffer after its frames were read: one wake's reading and a frame's worth. More is a
        # child writing while its frames are not being read (its bytes during a judged case,
        # whose frame comes from the judge): a corrupted channel.
        self.drain_bytes = 2 * codec.MAX_FRAME
        self.unread_bytes = self.drain_bytes + codec.MAX_FRAME + _HEADER_SIZE
        self.req = req
        self.cases = req["cases"]
        self.first = first
        self.st = st
        self.rfd, self.nonce, self.judge = channels  # the child's pipe and nonce; Judge|None
        self.judged = [case.get("mode") == "sandbox" for case in self.cases]
        self.budget = budget
        self.cpu = cpu or (lambda: 0.0)  # the live processes' CPU seconds (cpu_seconds)
        # Every process of the sample's, unreaped children too (tree_cpu_seconds): what a
        # deadline and the budget judge by.
        self.tree = tree or self.cpu
        self.next_tree_check = time.monotonic() + TREE_CHECK_S
        self.over_budget = False
        self.cpu_at_clock = 0.0  # a fresh child: its phase starts at no CPU
        self.buf = bytearray()
        self.judge_buf = bytearray()
        self.phase, self.expected, self.started = "module", first, False
        self.clock = time.monotonic()
        self.module_limit = max(timeout_of(self.cases[first]), MODULE_FLOOR_S)
        self.deadline = min(self.clock + self.module_limit, budget.end)
        self.outcome = ""
        self.elapsed = 0.0
        self.pause_at = pause_at
        self.wake = wake  # the socket the child writes to at a part's end (server.py)
        # One method per frame kind, each valid in one phase only.
        self._handlers = {
            ("module", codec.KIND_READY): self._on_ready,
            ("case", codec.KIND_CASE): self._on_case,
            ("end", codec.KIND_END): self._on_end,
        }

    def run(self, pidfd: int) -> None:
        """Read frames until the segment has an outcome; the child is still to be killed.

        The server does not wake for every frame: it sleeps until the child ends, the next
        deadline, or DRAIN_S, and then reads whatever the child wrote (frames wait in the
        pipe). A typical sample wakes it once; a deadline is enforced at most DRAIN_S late.
        A sample in parts also wakes it when its child reaches a part's end (``wake``: the
        child writes there, then waits for the trusted side, which should hear of the part at
        once). A wake that no part's end follows is the candidate's: the next sleep is the
        usual one, so writing there costs the server at most a wake every DRAIN_S.
        """
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        dead = False
        watching, spurious = False, False  # the wake socket
        while True:
            where = (self.phase, self.expected)
            self._read_frames()
            if max(len(self.buf), len(self.judge_buf)) > self.unread_bytes:
                self.outcome = "corrupt"
            if self.outcome:
                break
            if dead:
                self.outcome = "exited"
                break
            if (self.phase, self.expected) != where:  # a case began: its CPU counts from here
                self.cpu_at_clock = self.cpu()
            now = time.monotonic()
            if now >= self.next_tree_check:
                self.next_tree_check = now + TREE_CHECK_S
                if self.budget.cpu_done + self.tree() >= self.budget.seconds:
                    self.outcome, self.over_budget = "timeout", True
                    break
            wait = self.deadline - now
            if wait <= 0 and not self._starved():
                self.outcome = "timeout"
                break
            if watching != (self.wake is not None and not spurious):
                watching = not watching
                if watching:
                    poller.register(self.wake, select.POLLIN)
                else:
                    poller.unregister(self.wake)
            wait = self.deadline - time.monotonic()
            events = poller.poll(max(1, math.ceil(min(wait, DRAIN_S) * 1000)))
            dead = dead or any(fd == pidfd for fd, _event in events)
            spurious = any(fd == self.wake for fd, _event in events)  # until frames say else
            if spurious:  # one read: a candidate writing on and on must not keep it here
                try:
                    os.read(self.wake, 1 << 16)  # type: ignore[arg-type]
                except OSError:
                    pass
            # What the child wrote before it died still counts. A read stops after a frame's
            # worth, so that a child writing on and on cannot keep the server reading.
            self.buf += drain(self.rfd, self.drain_bytes)
            if self.judge is not None:
                self.judge_buf += drain(self.judge.frames, self.drain_bytes)
        self.elapsed = time.monotonic() - self.clock

    def _starved(self) -> bool:
        """At a deadline: move it on (True) when the limit that ran out was not used."""
        now = time.monotonic()
        if self.phase == "end":
            return False
        live = self.tree()  # a case's own CPU counts from cpu(), which this includes
        if self.budget.end <= self.deadline and now >= self.budget.end - 1e-3:
            if not self.budget.stretch(now, live):
                return False
        else:
            limit = self.module_limit if self.phase == "module" else self._case_limit()
            used = live - self.cpu_at_clock
            cap = self.clock + MAX_STRETCH * limit
            if used >= USED * limit or now >= cap:
                return False
            self.deadline = min(cap, now + max(limit - used, DRAIN_S))
        self.deadline = min(max(self.deadline, now + DRAIN_S), self.budget.end)
        return True

    def _case_limit(self) -> float:
        return timeout_of(self.cases[min(self.expected, len(self.cases) - 1)])

    # -- frames ----------------------------------------------------------------------------
    def _read_frames(self) -> None:
        """Complete frames first: each moves the phase on and restarts the clock. A judged
        case's frame is read from the judge's pipe only: the child cannot send it."""
        codec = self.codec
        while not self.outcome:
            from_judge = (
                self.phase == "case" and self.judged[self.expected] and self.judge is not None
            )
            source = self.judge_buf if from_judge else self.buf
            if not from_judge and self.phase == "case" and self._case_run(source):
                continue
            if len(source) < codec.HEADER_SIZE:
                return
            try:
                kind, index, length = header(codec, bytes(source[: codec.HEADER_SIZE]))
            except codec.ChannelError:
                self.outcome = "corrupt"
                return
            if len(source) < codec.HEADER_SIZE + length:
                return
            body = bytes(source[codec.HEADER_SIZE : codec.HEADER_SIZE + length])
            del source[: codec.HEADER_SIZE + length]
            self._on_frame(kind, index, body, from_judge)

    def _case_run(self, buf: bytearray) -> bool:
        """Read, in one pass, the child's frames of the cases from the next one on that
        ``buf`` holds whole (a child sends hundreds between two wakes: frame by frame, each
        cost twice as much); False when the next frame is not such a frame, which the
        frame-by-frame path then reads (and judges, when it is wrong)."""
        codec, cases, slots = self.codec, self.cases, self.st["slots"]
        size, at, expected = len(buf), 0, self.expected
        stop = len(cases) if self.pause_at is None else self.pause_at
        while expected < stop and not self.judged[expected] and size - at >= _HEADER_SIZE:
            magic, kind, index, length = _HEADER.unpack_from(buf, at)
            if magic != codec.MAGIC or kind != codec.KIND_CASE or index != expected:
                break
            if length > codec.MAX_FRAME or size - at - _HEADER_SIZE < length:
                break
            if self.st["blob_size"] + length > codec.MAX_REPLY:  # the frame-by-frame path ends it
                break
            body = bytes(buf[at + _HEADER_SIZE : at + _HEADER_SIZE + length])
            slots[expected] = self._frame_slot(body, False)
            at += _HEADER_SIZE + length
            expected += 1
        if not at:
            return False
        del buf[:at]
        self._cases_sent(expected)
        return True

    def _on_frame(self, kind: int, index: int, body: bytes, from_judge: bool) -> None:
        if not self.started:  # the first frame says the child is confined; nothing before it
            if kind == KIND_STARTED and self.phase == "module":
                self.started = True
            else:
                self.outcome = "corrupt"
            return
        handler = self._handlers.get((self.phase, kind))
        if handler is None:
            self.outcome = "corrupt"
        else:
            handler(index, body, from_judge)

    def _fits(self, body: bytes) -> bool:
        """Whether ``body`` fits in the reply's bytes (``MAX_REPLY``); when it does not, the
        segment ends (``too_large``): every frame the trusted side gets, it reads and parses,
        so what one sample costs it is bounded here, whatever frames a candidate forges."""
        if self.st["blob_size"] + len(body) <= self.codec.MAX_REPLY:
            return True
        self.outcome = "too_large"
        return False

    def _packed(self, body: bytes, from_judge: bool) -> dict[str, Any]:
        """A frame as the trusted side gets it: its writer's nonce and where its payload is in
        the reply's bytes (``[offset, length]``)."""
        nonce = self.judge.nonce if from_judge else self.nonce
        return {"nonce": nonce, "at": attach(self.st, body)}

    def _on_ready(self, index: int, body: bytes, from_judge: bool) -> None:
        if index != self.first:
            self.outcome = "corrupt"
        elif body.startswith(b'{"status":"ok",'):
            now = time.monotonic()
            self.phase, self.clock = "case", now
            self.deadline = min(now + timeout_of(self.cases[self.first]), self.budget.end)
        elif not self._fits(body):
            return
        else:  # the program or test setup raised: every remaining case gets it
            packed = self._packed(body, from_judge)
            for i in range(self.first, len(self.cases)):
                self.st["slots"][i] = dict(packed, kind="setup")
            self.outcome = "done"

    def _on_case(self, index: int, body: bytes, from_judge: bool) -> None:
        if index != self.expected:
            self.outcome = "corrupt"
            return
        if not self._fits(body):
            return
        self.st["slots"][self.expected] = self._frame_slot(body, from_judge)
        self._cases_sent(self.expected + 1)

    def _frame_slot(self, body: bytes, from_judge: bool) -> dict[str, Any]:
        """A case's slot: its frame, forwarded (:meth:`_packed`)."""
        slot = self._packed(body, from_judge)
        slot["kind"] = "frame"
        return slot

    def _cases_sent(self, expected: int) -> None:
        """The cases before ``expected`` have their frames: its clock starts now."""
        now = time.monotonic()
        self.expected, self.clock = expected, now
        if expected == self.pause_at:  # frames past it wait in the buffer until resumed
            self.outcome = "paused"
        elif expected == len(self.cases):
            self.phase, self.deadline = "end", now + END_TIMEOUT_S
        else:
            self.deadline = min(now + timeout_of(self.cases[expected]), self.budget.end)

    def _on_end(self, index: int, body: bytes, from_judge: bool) -> None:
        if index != len(self.cases):
            self.outcome = "corrupt"
            return
        if not self._fits(body):
            return
        self.st["coverage"].append(self._packed(body, from_judge))
        self.outcome = "done"

    def resume(self, pause_at: int | None) -> None:
        """The child was told to go on (it waited at ``pause_at``): its next case's clock
        starts now."""
        now = time.monotonic()
        self.outcome, self.pause_at, self.clock = "", pause_at, now
        self.cpu_at_clock = self.cpu()
        self.deadline = min(now + timeout_of(self.cases[self.expected]), self.budget.end)

    # -- the end ---------------------------------------------------------------------------
    def conclude(self, status: int) -> int:
        """Fill the slots this segment decided (``status``: the child's wait status); return
        the next case to run (past the last one when the segment ended the sample)."""
        cases, st = self.cases, self.st
        self.buf, self.judge_buf = bytearray(), bytearray()  # unread bytes go now, not at a GC
        if self.outcome in ("done", "stopped") or self.phase == "end":
            if self.phase == "end" and self.outcome != "done":
                st["notes"].append("coverage was not reported by the child")
            return len(cases)
        if not self.started and self.outcome != "corrupt":
            st["infra"] = f"the sandbox child failed before running the program ({why(status)})"
            return len(cases)
        failed = self._failure(status)
        if self.phase == "module" or self.outcome == "too_large":
            # The module itself failed, or the reply is full: every remaining case shares it.
            for i in range(self.expected, len(cases)):
                st["slots"][i] = dict(failed)
            return len(cases)
        st["slots"][self.expected] = failed
        return self.expected + 1

    def _failure(self, status: int) -> dict[str, Any]:
        """The verdict of the case (or module) that was running when the segment failed."""
        if self.outcome == "corrupt":
            return verdict("crashed", "corrupted result channel", self.elapsed)
        if self.outcome == "too_large":
            limit = self.codec.MAX_REPLY >> 20
            return verdict("crashed", f"the sample's results passed {limit} MiB", self.elapsed)
        if self.outcome == "timeout":
            return verdict("timeout", self._timeout_message(), self.elapsed)
        where = "while the program was loading" if self.phase == "module" else "during the case"
        return verdict("crashed", f"the child {why(status)} {where}", self.elapsed)

    def _timeout_message(self) -> str:
        if self.over_budget:
            return (
                f"the sample's processes used its time budget of {self.req['budget_s']}s "
                "in CPU time"
            )
        budget = time.monotonic() >= self.budget.end - 1e-3
        module = self.phase == "module"
        limit = self.module_limit if module else timeout_of(self.cases[self.expected])
        if budget and self.elapsed < limit:
            return f"the sample's time budget of {self.req['budget_s']}s ran out"
        if module:
            return f"the program did not finish loading within {limit:g}s"
        return f"timed out after {limit:g}s"


def attach(st: dict[str, Any], body: bytes) -> list[int]:
    """Put a payload in the sample's reply bytes (``st["blob"]``, its parts in order, and
    ``st["blob_size"]``); where it is there."""
    at = st["blob_size"]
    st["blob"].append(body)
    st["blob_size"] = at + len(body)
    return [at, len(body)]


def header(codec: Any, raw: bytes) -> tuple[int, int, int]:
    """A frame header's kind, case index and payload length, checked."""
    magic, kind, index, length = _HEADER.unpack(raw)
    if magic != codec.MAGIC or length > codec.MAX_FRAME:
        raise codec.ChannelError("bad frame header")
    if kind not in (codec.KIND_READY, codec.KIND_CASE, codec.KIND_END, KIND_STARTED):
        raise codec.ChannelError("bad frame kind")
    return kind, index, length


def drain(fd: int, limit: int = 1 << 62) -> bytes:
    """Whatever a non-blocking pipe holds now, up to about ``limit`` bytes."""
    data = bytearray()
    while len(data) < limit:
        try:
            chunk = os.read(fd, 1 << 16)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def timeout_of(case: dict[str, Any]) -> float:
    return float(case.get("timeout_s") or 1.0)


def why(status: int) -> str:
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


def verdict(status: str, message: str, duration: float = 0.0) -> dict[str, Any]:
    """A slot the server decided itself (the trusted side reads it as is)."""
    return {"kind": "verdict", "status": status, "message": message, "duration_s": duration}


def is_timeout(slot: dict[str, Any] | None) -> bool:
    return slot is not None and slot.get("kind") == "verdict" and slot.get("status") == "timeout"
