"""What a sample leaves behind, removed: its processes (killed and reaped) and its folder.

Stdlib only; the fork server loads this file by path after every sample, and the trusted side
(sandbox.py) loads it the same way to remove a gone server's work root. Nothing here follows a
link or recurses, so a sample cannot steer the clean-up with the tree it leaves.
"""

from __future__ import annotations

import os
import signal
import time

if __name__.startswith("harness."):  # imported by name (tests, type checkers)
    from harness.sandbox.inside import processes
# Otherwise its loader (the fork server, server_files.py) put ``processes`` here first.

MAX_REMOVED = 1_000_000  # entries one clean-up removes; past that the rest stays, closed


def descendants() -> list[int]:
    """Every process below this one (scan of /proc; used without a PID namespace)."""
    return list(processes.below(os.getpid()))


def kill_rest(uid: int | None) -> None:
    """Kill and reap every leftover process of the sample (grandchildren included).

    Every process a sample starts is below this one (its subreaper). ``uid``: the sample's
    own uid (the harness runs as root): a helper that becomes that uid and sends
    ``kill(-1)`` reaches exactly its processes, in one sweep the kernel makes under the lock
    that forks take, so a fork bomb cannot outrun it. Without one (not root), the processes
    below this one are found in /proc.
    """
    for attempt in range(200):
        if attempt:
            if uid is not None:
                kill_uid(uid)
            else:
                for pid in descendants():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        if _reaped_all():
            return
        time.sleep(0.002 if attempt < 10 else 0.02)


def kill_uid(uid: int) -> None:
    """Kill every process of ``uid`` (from a fork that becomes it; reaped here)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        except BaseException:  # noqa: B036, S110 - nothing left to kill
            pass
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by a concurrent wait
        pass


def _reaped_all() -> bool:
    """Reap every child that has ended; True when no child is left at all."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


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
                count += _empty_folder(top, fd, queue)
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


def _empty_folder(top: int, fd: int, queue: list[str | None]) -> int:
    """Unlink the files of folder ``fd`` and queue its sub-folders (moved up into ``top``
    first, so that none is ever more than one level deep); return the entries seen."""
    with os.scandir(fd) as entries:
        listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for entry, is_dir in listed:
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
    return len(listed)


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
