"""Kernel-side confinement of a sandboxed child: a seccomp filter and a Landlock domain.

Stdlib only (ctypes); loaded by path like ``codec.py``. The fork server builds both and
installs them on itself, once, before its first fork (:class:`Confinement`): every child then
starts confined at no cost. Another spawner may install the filter per child instead
(``Filter(build_filter()).install()`` after fork; the kernel compiles it, ~0.1 ms each time).

The seccomp filter refuses (EPERM; ENOSYS for ``clone3``, so that libc falls back to
``clone``) the system calls that make state outliving a sample or shared with other samples,
or that open a large kernel surface nobody's program needs:

* kernel keyrings (``add_key``, ``request_key``, ``keyctl``): a uid's keyring is shared by
  every sample, every worker and later sessions;
* System V IPC and POSIX message queues: they outlive the process that made them;
* ``ptrace``, ``process_vm_readv/writev``, ``kcmp``, ``pidfd_getfd``: other processes of the
  shared uid (another sample's) would be readable and writable;
* ``io_uring_*`` (its operations bypass seccomp), ``bpf``, ``userfaultfd``,
  ``perf_event_open``: kernel attack surface and side channels;
* namespaces and mounts (``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag, the
  mount family): a user namespace gives an unprivileged process root-only code paths;
* in a candidate's processes only (a filter stacked once the child is set up,
  :func:`build_candidate_filter`): ``setsid`` (a session is a share of the CPU),
  ``memfd_create`` (its pages are memory no limit of the sample counts) and a new action for
  ``SIGCHLD`` (ignored, the kernel reaps children at once, and their CPU is then counted
  nowhere);
* opening files by handle (``name_to_handle_at``, ``open_by_handle_at``): a handle skips the
  path, and with it the view below.

It checks the audit architecture (another ABI, such as i386 ``int 0x80`` on x86_64, gets
ENOSYS for everything) and refuses x32 system calls.

The Landlock domain (kernel 5.13+, scopes 6.12+) lets the child create and write files only
in its own folder (and write a few devices such as ``/dev/null``), connect to no abstract
unix socket and signal no process made outside its domain (another sample's, the server),
and, with ABI 4+ and where no network namespace isolates it, bind or connect no TCP port.
It also keeps other domains from ptracing it.

Without bubblewrap the domain is also the candidate's view of the disk (``view``: the
allow-list of :mod:`harness.sandbox.view`): it reads, lists and executes only there and in its
own folder. Where the interpreter lies in a folder the dropped uid cannot enter (a 0700 home),
the child keeps one capability, ``CAP_DAC_READ_SEARCH`` (else ``CAP_DAC_OVERRIDE``), so that
the file modes do not hide what the view shows; the view still bounds what it can open, and
only while Landlock enforces it is the capability kept (:attr:`Confinement.read_cap`).

API: ``build_filter(arch=None) -> bytes`` (the BPF program; ``b""`` where the architecture
is unknown), ``Filter(bpf).install()`` (raises ``OSError``), ``landlock_abi() -> int`` (0:
none), ``landlock_confine(folder, writable_files=DEVICES) -> int`` (the ABI used, 0 when
Landlock is not there; raises ``OSError`` when it is there but fails).
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import struct
from collections.abc import Iterable
from typing import Any

# Audit architectures and system call numbers (include/uapi/linux/audit.h, unistd tables).
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_BIT = 0x40000000
_X86_64 = {
    "add_key": 248, "request_key": 249, "keyctl": 250,
    "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67,
    "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220,
    "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
    "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
    "mq_notify": 244, "mq_getsetattr": 245,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "pidfd_getfd": 438,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "bpf": 321, "userfaultfd": 323, "perf_event_open": 298,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442,
    "clone": 56, "clone3": 435,
    "name_to_handle_at": 303, "open_by_handle_at": 304,
    "setsid": 112, "memfd_create": 319, "rt_sigaction": 13,
}  # fmt: skip
_AARCH64 = {
    "add_key": 217, "request_key": 218, "keyctl": 219,
    "shmget": 194, "shmat": 196, "shmctl": 195, "shmdt": 197,
    "semget": 190, "semop": 193, "semctl": 191, "semtimedop": 192,
    "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187,
    "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183,
    "mq_notify": 184, "mq_getsetattr": 185,
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
    "pidfd_getfd": 438,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "bpf": 280, "userfaultfd": 282, "perf_event_open": 241,
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442,
    "clone": 220, "clone3": 435,
    "name_to_handle_at": 264, "open_by_handle_at": 265,
    "setsid": 157, "memfd_create": 279, "rt_sigaction": 134,
}  # fmt: skip
SYSCALLS = {"x86_64": _X86_64, "aarch64": _AARCH64}
# Refused by the candidate's own filter (build_candidate_filter), stacked in each child once it
# is set up: the server, the zygote and the child's own set-up use them.
CANDIDATE_ONLY = ("setsid", "memfd_create", "rt_sigaction")
DENIED = tuple(name for name in _X86_64 if name not in ("clone", "clone3", *CANDIDATE_ONLY))
SIGCHLD = 17  # the same on x86_64 and aarch64
CLONE_NEW_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

# BPF opcodes and seccomp return values.
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW = 0, 4, 16, 24  # in struct seccomp_data (little-endian)
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def build_filter(arch: str | None = None, deny: Iterable[str] = DENIED) -> bytes:
    """The raw BPF program (``struct sock_filter`` array) for ``arch`` (default: this one)."""
    arch = arch or platform.machine()
    table = SYSCALLS.get(arch)
    if table is None or arch not in ARCHES:
        return b""
    numbers = sorted({table[name] for name in deny if name in table})
    # Layout: arch check, x32 check, one jump per refused call to EPERM, clone's flags,
    # clone3 to ENOSYS, allow; then the three returns.
    body = [("ld", _ARCH), ("arch",), ("ld", _NR)]
    if arch == "x86_64":
        body.append(("x32",))
    body += [("deny", nr) for nr in numbers]
    body += [("clone3", table["clone3"]), ("clone", table["clone"]), ("allow",)]
    # After "clone": ld arg0, jset flags -> EPERM, allow.
    tail = ["ld_arg0", "jset", "allow2", "ret_allow", "ret_eperm", "ret_enosys"]
    n = len(body) + len(tail)
    ret = {"allow": n - 3, "eperm": n - 2, "enosys": n - 1}
    clone_at = len(body)  # index of "ld_arg0"
    out = []
    for i, item in enumerate(body):
        kind = item[0]

        def to(target: int, at: int = i) -> int:
            return target - at - 1

        if kind == "ld":
            out.append(_insn(_LD_W_ABS, item[1]))
        elif kind == "arch":  # equal: go on; else ENOSYS
            out.append(_insn(_JEQ_K, ARCHES[arch], 0, to(ret["enosys"])))
        elif kind == "x32":
            out.append(_insn(_JGE_K, X32_BIT, to(ret["enosys"]), 0))
        elif kind == "deny":
            out.append(_insn(_JEQ_K, item[1], to(ret["eperm"]), 0))
        elif kind == "clone3":
            out.append(_insn(_JEQ_K, item[1], to(ret["enosys"]), 0))
        elif kind == "clone":
            out.append(_insn(_JEQ_K, item[1], to(clone_at), 0))
        elif kind == "allow":
            out.append(_insn(_RET_K, _ALLOW))
    i = len(out)
    out.append(_insn(_LD_W_ABS, _ARG0_LOW))
    out.append(_insn(_JSET_K, CLONE_NEW_FLAGS, ret["eperm"] - (i + 1) - 1, 0))
    out.append(_insn(_RET_K, _ALLOW))
    out.append(_insn(_RET_K, _ALLOW))
    out.append(_insn(_RET_K, _ERRNO | _EPERM))
    out.append(_insn(_RET_K, _ERRNO | _ENOSYS))
    if any(len(out) - j > 255 for j in range(len(out))):  # pragma: no cover - jumps are 8 bits
        raise ValueError("filter too long for 8-bit jumps")
    return b"".join(out)


def build_candidate_filter(arch: str | None = None) -> bytes:
    """The filter stacked on a candidate's child once it is set up: ``setsid`` and
    ``memfd_create`` refused, and ``rt_sigaction(SIGCHLD, act, ...)`` with an ``act`` (only
    asking what the action is stays allowed). ``b""`` where the architecture is unknown; a call
    of another architecture is the server's filter's to refuse."""
    arch = arch or platform.machine()
    table = SYSCALLS.get(arch)
    if table is None or arch not in ARCHES:
        return b""
    allow, eperm = 10, 11  # the indexes of the two returns
    prog = [
        (_LD_W_ABS, _NR, 0, 0),
        (_JEQ_K, table["setsid"], eperm - 2, 0),
        (_JEQ_K, table["memfd_create"], eperm - 3, 0),
        (_JEQ_K, table["rt_sigaction"], 0, allow - 4),
        (_LD_W_ABS, _ARG0_LOW, 0, 0),
        (_JEQ_K, SIGCHLD, 0, allow - 6),
        (_LD_W_ABS, _ARG1_LOW, 0, 0),  # act, a pointer: NULL in both halves to be allowed
        (_JEQ_K, 0, 0, eperm - 8),
        (_LD_W_ABS, _ARG1_LOW + 4, 0, 0),
        (_JEQ_K, 0, allow - 10, eperm - 10),
        (_RET_K, _ALLOW, 0, 0),
        (_RET_K, _ERRNO | _EPERM, 0, 0),
    ]
    return b"".join(_insn(code, k, jt, jf) for code, k, jt, jf in prog)


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Filter:
    """A filter ready to install: built (and its memory laid out) once, installed per child."""

    def __init__(self, bpf: bytes) -> None:
        self._buf = ctypes.create_string_buffer(bpf, len(bpf))
        self._prog = _Prog(len(bpf) // 8, ctypes.addressof(self._buf))
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.empty = not bpf

    def install(self) -> None:
        """Install in this process (needs no_new_privs, which the server sets)."""
        if self.empty:
            raise OSError("no seccomp filter for this architecture")
        prctl = self._libc.prctl
        if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._prog), 0, 0) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"seccomp: {os.strerror(errno)}")


# -- Landlock ---------------------------------------------------------------------------------
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446  # same numbers on x86_64 and aarch64
_LL_VERSION = 1
_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1, 1 << 1, 1 << 2, 1 << 3
_FS_TRUNCATE = 1 << 14
_FS_READS = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_FS_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE
# Every access that changes the file system (REFER from ABI 2, TRUNCATE from ABI 3).
_FS_ABI1 = (1 << 1) | sum(1 << bit for bit in range(4, 13))  # WRITE_FILE, REMOVE_*, MAKE_*
_FS_CHANGES = {1: _FS_ABI1, 2: _FS_ABI1 | 1 << 13, 3: _FS_ABI1 | 1 << 13 | 1 << 14}
_NET_TCP = 0b11  # BIND_TCP | CONNECT_TCP (ABI 4)
_SCOPES = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
DEVICES += ("/dev/ptmx", "/dev/pts/ptmx")
_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded once, before any fork: children reuse it
_syscall = _LIBC.syscall
_syscall.restype = ctypes.c_long


def landlock_abi() -> int:
    """The Landlock ABI version of this kernel (0: none or disabled)."""
    abi = _syscall(ctypes.c_long(_LL_CREATE), None, ctypes.c_long(0), ctypes.c_long(_LL_VERSION))
    return max(int(abi), 0)


def _check(value: int, what: str) -> int:
    if value < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"landlock {what}: {os.strerror(errno)}")
    return value


def landlock_confine(
    folder: str,
    writable_files: Iterable[str] = DEVICES,
    abi: int = -1,
    tcp: bool = True,
    view: Iterable[tuple[str, str]] | None = None,
) -> int:
    """Restrict this process (and what it starts) as the module docstring says.

    ``abi``: the ABI, when the caller looked it up once already. ``tcp``: also refuse TCP
    binds and connects (where no network namespace does it already). ``view``: ``(path,
    rights)`` pairs, rights ``"r"`` (read and execute files beneath) and/or ``"d"`` (list
    folders beneath): then nothing else can be read, listed or executed. Returns the ABI used.
    """
    ruleset, abi = landlock_ruleset(folder, writable_files, abi, tcp, view)
    if ruleset < 0:
        return 0
    try:
        landlock_restrict(ruleset)
    finally:
        os.close(ruleset)
    return abi


def landlock_ruleset(
    folder: str,
    writable_files: Iterable[str] = DEVICES,
    abi: int = -1,
    tcp: bool = True,
    view: Iterable[tuple[str, str]] | None = None,
) -> tuple[int, int]:
    """The ruleset of :func:`landlock_confine`, not yet enforced: ``(fd, abi)``, ``(-1, 0)``
    without Landlock. Built once, it costs each process that forks from its builder one
    :func:`landlock_restrict` (a spawner whose children must first do what the domain
    forbids: raise their own ``oom_score_adj``)."""
    abi = landlock_abi() if abi < 0 else abi
    if abi <= 0:
        return -1, 0
    fs = _FS_CHANGES[min(abi, 3)]
    if view is not None:
        fs |= _FS_READS
    attr = struct.pack("=QQQ", fs, _NET_TCP if abi >= 4 and tcp else 0, _SCOPES if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    buf = ctypes.create_string_buffer(attr[:size], size)
    C = ctypes.c_long
    ruleset = _check(_syscall(C(_LL_CREATE), buf, C(size), C(0)), "create")
    file_access = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
    if view is not None:
        file_access |= _FS_READ_FILE
    rules = [(folder, fs, True), *((p, file_access, False) for p in writable_files)]
    for path, rights in view or ():
        access = (_FS_READ_FILE | _FS_EXECUTE if "r" in rights else 0) | (
            _FS_READ_DIR if "d" in rights else 0
        )
        rules.append((path, access, False))
    try:
        for path, access, required in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a device this machine lacks, a path gone since the view was made
            try:
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    access &= _FS_FILE_RIGHTS  # a file rule may only carry file accesses
                rule = ctypes.create_string_buffer(struct.pack("=Qi", access, fd), 12)
                if _syscall(C(_LL_ADD_RULE), C(ruleset), C(_RULE_PATH_BENEATH), rule, C(0)) < 0:
                    if required:
                        _check(-1, "add_rule")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset, abi


def landlock_restrict(ruleset: int) -> None:
    """Enforce ``ruleset`` on this process (and what it starts); raises OSError."""
    _check(
        _syscall(ctypes.c_long(_LL_RESTRICT), ctypes.c_long(ruleset), ctypes.c_long(0)),
        "restrict_self",
    )


# -- the one capability a child may keep (no bubblewrap, an interpreter others cannot read) ---
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2
_CAP_VERSION_3 = 0x20080522
PR_SET_KEEPCAPS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 8, 47, 2


def effective_caps() -> int:
    """This process's effective capability set (from /proc/self/status; 0 when unknown)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def keep_only(cap: int) -> None:
    """After a change of uid (with ``PR_SET_KEEPCAPS``): ``cap`` alone, effective, permitted,
    inheritable and ambient (so a program the candidate execs keeps it too); raises OSError."""
    header, data = _cap_sets(cap)
    if _LIBC.capset(header, data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"capset: {os.strerror(errno)}")
    if _LIBC.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"ambient capability: {os.strerror(errno)}")


@functools.lru_cache(maxsize=4)
def _cap_sets(cap: int) -> tuple[Any, Any]:
    """capset's header and data for ``cap`` alone, built once (ctypes types cost a child)."""
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    bits = [0, 0]
    bits[cap // 32] = 1 << (cap % 32)
    data = (ctypes.c_uint32 * 6)(bits[0], bits[0], bits[0], bits[1], bits[1], bits[1])
    return header, data


# -- what a child installs ----------------------------------------------------------------------
_IPC_RMID = 0
_IPC_KINDS = (("shm", "shmctl"), ("sem", "semctl"), ("msg", "msgctl"))
_KEYCTL, _KEYCTL_JOIN, _KEYCTL_CLEAR = 250, 1, 7


def clean_shared_state() -> None:
    """Where no filter can be installed: remove the System V objects this user owns and
    empty its keyrings (what a previous sample of the same uid may have left)."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid = os.getuid()
    for kind, ctl in _IPC_KINDS:
        try:
            with open(f"/proc/sysvipc/{kind}", "rb") as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # Columns: key id ... uid gid cuid cgid: the owner's uid is the 5th from the end
            # for shm/sem/msg alike when counted from "uid" (see proc_sysvipc headers).
            if len(fields) > 2 and uid in {int(f) for f in fields[2:] if f.isdigit()}:
                getattr(libc, ctl)(int(fields[1]), _IPC_RMID, None)
    if platform.machine() == "x86_64":
        for ring in (-4, -5):  # the user and user-session keyrings
            _syscall(ctypes.c_long(_KEYCTL), ctypes.c_long(_KEYCTL_CLEAR), ctypes.c_long(ring))
        _syscall(ctypes.c_long(_KEYCTL), ctypes.c_long(_KEYCTL_JOIN), None)


class Confinement:
    """Built and installed once, in the fork server's zygote; every child it forks inherits
    both.

    Installing costs ~0.1 ms for the filter (the kernel compiles it) and ~0.2 ms for the
    domain, so the zygote confines itself once, with its work root as the writable folder:
    its children then start confined at no cost. A child's own folder is the only one of that
    root it can reach (the others are removed, or made root's and 0700, before it starts), and
    concurrent samples run under other servers, so in other domains. ``confine`` again in a
    child does only what the filter could not: the clean-up where no filter is installed.

    ``view`` (no bubblewrap): the read allow-list. :attr:`read_cap` is then the capability a
    child keeps to read it whatever the file modes say (None: none is needed or possible).
    """

    def __init__(
        self, tcp: bool = True, view: Iterable[Iterable[str]] | None = None, read_cap: bool = False
    ) -> None:
        self.filter = Filter(build_filter())
        self.candidate_filter = Filter(build_candidate_filter())
        self.abi = landlock_abi()
        self.tcp = tcp
        self.view = [(str(p), str(r)) for p, r in view] if view is not None else None
        self.wants_read_cap = read_cap
        self.installed = False
        self.filtered = False
        self.read_cap: int | None = None

    def confine(self, folder: str) -> None:
        if not self.installed:
            caps = effective_caps() if self.view is not None and self.wants_read_cap else 0
            abi = landlock_confine(folder, abi=self.abi, tcp=self.tcp, view=self.view)
            if abi and self.view is not None:  # the view is enforced: the modes may give way
                for cap in (CAP_DAC_READ_SEARCH, CAP_DAC_OVERRIDE):
                    if caps & (1 << cap):
                        self.read_cap = cap
                        _cap_sets(cap)  # built here, before the forks
                        break
            try:
                self.filter.install()
                self.filtered = True
            except OSError:  # an architecture or kernel without seccomp filters
                pass
            self.installed = True
        if not self.filtered:
            clean_shared_state()

    def limit_candidate(self) -> None:
        """In a child, once it is set up (its session made, SIGCHLD's action reset): the
        candidate's own filter (:func:`build_candidate_filter`), stacked on the server's (a
        dozen instructions, compiled per child).

        No process of the sample makes a session: the scheduler shares the CPU between
        sessions (autogroups), so each would take a share of the machine from the other
        workers' samples. No memfd: its pages count against no limit of the sample. No
        SIGCHLD handler: with SIGCHLD ignored the kernel reaps the children at once and adds
        their CPU to nothing, so a program could compute in children whose CPU no deadline
        sees."""
        if self.filtered and not self.candidate_filter.empty:
            self.candidate_filter.install()

    @staticmethod
    def keep_read_cap(cap: int) -> None:
        """In a child, right after it became its uid: keep :attr:`read_cap` alone."""
        keep_only(cap)
