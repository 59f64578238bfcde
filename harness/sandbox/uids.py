"""Unprivileged uids for candidates, leased machine-wide so no two live sandboxes share one.

The kernel counts ``RLIMIT_NPROC`` (and inotify instances, pipe buffers, locked memory) per
uid across the whole machine. With one shared uid, a sample holding its 63 processes made a
correct sample in another worker fail to start a thread. So every fork server (and every
compiled-language spawner) leases a block of uids of its own, for as long as it lives, from a
range nothing else on the machine uses, and every pytest run, ``evaluate()`` call or
``codeeval serve`` on the machine takes a different block.

A lease is an exclusive ``flock`` on a file named after the block in a folder only root can
enter: it ends by itself when the holding process dies, whatever way it dies, and a process
of a candidate can never take or hold one. A block taken over from a dead holder is swept
first: whatever still runs under its uids is killed.
"""

from __future__ import annotations

import fcntl
import os
import threading
from dataclasses import dataclass, field

from harness.sandbox.server_files import server_module

# Far above the uids distributions hand out (1000-60000, nobody 65534) and the compiled
# languages' old fixed range (200000-1200000).
UID_BASE = 1_500_000
BLOCKS = 20_000
BLOCK_SIZE = 100
_FOLDERS = ("/run/codeeval-uids", "/tmp/.codeeval-uids")
_lock = threading.Lock()


class NoUidLeft(RuntimeError):
    """Every block of the range is held by a live process (or the lock folder is unusable)."""


@dataclass
class UidLease:
    """Uids ``first .. first + size - 1``, held until :meth:`release` or this process ends."""

    first: int
    size: int
    _fd: int = field(default=-1, repr=False)

    def uid(self, index: int = 0) -> int:
        return self.first + index % self.size

    def release(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)  # closing the descriptor drops the flock

    def __del__(self) -> None:
        self.release()


def lease(size: int = 1) -> UidLease:
    """A block of ``size`` uids no live process on this machine holds (root only).

    The range is cut in blocks of :data:`BLOCK_SIZE`; the first free one is taken. Raises
    :class:`NoUidLeft` when none is free or no lock folder can be made.
    """
    if not 1 <= size <= BLOCK_SIZE:
        raise ValueError(f"a uid block holds 1 to {BLOCK_SIZE} uids")
    folder = _lock_folder()
    with _lock:
        for block in range(BLOCKS):
            first = UID_BASE + block * BLOCK_SIZE
            path = os.path.join(folder, str(first))
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            taken = UidLease(first, size, fd)
            for index in range(size):
                sweep(taken.uid(index))
            return taken
    raise NoUidLeft(f"every block of uids from {UID_BASE} is held by a live process")


def sweep(uid: int) -> None:
    """Kill every process running as ``uid`` (what a dead holder of its block left)."""
    # The fork server's own clean-up: a fork that becomes the uid sends kill(-1).
    server_module("cleanup").kill_uid(uid)


def _lock_folder() -> str:
    for folder in _FOLDERS:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            info = os.lstat(folder)
        except OSError:
            continue
        # Ours and closed to everyone else: a candidate must never hold or forge a lease.
        if info.st_uid == os.getuid() and (info.st_mode & 0o077) == 0 and os.path.isdir(folder):
            return folder
    raise NoUidLeft(f"no usable lock folder for uid leases (tried {', '.join(_FOLDERS)})")
