"""Where compilers and programs start: one warm sandbox per worker thread.

A :class:`WarmSandbox` is a long-lived :mod:`harness.languages.spawner` process. Every compile
and run is a process it starts (through the native starter, :mod:`harness.languages.starter`,
else a fork of it), not a new sandbox: per run a uid of its own, resource limits, no
capabilities, ``no_new_privs``, the seccomp filter, its own session and a fresh private folder
only that uid can enter. When a run ends the spawner kills everything the run started and
reaps it, so its accounting (docs/formats.md, ``execution``) counts every process, from kernel
counters. A stdio test is one message each way (:meth:`WarmSandbox.submit`, ``collect``), and
tests may be queued ahead; ``cancel`` ends those nothing will judge.

Where bubblewrap works, the spawner is PID 1 of one bubblewrap per worker thread: the same view
for every compile and run (an allow-list, :mod:`harness.languages.view`: the toolchains,
read-only, and nothing of home, data or repository folders; no network, its own PID and IPC
namespaces); ending a run kills everything in the namespace but the spawner (one run at a
time), and the IPC objects a run left are removed where the filter let it make any. Two host
folders
are bound in: the private run folders (``/tmp/runs``, 0711, so a run cannot list the others)
and the compile cache (``/tmp/cache``, its folders 0711: a run reaches its own build by its
path, a hash of its source, and cannot list the others). The sandbox's ``/tmp`` and
``/dev/shm`` are root's, read-only to runs.

Without bubblewrap (``CODEEVAL_SANDBOX=nobwrap`` or none here) the spawner is a plain process,
a child subreaper that kills a run's process group and whatever is left below it: limits, a
uid, a private folder and Landlock's view, as the harness says once; as root, a build is
copied once per sandbox beside the run folders (root's, read-only) for all its runs.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness.languages.sandboxed as sandboxed
import harness.languages.starter as starter
from harness.sandbox.landlock_view import closed_to_others

RUNS = "/tmp/runs"  # inside bubblewrap: the private run folders
CACHE = "/tmp/cache"  # inside bubblewrap: the compile cache
SPAWNER = "/tmp/.spawner.py"
CONFINE = "/tmp/.confine.py"  # the spawner's child confinement (harness.languages.confine)
SECCOMP = "/tmp/.seccomp.py"
STARTER = "/tmp/.start"  # the native starter (harness.languages.starter), where it was built
# The Python sandbox's seccomp module (stdlib only): the spawner loads it by path when it is
# there, and keeps a keyring filter of its own otherwise.
SHARED_SECCOMP = Path(__file__).resolve().parents[1] / "sandbox" / "inside" / "seccomp.py"
CHANNEL_FD = 3  # the result channel's number in a started program
START_TIMEOUT_S = 30.0
KEPT_COPIES = 4  # without bubblewrap: the builds whose copy for the runs is kept
IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes")
DROP_UID = os.getuid() == 0  # as root every compile and run becomes a uid of its own


class LaunchError(RuntimeError):
    """The sandbox could not start or answer (never the sample's fault)."""


@dataclass(frozen=True)
class Folder:
    host: str  # the path here
    inside: str  # the same folder as the program sees it


def empty_resources() -> dict[str, Any]:
    return {"cpu_user_s": 0.0, "cpu_system_s": 0.0, "max_rss_kib": 0, **dict.fromkeys(IO_KEYS, 0)}


def add_resources(total: dict[str, Any], more: dict[str, Any]) -> None:
    """Sum CPU and I/O, keep the larger peak memory."""
    for key, value in more.items():
        if key == "max_rss_kib":
            total[key] = max(int(total.get(key, 0)), int(value))
        elif key in total:
            total[key] = (
                round(total[key] + value, 6) if isinstance(value, float) else total[key] + value
            )


def closed_dirs(path: str) -> None:
    """``path`` as a folder others can enter but not list (0711)."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o711)


class WarmSandbox:
    """A spawner for this thread: in bubblewrap (``use_bwrap``) or as a plain process."""

    def __init__(self, hide: tuple[str, ...], keep: tuple[str, ...], cache: str, use_bwrap: bool):
        started = time.monotonic()
        self.use_bwrap = use_bwrap
        self.cache = os.path.realpath(cache)
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
        self.runs = tempfile.mkdtemp(prefix="codeeval-runs-", dir=shm)
        os.chmod(self.runs, 0o711)
        _close_cache(self.cache)
        self.cache_id = _identity(self.cache)  # the folder bound in, not just its name
        self.pid = os.getpid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # A cancel's wake-up call: the spawner watches this, not the socket, while a run goes
        # on, so the runs queued meanwhile do not wake it.
        bell, bell_ours = os.pipe()
        spawner = str(Path(__file__).with_name("spawner.py"))
        confine = str(Path(__file__).with_name("confine.py"))
        shared = SHARED_SECCOMP.is_file()
        native = _private_copy(starter.path(), self.runs)  # None: every start forks
        if use_bwrap:
            python = (
                "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
            )
            keep = keep if python.startswith("/usr/") else keep + _python_dirs()
            argv = sandboxed.warm_prefix(hide, keep) + [
                "--bind", self.runs, RUNS,
                "--bind", self.cache, CACHE,
                "--ro-bind", spawner, SPAWNER,
                "--ro-bind", confine, CONFINE,
                *(("--ro-bind", str(SHARED_SECCOMP), SECCOMP) if shared else ()),
                *(("--ro-bind", native, STARTER) if native else ()),
                "--chdir", "/tmp", "--",
                python, "-I", "-S", SPAWNER, str(theirs.fileno()), "--bell", str(bell),
                "--confine", CONFINE,
                *(("--seccomp", SECCOMP) if shared else ()),
                *(("--starter", STARTER) if native else ()),
            ]  # fmt: skip
        else:
            argv = [sys.executable, "-I", "-S", spawner, str(theirs.fileno()), "--subreaper"]
            argv += ["--bell", str(bell)]
            argv += ["--confine", confine]
            argv += ["--seccomp", str(SHARED_SECCOMP)] if shared else []
            argv += ["--starter", native] if native else []
            if shared:  # Landlock's allow-list: what bubblewrap would show, and the run folders
                argv += ["--view", _rules_file(hide, keep), "--writable", self.runs]
                argv += ["--read-cap"] if closed_to_others(keep) else []
        self.errors = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self.errors,
                stderr=self.errors,
                pass_fds=(theirs.fileno(), bell),
                env=sandboxed.environment("/tmp"),
                start_new_session=True,
            )
        finally:
            theirs.close()
            os.close(bell)
        self.sock = ours
        self.bell = bell_ours
        self.pending = False  # a spawn's answer not read yet
        self.queued = 0  # runs submitted whose answers are not read yet (they come in order)
        self._inside_paths: dict[str, str] = {}  # cache entry -> its path inside bubblewrap
        self._copies: dict[str, str] = {}  # cache entry -> its shared copy (no bubblewrap)
        self._finalizer = weakref.finalize(
            self, _shutdown, self.proc, ours, bell_ours, self.runs, self.pid
        )
        self.sock.settimeout(START_TIMEOUT_S)
        try:
            hello = self.sock.recv(4096)
        except OSError:
            hello = b""
        if not hello or not json.loads(hello).get("ready"):
            self.close()
            raise LaunchError(f"the sandbox did not start: {self._stderr()}")
        self.sock.settimeout(None)
        self.start_s = time.monotonic() - started

    # -- the spawner ------------------------------------------------------------------------
    def _stderr(self) -> str:
        self.errors.seek(0)
        return self.errors.read(2000).decode("utf-8", "replace").strip() or "(no message)"

    def alive(self) -> bool:
        """Still usable: this process's, running, and its cache folder not replaced."""
        return (
            self.pid == os.getpid()
            and self.proc.poll() is None
            and _identity(self.cache) == self.cache_id
        )

    def close(self) -> None:
        self._finalizer()

    def request(self, message: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        """Send ``message`` (and ``fds``) to the spawner and return its answer."""
        self._settle()
        self._send(message, fds)
        return self._answer()

    def _send(self, message: dict[str, Any], fds: Sequence[int]) -> None:
        try:
            socket.send_fds(self.sock, [json.dumps(message).encode()], list(fds))
        except OSError as exc:
            self.close()
            raise LaunchError(f"the sandbox stopped answering: {exc}") from exc

    def _answer(self) -> dict[str, Any]:
        try:
            reply = self.sock.recv(1 << 20)
        except OSError as exc:
            self.close()
            raise LaunchError(f"the sandbox stopped answering: {exc}") from exc
        if not reply:
            self.close()
            raise LaunchError(f"the sandbox ended: {self._stderr()}")
        answer = json.loads(reply)
        if "error" in answer:
            raise LaunchError(f"the sandbox failed: {answer['error']}")
        return answer

    def _settle(self) -> None:
        """Read the answers nothing waited for: runs submitted and never collected (cancelled),
        and the last spawn's."""
        self.cancel()
        if self.pending:
            self.pending = False
            self._answer()

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: Folder,
        env: dict[str, str],
        limits: sandboxed.Limits,
        uid: int,
        fds: Sequence[int],
    ) -> Run:
        """Start ``argv`` in ``cwd`` as ``uid``, with ``fds`` as its 0, 1, 2 (and 3: the
        channel, see :data:`CHANNEL_FD`)."""
        message = _start_message("spawn", argv, cwd=cwd, env=env, limits=limits, uid=uid)
        # Not waited for: the caller goes on to wait for the program's first frame, and a
        # spawn that failed closes the fds (the program's pipes end) and answers the next request.
        self._settle()
        self._send(message, fds)
        self.pending = True
        return Run(self)

    def submit(
        self,
        argv: Sequence[str],
        *,
        cwd: Folder,
        env: dict[str, str],
        limits: sandboxed.Limits,
        uid: int,
        fds: Sequence[int],
        timeout: float,
    ) -> None:
        """Queue a run of ``argv`` (as :meth:`start` starts it): the spawner starts it once the
        runs queued before it have ended, waits up to ``timeout`` seconds after its exec, then
        kills it and everything it started. :meth:`collect` gives the answers in order. One
        message each way per run, and none waited for between runs: the spawner goes from one
        run to the next while this side judges."""
        if self.pending:
            self.pending = False
            self._answer()
        message = _start_message("run", argv, cwd=cwd, env=env, limits=limits, uid=uid)
        message["timeout"] = timeout
        self._send(message, fds)
        self.queued += 1

    def cancel(self) -> None:
        """End the runs submitted and not collected: the running one is killed, the others
        never start (their answers are read here and dropped)."""
        if not self.queued:
            return
        self._send({"op": "cancel"}, ())
        try:
            os.write(self.bell, b"!")  # after the message: the spawner finds it once woken
        except OSError:  # the spawner is gone: its answer says so below
            pass
        while self.queued:
            self.queued -= 1
            try:
                self._answer()
            except LaunchError:  # a run that could not start: nothing to drop
                if not self.alive():
                    raise
        self._answer()

    def collect(self) -> RunResult:
        """The oldest queued run's end: every process of it is dead by then."""
        if not self.queued:
            raise LaunchError("no run was submitted")
        self.queued -= 1
        answer = self._answer()
        status = answer["status"]
        return RunResult(
            None if status is None else os.waitstatus_to_exitcode(status),
            {**empty_resources(), **answer["resources"]},
            float(answer.get("wall_s", 0.0)),
        )

    # -- folders ----------------------------------------------------------------------------
    def private(self, uid: int) -> Folder:
        """A fresh folder only ``uid`` can enter (0700, its own)."""
        host = _private_dir(self.runs, uid, "r")
        return Folder(host, f"{RUNS}/{os.path.basename(host)}" if self.use_bwrap else host)

    def compile_folder(self, parent: str, uid: int) -> Folder:
        """A fresh folder for ``uid`` to compile in; :meth:`keep` makes it the cache entry."""
        if not self.use_bwrap:  # the dropped uid cannot reach the cache by its host path
            return self.private(uid)
        host = _private_dir(parent, uid, ".tmp-")
        return Folder(host, self._inside(host))

    def keep(self, folder: Folder, final: str) -> None:
        """The compiled folder becomes the cache entry ``final``, root's and read-only (a later
        run with a recycled uid cannot change it): a rename where it was compiled in place."""
        staging = folder.host
        if not self.use_bwrap:
            staging = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(final))
            for entry in os.scandir(folder.host):  # files and folders only (a FIFO would block)
                if entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False):
                    shutil.move(entry.path, os.path.join(staging, entry.name))
        _seal(staging)
        try:
            os.rename(staging, final)
        except OSError:  # another worker got there first: its build is the same
            shutil.rmtree(staging, ignore_errors=True)

    def build_path(self, build: str, run: Folder) -> str:
        """Where ``run`` sees the cache entry ``build``."""
        if self.use_bwrap:
            found = self._inside_paths.get(build)
            if found is None:
                if len(self._inside_paths) > 256:
                    self._inside_paths.clear()
                found = self._inside_paths[build] = self._inside(build)
            return found
        if not DROP_UID:  # the runs are this user: a copy they shared could carry state
            copy = os.path.join(run.host, "b")  # no bind mounts: a copy the runs can read
            shutil.copytree(build, copy)
            return copy
        return self._shared_copy(build)

    def _shared_copy(self, build: str) -> str:
        """Without bubblewrap, as root: one copy of ``build`` for all its runs (a stdio
        program's tests), root's and read-only like the cache entry, in the run folders' 0711
        parent under a random name; the last few builds' copies are kept."""
        copy = self._copies.pop(build, None)
        if copy is None or not os.path.isdir(copy):
            copy = tempfile.mkdtemp(prefix=".b", dir=self.runs)
            try:
                shutil.copytree(build, copy, dirs_exist_ok=True)
                _seal(copy)
            except BaseException:
                shutil.rmtree(copy, ignore_errors=True)
                raise
            while len(self._copies) >= KEPT_COPIES:
                shutil.rmtree(self._copies.pop(next(iter(self._copies))), ignore_errors=True)
        self._copies[build] = copy  # the most recent last
        return copy

    def _inside(self, host: str) -> str:
        relative = os.path.relpath(os.path.realpath(host), self.cache)
        if relative.startswith(".."):
            raise LaunchError(f"{host} is not in the compile cache {self.cache}")
        return f"{CACHE}/{relative}"

    @staticmethod
    def remove(folder: Folder) -> None:
        try:
            os.rmdir(folder.host)  # most runs leave nothing behind
        except OSError:
            shutil.rmtree(folder.host, ignore_errors=True)


@dataclass(frozen=True)
class RunResult:
    code: int | None  # the exit code (negative: killed by that signal); None: still ran
    resources: dict[str, Any]  # its accounting (``execution``'s keys)
    wall_s: float  # from its exec to its end, as the spawner saw it


class Run:
    """A started compiler or program (one at a time per sandbox)."""

    def __init__(self, sandbox: WarmSandbox):
        self.sandbox = sandbox

    def wait(self, timeout: float) -> int | None:
        """Its exit code (negative: killed by that signal), or None if it still runs."""
        status = self.sandbox.request({"op": "wait", "timeout": timeout})["status"]
        return None if status is None else os.waitstatus_to_exitcode(status)

    def finish(self) -> dict[str, Any]:
        """Kill it and everything it started; its accounting (``execution``'s keys)."""
        return {**empty_resources(), **self.sandbox.request({"op": "finish"})["resources"]}


def _start_message(
    op: str,
    argv: Sequence[str],
    *,
    cwd: Folder,
    env: dict[str, str],
    limits: sandboxed.Limits,
    uid: int,
) -> dict[str, Any]:
    """The spawner's message that starts ``argv`` (``spawn``: answered at once; ``run``: queued
    and answered at its end)."""
    return {
        "op": op,
        "argv": list(argv),
        "env": env,
        "cwd": cwd.inside,
        "limits": _limits(limits),
        "uid": uid if DROP_UID else None,
    }


def _limits(limits: sandboxed.Limits) -> dict[str, int]:
    return {
        "data": limits.memory_mb * 1024 * 1024,
        "cpu": limits.cpu_s,
        "nproc": limits.max_processes,
        "fsize": limits.max_file_mb * 1024 * 1024,
        "nofile": limits.max_open_files,
        "core": 0,
        "msgqueue": 0,  # no POSIX message queues: they would outlive the run
    }


def _rules_file(hide: tuple[str, ...], keep: tuple[str, ...]) -> str:
    """The view's Landlock rules in a root-only file the spawner reads and removes."""
    from harness.languages.view import landlock_rules

    fd, path = tempfile.mkstemp(prefix="codeeval-view-", suffix=".json")  # 0600
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(landlock_rules(hide, keep), fh)
    return path


def _private_copy(binary: str | None, folder: str) -> str | None:
    """``binary`` copied into ``folder`` (the run folders' parent, root's), 0700: what the
    spawner execs as root cannot be changed through the cache folder's path meanwhile."""
    if binary is None:
        return None
    fd, path = tempfile.mkstemp(prefix=".start-", dir=folder)  # 0600, ours
    try:
        with open(binary, "rb") as source, os.fdopen(fd, "wb") as target:
            shutil.copyfileobj(source, target)
        os.chmod(path, 0o700)
    except OSError:
        os.unlink(path)
        return None
    return path


def _private_dir(parent: str, uid: int, prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)  # 0700
    if DROP_UID:
        os.chown(path, uid, uid)
    return path


def _seal(folder: str) -> None:
    """Root's, 0755/0644. Only plain files and folders stay: links (chmod would follow them),
    FIFOs, sockets and hard-linked files are dropped (a compiler writes none of them)."""
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            plain = stat.S_ISDIR(info.st_mode) or (
                stat.S_ISREG(info.st_mode) and info.st_nlink == 1
            )
            if not plain:
                os.unlink(path)
                continue
            if DROP_UID:
                os.lchown(path, 0, 0)
            executable = name in dirs or os.stat(path).st_mode & 0o100
            os.chmod(path, 0o755 if executable else 0o644)
    if DROP_UID:
        os.lchown(folder, 0, 0)
    os.chmod(folder, 0o755)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _close_cache(cache: str) -> None:
    """The cache and its language and hash-prefix folders: 0711 (caches written before)."""
    closed_dirs(cache)
    for entry in os.scandir(cache):
        if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
            os.chmod(entry.path, 0o711)
            for sub in os.scandir(entry.path):
                if sub.is_dir(follow_symlinks=False) and len(sub.name) == 2:
                    os.chmod(sub.path, 0o711)


def _shutdown(
    proc: subprocess.Popen[bytes], sock: socket.socket, bell: int, runs: str, pid: int
) -> None:
    sock.close()  # the spawner reads EOF and exits (in bubblewrap its namespace dies with it)
    os.close(bell)
    if os.getpid() != pid:  # a forked copy of the owner: the sandbox is not its to end
        return
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        sandboxed.kill_group(proc)
        proc.wait()
    shutil.rmtree(runs, ignore_errors=True)


def _python_dirs() -> tuple[str, ...]:
    """The spawner's interpreter where it is not /usr's: its installation (its site folders
    are covered by the view) and the folder of its executable (a virtual environment's)."""
    return (os.path.realpath(sys.base_prefix), os.path.dirname(os.path.abspath(sys.executable)))


_local = threading.local()  # a sandbox is its thread's: bubblewrap dies with that thread


def launcher(
    hide: tuple[str, ...], keep: tuple[str, ...], use_bwrap: bool, cache: str
) -> WarmSandbox:
    """This thread's sandbox for these hidden and kept paths (started on first use)."""
    sandboxes: dict[tuple[Any, ...], WarmSandbox] = _local.__dict__.setdefault("sandboxes", {})
    key = (hide, keep, use_bwrap, os.path.realpath(cache))
    found = sandboxes.get(key)
    if found is not None and found.alive():
        return found
    if found is not None:
        found.close()
    found = sandboxes[key] = WarmSandbox(hide, keep, cache, use_bwrap)
    return found
