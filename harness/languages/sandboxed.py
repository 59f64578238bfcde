"""The pieces of a sandboxed compile or run: limits, uids, environment, bubblewrap's view.

The view is an allow-list (:mod:`harness.languages.view`): ``/usr`` and a few files of ``/etc``
read-only, the toolchains that live elsewhere (rustup under ``/root``) bound in, site-packages
and the caller's hidden paths covered, a fresh ``/tmp``, ``/dev`` and ``/proc``, no network,
its own PID namespace. One such sandbox per worker thread stays warm and starts every compile
and run
(:mod:`harness.languages.launch`, :mod:`harness.languages.spawner`).

Every compile and run gets its own unprivileged uid with no capabilities and
``no_new_privs``, and limits. Memory is limited with ``RLIMIT_DATA`` rather than
``RLIMIT_AS``: the JVM and V8 reserve gigabytes of address space they never touch (an
address-space limit stops them at start-up), while ``RLIMIT_DATA`` counts only writable private
memory, which a memory bomb has to commit. Processes are limited with ``RLIMIT_NPROC`` (the
JVM's threads count: it gets more).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import harness.languages.view as view
from harness.sandbox import bwrap, uids

WORK = "/tmp/w"  # in a build's run command: the run's private folder
# Each run gets its own unprivileged uid (no passwd entry needed): RLIMIT_NPROC counts the
# processes of a uid across the whole machine, so with one shared uid a fork bomb in one
# sample (or a JVM's threads) would make another sample's program fail to start. The uids
# come from a block this process leases machine-wide (harness.sandbox.uids), used in turn.
UID_BASE = uids.UID_BASE
_uids = itertools.count()
_lease: tuple[int, uids.UidLease] | None = None  # (the pid that took it, the block)
_lease_lock = threading.Lock()


def run_uid() -> int:
    """A uid no other live run of this machine uses (the next of this process's block)."""
    global _lease
    if os.getuid() != 0:  # nothing is dropped: any number in the range does
        return UID_BASE + next(_uids) % uids.BLOCK_SIZE
    with _lease_lock:
        if _lease is None or _lease[0] != os.getpid():  # a fork takes a block of its own
            _lease = (os.getpid(), uids.lease(uids.BLOCK_SIZE))
        return _lease[1].uid(next(_uids))


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 1024
    cpu_s: int = 60
    max_processes: int = 64
    max_file_mb: int = 16
    max_open_files: int = 256


@lru_cache(maxsize=16)
def _warm_prefix(hide: tuple[str, ...], keep: tuple[str, ...]) -> tuple[str, ...]:
    # --as-pid-1: the spawner is PID 1, so every orphan of a run is its child (reaped and
    # accounted), and when it dies the kernel kills everything in the PID namespace. It never
    # changes its own user, so bubblewrap's parent-death signal stays set on it.
    return tuple(view.bwrap_args(hide, keep))


def warm_prefix(hide: Sequence[str], keep: Sequence[str]) -> list[str]:
    """bubblewrap's options for a warm sandbox (the mount plan, computed once)."""
    return list(_warm_prefix(tuple(hide), tuple(keep)))


def environment(work: str) -> dict[str, str]:
    """A small, fixed environment: the same on every run (no caller secrets inside)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": work,
        "TMPDIR": work,
    }


def bubblewrap_usable() -> bool:
    return bwrap.bwrap_available()


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the process and its session (bubblewrap takes its PID namespace with it)."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
