"""The native starter (``starter.c``): how the spawner starts a program without forking itself.

A fork of the spawner's Python image costs a start ~2 ms of CPU on a virtual machine: the page
tables copied, a copy-on-write fault for every page either process then writes (the spawner's
own request handling included), and the copy torn down again at the exec. The starter is a
static binary without libc: the spawner ``posix_spawn``\\ s it (its memory shared until the
exec), it confines itself as :func:`harness.languages.confine.child` does (session,
``oom_score_adj``, ``no_new_privs``, the Landlock view, fds, limits, uid, capabilities, folder)
and execs the program. The seccomp filter comes from the spawner, which installed it on itself.

It is built once per machine with the system's C compiler (``cc``, ``gcc`` or ``clang``) into
the cache (``$CODEEVAL_CACHE/starter/``) and checked by running it. Where there is no
compiler, another architecture than x86-64 or aarch64, or ``CODEEVAL_SPAWN=fork``, every
start is a fork of the spawner, as before; the confinement is the same.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.paths import cache_dir

SOURCE = Path(__file__).with_name("starter.c")
ENV_SWITCH = "CODEEVAL_SPAWN"  # "fork": start every program from a fork of the spawner
ARCHES = ("x86_64", "aarch64")
FLAGS = (
    "-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-stack-protector",
    "-fno-pie", "-no-pie", "-fno-asynchronous-unwind-tables",
)  # fmt: skip
BUILD_TIMEOUT_S = 60


def path() -> str | None:
    """The starter binary, built if needed; None where starts fork the spawner instead."""
    if os.environ.get(ENV_SWITCH, "").strip().lower() == "fork":
        return None
    return _built(str(cache_dir()))


@functools.lru_cache(maxsize=4)
def _built(cache: str) -> str | None:
    if platform.machine() not in ARCHES:
        return None
    try:
        source = SOURCE.read_bytes()
    except OSError:
        return None
    key = hashlib.sha256(source + platform.machine().encode()).hexdigest()[:16]
    folder = Path(cache) / "starter"
    final = folder / f"codeeval-start-{key}"
    if _usable(final):
        return str(final)
    compiler = next(filter(None, map(shutil.which, ("cc", "gcc", "clang"))), None)
    if compiler is None:
        return None
    try:
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as work:
            binary = os.path.join(work, "codeeval-start")
            done = subprocess.run(
                [compiler, *FLAGS, "-o", binary, str(SOURCE)],
                capture_output=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
            if done.returncode != 0 or not _works(binary):
                return None
            os.chmod(binary, 0o755)
            os.replace(binary, final)  # whole or not at all: another worker may build too
    except (OSError, subprocess.SubprocessError):
        return None
    return str(final) if _usable(final) else None


def _usable(binary: Path) -> bool:
    """A plain file of this user's that only it can change, in a folder only it can change."""
    try:
        info, folder = os.lstat(binary), os.lstat(binary.parent)
    except OSError:
        return False
    return (
        binary.is_file()
        and not binary.is_symlink()
        and all(i.st_uid == os.getuid() and not i.st_mode & 0o022 for i in (info, folder))
        and bool(info.st_mode & 0o100)
    )


def _works(binary: str) -> bool:
    """It starts a program (this folder can execute it), and reports a failure on its pipe."""
    read, write = os.pipe()
    try:
        ok, bad = (
            subprocess.run(
                [binary, str(write), "-1", "-1", "-1", "0", "/", program, "x"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(write,),  # at its own number: the status pipe
                timeout=10,
                check=False,
            )
            for program in ("/bin/true", "/nonexistent/program")
        )
        os.close(write)
        write = -1
        said = os.read(read, 4096)
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    return ok.returncode == 0 and bad.returncode == 127 and said.startswith(b"cannot start")
