"""A deadline on a request's headers: uvicorn's HTTP protocol, which waits for them forever.

uvicorn bounds an idle keep-alive connection (``timeout_keep_alive``), but its timer stops at
the first byte that arrives, and nothing bounds a connection that is opened and then sends its
request line and headers a byte at a time: each such client holds one of ``--max-connections``
for as long as it likes, and past them uvicorn answers 503 to everyone (a slowloris). The body
has its own deadline (``Limits.body_timeout_s``, in the app); this is the one before it.

The protocol here is the one uvicorn would pick (httptools where installed, else h11) with a
timer armed when the connection opens and again after each response: when it fires and no new
request's headers have arrived since (the protocol's request cycle is the one it was armed on),
the connection is closed: with a 408 when some of a request had come, silently when nothing had
(an idle keep-alive connection, which uvicorn closes the same way: a client reusing it must not
read a 408 as the answer to its next request). A request whose headers came in time is not
touched, however long it takes to be answered.
"""

from __future__ import annotations

import functools
from typing import Any

_TIMED_OUT_BODY = b"request headers not received in time\r\n"
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_TIMED_OUT_BODY), _TIMED_OUT_BODY)
)


@functools.cache
def header_deadline_protocol(timeout_s: float, base: type | None = None) -> type:
    """``base`` (default: the HTTP protocol class uvicorn would pick) with a ``timeout_s``
    deadline on each request's headers; uvicorn makes one protocol object per connection."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        base = AutoHTTPProtocol

    class HeaderDeadlineProtocol(base):  # type: ignore[misc, valid-type]
        _header_timer: Any = None
        _bytes_came = False  # since the deadline was armed

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_header_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_header_deadline()  # the next request on this connection, if any

        def data_received(self, data: bytes) -> None:
            self._bytes_came = True
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_deadline()
            super().connection_lost(exc)

        def _arm_header_deadline(self) -> None:
            self._cancel_header_deadline()
            cycle = self.cycle  # None on a new connection; the finished one after a response
            self._bytes_came = False
            self._header_timer = self.loop.call_later(timeout_s, self._headers_late, cycle)

        def _cancel_header_deadline(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self, cycle: Any) -> None:
            self._header_timer = None
            if self.cycle is not cycle or self.transport.is_closing():
                return  # a request's headers came (a new cycle began), or it is closing anyway
            if cycle is not None and not cycle.response_complete:
                return  # a pipelined request, whose headers came before it was armed
            if self._bytes_came:
                self.transport.write(TIMED_OUT)
            self.transport.close()

    return HeaderDeadlineProtocol
