"""xdist's controller queues each worker message without formatting it for a log that is off.

For every message a worker sends, xdist's controller (``WorkerController.notify_inproc``, in
execnet's receiving thread) builds the debug line ``f"queuing {name}(**{kwargs})"`` before it
asks whether ``--debug`` is on. A batch of sample reports (:mod:`plugin.batch`) carries the
reports and the rows of up to 32 samples, so that line is the repr of about 100 KB of text:
0.8 ms of the controller's CPU a batch, 0.026 ms a sample, measured here, which is a sixth or
more of the controller's work per sample. Without ``--debug`` each controller-side node
queues the message as xdist does, minus the line nobody reads.
"""

from __future__ import annotations

from typing import Any


def queue_without_debug_lines(node: Any) -> None:
    """Make ``node`` (xdist's ``WorkerController``) queue its worker's messages without first
    formatting the debug line, when its log is off (``--debug`` on keeps xdist's own)."""
    log = getattr(node, "log", None)
    if getattr(log, "enabled", True) or not callable(getattr(node, "putevent", None)):
        return  # --debug (or an xdist this was not written against): as xdist does

    def notify_inproc(eventname: str, **kwargs: object) -> None:
        node.putevent((eventname, kwargs))

    node.notify_inproc = notify_inproc
