"""What one sample cost: CPU time and I/O of the processes it ran, read from the kernel.

Stdlib only; loaded by path by the fork server. Nothing here is read from the candidate's own
processes, so nothing in it can be forged by them.
"""

from __future__ import annotations

import os
import resource
from typing import Any

# The accounting keys of a sample (docs/formats.md, ``execution``); every language emits them.
IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes")


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
                whole, own = io_counters(os.pread(self._fds[1], 4096, 0)), io_counters(own_raw)
                io = {key: whole.get(key, 0) - own.get(key, 0) for key in IO_KEYS}
                io["rchar"] -= len(own_raw)
            except (OSError, ValueError):
                pass
        return usage.ru_utime, usage.ru_stime, io


def io_counters(data: bytes) -> dict[str, int]:
    """The ``key: value`` lines of a /proc ``io`` file."""
    counters = {}
    for line in data.splitlines():
        key, _, value = line.partition(b": ")
        counters[key.decode()] = int(value)
    return counters


def resources(before: tuple, after: tuple, rss: int) -> dict[str, Any]:
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
