"""What the spawner's child does between fork and exec: it takes the program's fds, its
resource limits and uid, gives up every privilege and installs a seccomp filter. (Where the
native starter runs, ``starter.c`` does the same in the started process, and the filter is
the spawner's own, :func:`filter_self`; this is then the set-up and the fallback.)

Stdlib only, and it imports nothing from the project: :mod:`harness.languages.spawner` loads
this file by path (``--confine PATH``: the repository is hidden inside the sandbox) before it
forks anything. The child drops its groups and takes the run's uid, sets ``no_new_privs``,
empties its capability sets, and installs the Python sandbox's seccomp filter (given as
``--seccomp PATH``, :func:`use_shared_filter`) or else this module's, which refuses the
keyring calls. Without bubblewrap the spawner also confines itself to Landlock's view
(:func:`restrict_view`), and a run keeps at most the one capability that reads it.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import resource
import struct
from typing import Any

PR_SET_NO_NEW_PRIVS = 38
MAX_FD = max(1 << 16, min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1 << 20))
_LIBC = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]  # fmt: skip


_NO_CAPS = (_CapHeader(0x20080522, 0), (_CapData * 2)())  # _LINUX_CAPABILITY_VERSION_3, all 0
_capset, _prctl = _LIBC.capset, _LIBC.prctl  # looked up once, not in every child


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.c_void_p)]


PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
# The kernel's keyrings are not namespaced, and a uid's user keyring outlives its processes:
# a run could leave a key for a later run of a reused uid (or add to an inherited session
# keyring). No compiler or program here uses them, so the calls fail with EPERM.
_ARCHES = {  # machine: (AUDIT_ARCH_*, add_key, request_key, keyctl)
    "x86_64": (0xC000003E, 248, 249, 250),
    "aarch64": (0xC00000B7, 217, 218, 219),
}


def _seccomp_program() -> tuple[_SockFprog, Any] | None:
    """A BPF filter refusing the keyring calls (and every call of another ABI, i386 or x32,
    whose numbers differ), with the buffer it points to; None on an unknown machine."""
    arch = _ARCHES.get(platform.machine())
    if arch is None:
        return None
    audit, *denied = arch
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    n = len(denied)
    code = [(ld, 0, 0, 4), (jeq, 1, 0, audit), (ret, 0, 0, deny), (ld, 0, 0, 0)]
    code.append((jge, n + 1, 0, 0x40000000))  # x32 calls: to the final deny
    code += [(jeq, n - i, 0, nr) for i, nr in enumerate(denied)]
    code += [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in code)  # struct sock_filter
    buffer = ctypes.create_string_buffer(raw, len(raw))
    return _SockFprog(len(code), ctypes.addressof(buffer)), buffer


_SECCOMP = _seccomp_program()  # built once, before any fork
_shared_filter: Any = None  # the Python sandbox's filter, when its module could be loaded
_shared_module: Any = None  # that module (its Landlock and capability helpers)
# Without bubblewrap, once Landlock enforces the view: the capability a run keeps so that file
# modes do not hide what the view shows (a toolchain under a 0700 /root), else None.
_read_cap: int | None = None
_ruleset = -1  # that view's Landlock ruleset, enforced by each child
# Set by the spawner: a toolchain lies where the runs' uids cannot read (rustup under /root).
read_cap_needed = False
_inherited = False  # the spawner installed the filter on itself: every child has it already
PR_SET_KEEPCAPS = 8


def use_shared_filter(path: str) -> None:
    """Use the Python sandbox's seccomp module (stdlib only, loaded by path: the repository is
    not in this view). Its filter refuses more than the keyrings: System V IPC, message
    queues, ptrace, io_uring, namespaces. Where it cannot be loaded, the keyring filter above
    stays."""
    global _shared_filter, _shared_module
    import importlib.util

    try:
        spec = importlib.util.spec_from_file_location("codeeval_seccomp", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _shared_module = module
        bpf = module.build_filter()
        if bpf:
            _shared_filter = module.Filter(bpf)
    except Exception:  # noqa: BLE001 - another version of that module: ours is enough
        _shared_filter = None


def restrict_view(writable: str, rules_path: str) -> None:
    """Without bubblewrap: every run is confined to the allow-list in ``rules_path`` (JSON
    ``[[path, rights], ...]``, removed once read) and to writing in ``writable`` (the run
    folders), by the Python sandbox's Landlock helper. The ruleset is built here, once; each
    child enforces it itself (:func:`child`), after it raised its ``oom_score_adj``, which the
    domain forbids. Raises OSError where the kernel has Landlock but refuses."""
    global _ruleset, _read_cap
    import json

    with open(rules_path, encoding="utf-8") as fh:
        rules = [(str(p), str(r)) for p, r in json.load(fh)]
    os.unlink(rules_path)
    if _shared_module is None:
        return
    ruleset, abi = _shared_module.landlock_ruleset(writable, view=rules)
    if ruleset < 0:
        return
    _ruleset = fcntl.fcntl(ruleset, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(ruleset)
    if read_cap_needed:
        caps = _shared_module.effective_caps()
        for cap in (_shared_module.CAP_DAC_READ_SEARCH, _shared_module.CAP_DAC_OVERRIDE):
            if caps & (1 << cap):
                _read_cap = cap
                break


def start_settings(uid: int | None) -> tuple[int, int, bool]:
    """What the native starter needs to confine a run as :func:`child` does: the Landlock
    ruleset's fd (-1: none), the capability to keep across the change of uid (-1: none),
    and whether the filter is this process's already (else the starter cannot be used)."""
    keep = _read_cap if uid is not None and _read_cap is not None else -1
    return _ruleset, keep, _inherited


def refuses_ipc() -> bool:
    """Every run's filter refuses System V IPC (the Python sandbox's does): a run cannot leave
    an object behind, so the spawner need not look for one after it."""
    denied = getattr(_shared_module, "DENIED", ())
    return _shared_filter is not None and all(
        call in denied for call in ("shmget", "semget", "msgget")
    )


def filter_self() -> None:
    """Install the runs' filter on this process (the spawner), once: every child then has it
    from the fork instead of each compiling it again (~0.2 ms a start). It refuses nothing
    the spawner does (System V IPC is only cleaned where the filter lets runs make objects,
    and its forks make no namespaces). ``no_new_privs`` first: the spawner lacks
    ``CAP_SYS_ADMIN``, and it never execs. Where this fails, each child installs it."""
    global _inherited
    try:
        if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return
        _install_filter()
    except OSError:
        return
    _inherited = True


def prelude() -> None:
    """The confinement that does not depend on the request: its own session, the kernel's
    first choice when memory runs out, ``no_new_privs``, the Landlock view (without
    bubblewrap) and the seccomp filter. A prepared child does it while it waits for its
    request, so a start only pays the rest."""
    os.setsid()
    _oom_first()  # before Landlock, whose domain forbids it
    if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # what Landlock and seccomp need first
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if _ruleset >= 0:  # the view, where there is no bubblewrap
        _shared_module.landlock_restrict(_ruleset)
    if not _inherited:
        _install_filter()  # it refuses none of the calls below


def _install_filter() -> None:
    if _shared_filter is not None:
        _shared_filter.install()
    elif _SECCOMP is not None:
        if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(_SECCOMP[0]), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp")


def child(
    req: dict[str, Any],
    fds: list[int],
    limits: list[tuple[int, tuple[int, int]]],
    status: int,
    *,
    preluded: bool = False,
    prelude_failure: BaseException | None = None,
) -> None:
    """After fork: confine this process and exec the program (never returns). Everything is
    prepared before the fork: each object the child touches costs it a copied page.

    ``status`` is the write end of a close-on-exec pipe: a failure before the exec is written
    there (exec closes it: the program never holds it), never on the program's own output,
    which is the program's to write. ``preluded``: :func:`prelude` ran already (and failed
    with ``prelude_failure``, reported here)."""
    argv, env, cwd, uid = req["argv"], req["env"], req["cwd"], req.get("uid")
    try:
        if not preluded:
            prelude()
        elif prelude_failure is not None:
            raise prelude_failure
        if status < len(fds):  # out of the way of the targets 0, 1, 2, ...
            status = fcntl.fcntl(status, fcntl.F_DUPFD_CLOEXEC, len(fds))
        if any(fd < len(fds) for fd in fds):
            fds = [os.dup(fd) for fd in fds]
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(len(fds), status)
        os.closerange(status + 1, MAX_FD)
        for kind, value in limits:
            resource.setrlimit(kind, value)
        keep_cap = _read_cap if uid is not None else None
        if keep_cap is not None:
            _prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        if keep_cap is not None:  # the one that reads the view, ambient: execve keeps it
            _shared_module.keep_only(keep_cap)
        # Empty effective, permitted and inheritable sets (setpriv's --inh-caps=-all).
        elif _capset(ctypes.byref(_NO_CAPS[0]), _NO_CAPS[1]) != 0:
            raise OSError(ctypes.get_errno(), "capset")
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    except BaseException as exc:  # noqa: BLE001 - reported on the status pipe
        try:
            os.write(status, f"cannot start {argv[0]}: {exc}".encode()[:4000])
        finally:
            os._exit(127)


def _oom_first() -> None:
    """The program is the kernel's first choice when memory runs out, never the spawner or
    the harness: a memory bomb must fail as the sample, not as the sandbox."""
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, b"1000")
        finally:
            os.close(fd)
    except OSError:
        pass
