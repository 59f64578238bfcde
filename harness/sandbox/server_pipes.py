"""The fork server's channel on the trusted side: a thread that writes the messages for the
server in order, and one that reads its replies as they come (harness.sandbox.sandbox owns
both, one pair per server)."""

from __future__ import annotations

import json
import os
import queue
import struct
import threading
from typing import Any

from harness.sandbox.decode import BLOB

LENGTH = struct.Struct(">I")  # each message's length, before it
READ_SIZE = 1 << 20  # the most one read of the server's replies takes


class InfraError(Exception):
    """The fork server failed (not the sample's fault)."""


class Writer(threading.Thread):
    """Writes the messages for the server in order, so that a caller never waits on a full pipe.

    The server reads its next message only between samples, and a problem's definition can be
    hundreds of KB (EvalPlus's inputs): a caller that wrote it itself would stop judging the
    samples already run until the server caught up.
    """

    def __init__(self, fd: int) -> None:
        super().__init__(name="codeeval-sandbox-writer", daemon=True)
        self.fd = fd
        self.messages: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.failure: str | None = None
        self._finished = False

    def send(self, message: dict[str, Any], blob: bytes = b"") -> None:
        """Queue ``message`` for the server, as JSON after its length, and ``blob`` after a NUL
        (which JSON as json writes it never holds) when there is one."""
        if self.failure is not None or self._finished:
            raise InfraError(self.failure or "the sandbox server's input is closed")
        body = json.dumps(message, separators=(",", ":")).encode()
        if blob:
            body = b"%s\0%s" % (body, blob)
        self.messages.put(LENGTH.pack(len(body)) + body)

    def finish(self) -> None:
        """Write what is queued, then close the server's input (idempotent)."""
        if not self._finished:
            self._finished = True
            self.messages.put(None)

    def run(self) -> None:
        try:
            while (data := self.messages.get()) is not None:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self.failure = f"the sandbox server is gone: {exc}"
        finally:
            os.close(self.fd)


class Reader(threading.Thread):
    """Reads the server's length-prefixed replies into ``replies`` as they come."""

    def __init__(self, fd: int) -> None:
        super().__init__(name="codeeval-sandbox-reader", daemon=True)
        self.fd = fd
        self.ready = threading.Condition()
        self.replies: dict[int | None, dict[str, Any]] = {}
        self.parts: dict[int | None, list[dict[str, Any]]] = {}  # of samples in parts, unread
        self.failure: str | None = None

    def run(self) -> None:
        buf = bytearray()
        # Read into one buffer kept for the thread's life: os.read(fd, 1 MiB) maps and unmaps
        # a fresh megabyte on every call (~9 us, 5% of a judging worker's CPU on HumanEval+).
        room = memoryview(bytearray(READ_SIZE))
        try:
            while True:
                while len(buf) >= 4:
                    size = LENGTH.unpack_from(buf)[0]
                    if len(buf) < 4 + size:
                        break
                    message = self._parse(bytes(buf[4 : 4 + size]))
                    del buf[: 4 + size]
                    ident = message.get("id") if not message.get("hello") else None
                    with self.ready:
                        if message.get("part"):
                            self.parts.setdefault(ident, []).append(message)
                        else:
                            self.replies[ident] = message
                        self.ready.notify_all()
                size = os.readv(self.fd, [room])
                if not size:
                    raise InfraError("the sandbox server died")
                buf += room[:size]
        except (InfraError, OSError, ValueError) as exc:
            with self.ready:
                gone = f"the sandbox server is gone: {exc}"
                self.failure = str(exc) if isinstance(exc, InfraError) else gone
                self.ready.notify_all()
        finally:
            os.close(self.fd)

    @staticmethod
    def _parse(body: bytes) -> dict[str, Any]:
        """A reply: its JSON, and the bytes after it (the frames' payloads its slots point
        at, past a NUL byte, which JSON as the server writes it never holds) as ``blob``."""
        cut = body.find(b"\0")
        try:
            message = json.loads(body if cut < 0 else body[:cut])
        except ValueError as exc:
            raise InfraError(f"unreadable reply from the sandbox server: {exc}") from None
        if type(message) is not dict:
            raise InfraError("reply from the sandbox server is not an object")
        if cut >= 0:
            message[BLOB] = memoryview(body)[cut + 1 :]
        return message
