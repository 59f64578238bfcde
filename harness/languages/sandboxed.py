"""Start a compiler or a compiled program under bubblewrap, with limits, as ``nobody``.

The same isolation as the Python fork server (:mod:`harness.sandbox.bwrap`): the file system
read-only, the caller's hidden paths (the suite folder with the expected values, the data
folder, the repository, home folders) empty, a fresh ``/tmp``, ``/dev`` and ``/proc``, no
network, its own PID namespace. Inside, ``prlimit`` sets the resource limits and, when the
harness runs as root, ``setpriv`` drops to uid/gid 65534 with no capabilities and
``no_new_privs``; the toolchain folders that only root can enter (rustup under ``/root``) are
bound back read-only (the mount plan covers closed folders on the way with a 0755 tmpfs).

Only the private work folder (``/tmp/w``) is writable; a build folder can be bound read-only at
``/tmp/b``. Memory is limited with ``RLIMIT_DATA`` rather than ``RLIMIT_AS``: the JVM and V8
reserve gigabytes of address space they never touch (an address-space limit stops them at
start-up), while ``RLIMIT_DATA`` counts only writable private memory, which a memory bomb has to
commit. Processes are limited with ``RLIMIT_NPROC`` (the JVM's threads count: it gets more).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from harness.sandbox import bwrap

WORK = "/tmp/w"
BUILD = "/tmp/b"
NOBODY = 65534
# Each run gets its own unprivileged uid (no passwd entry needed): RLIMIT_NPROC counts the
# processes of a uid across the whole machine, so with one shared uid a fork bomb in one
# sample (or a JVM's threads) would make another sample's program fail to start.
UID_BASE = 200_000
_uids = itertools.count()


def run_uid() -> int:
    """A uid no other live run of this machine uses (pid and a per-process counter)."""
    return UID_BASE + (os.getpid() % 10_000) * 100 + next(_uids) % 100


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 1024
    cpu_s: int = 60
    max_processes: int = 64
    max_file_mb: int = 16
    max_open_files: int = 256


@lru_cache(maxsize=1)
def _tools() -> tuple[str, str | None]:
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise FileNotFoundError("prlimit (util-linux) is needed to run compiled languages")
    return prlimit, shutil.which("setpriv")


def confine(argv: Sequence[str], limits: Limits, uid: int = NOBODY) -> list[str]:
    """``argv`` behind prlimit (and setpriv to ``uid`` when root): runs inside the sandbox."""
    prlimit, setpriv = _tools()
    wrapped = [
        prlimit,
        f"--data={limits.memory_mb * 1024 * 1024}",
        f"--cpu={limits.cpu_s}",
        f"--nproc={limits.max_processes}",
        f"--fsize={limits.max_file_mb * 1024 * 1024}",
        f"--nofile={limits.max_open_files}",
        "--core=0",
        "--",
    ]
    if os.getuid() == 0:
        if setpriv is None:
            raise FileNotFoundError("setpriv (util-linux) is needed to drop privileges")
        wrapped += [
            setpriv,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--no-new-privs",
            "--inh-caps=-all",
            "--",
        ]
    return wrapped + list(argv)


def command(
    argv: Sequence[str],
    *,
    work: str,
    build: str | None,
    hide: Sequence[str],
    keep: Sequence[str],
    limits: Limits,
    use_bwrap: bool,
    uid: int = NOBODY,
) -> list[str]:
    """The full command line: bubblewrap (when usable), the limits, then ``argv``.

    Without bubblewrap (``CODEEVAL_SANDBOX=nobwrap`` or none here) the paths ``/tmp/w`` and
    ``/tmp/b`` in ``argv`` must be replaced by the caller (:func:`host_paths`).
    """
    if not use_bwrap:
        return confine(argv, limits, uid)
    args = _bwrap_prefix(tuple(hide), tuple(keep))
    args += ["--bind", work, WORK]
    if build is not None:
        args += ["--ro-bind", build, BUILD]
    args += ["--chdir", WORK, "--"]
    return args + confine(argv, limits, uid)


@lru_cache(maxsize=64)
def _bwrap_prefix_cached(hide: tuple[str, ...], keep: tuple[str, ...]) -> tuple[str, ...]:
    # Not --as-pid-1: setpriv's change of user clears the parent-death signal, so the program
    # as PID 1 would outlive a killed bubblewrap. bubblewrap's own init keeps it, and when
    # that init dies the kernel kills everything in the PID namespace.
    args = [a for a in bwrap.base_args(shutil.which("bwrap") or "bwrap") if a != "--as-pid-1"]
    hidden = bwrap.hidden_paths(hide)
    args += bwrap.mount_plan(hidden, list(keep), drop=os.getuid() == 0)
    return tuple(args)


def _bwrap_prefix(hide: tuple[str, ...], keep: tuple[str, ...]) -> list[str]:
    """bubblewrap's options before the per-run binds (the mount plan, computed once)."""
    return list(_bwrap_prefix_cached(hide, keep))


def host_paths(argv: Sequence[str], work: str, build: str | None) -> list[str]:
    """``argv`` with the inside paths replaced by the host folders (no bubblewrap)."""
    out = []
    for part in argv:
        part = part.replace(WORK, work)
        if build is not None:
            part = part.replace(BUILD, build)
        out.append(part)
    return out


def environment(work: str) -> dict[str, str]:
    """A small, fixed environment: the same on every run (no caller secrets inside)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": work,
        "TMPDIR": work,
    }


def private_folder(prefix: str) -> str:
    """A fresh folder the dropped user can write (on a memory file system where possible)."""
    import tempfile

    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
    path = tempfile.mkdtemp(prefix=prefix, dir=shm)
    os.chmod(path, 0o777)
    return path


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
