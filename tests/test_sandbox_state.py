"""No state survives from one sample to the next, and concurrent samples cannot meet.

Each attack is a planter that leaves an answer somewhere (a kernel keyring, System V IPC, a
POSIX message queue, a world-writable folder, its own work folder made hard to remove) and a
reader that looks for it in a later sample of the same fork server, or a pair that meets while
both run in two fork servers (an abstract unix socket, signals to the other's processes, the
other's ``/proc`` entries). The readers must find nothing: every sample starts from the same
clean state. Real sandboxes, both modes (``use_bwrap``), and real pytest sessions (``-n 0``,
``-n 2``) for the pair that crosses workers and sessions.

Both modes rely on the fork server's kernel confinement (``harness.sandbox.inside.seccomp``,
installed once on the server, inherited by every child): a seccomp filter (no keyrings, System
V IPC, POSIX queues, ptrace, io_uring, namespaces) and a Landlock domain (writes only under
the server's work root, whose other folders are gone or root's before a child starts; no
abstract socket, signal or ptrace reaching another server's processes). Without bubblewrap
that is all there is: where the kernel lacks Landlock, world-writable folders (/tmp, /dev/shm)
and concurrent samples' sockets and signals are open again, and the machine's files stay
readable (tests/test_sandbox_view.py needs bubblewrap). Not closed in either mode: advisory
locks on files both samples can read, taken while both run (a timing channel between
concurrent samples only).
"""

from __future__ import annotations

import json
import os
import platform
import time
import uuid
from collections.abc import Iterator

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings

pytestmark = pytest.mark.skipif(
    os.getuid() != 0 or platform.machine() != "x86_64",
    reason="the attacks use x86_64 syscall numbers and the child's drop to nobody (root)",
)

CASE = (CaseRequest("c", "compare", calls=("candidate(M)",), timeout_s=5.0),)
LIBC = "import ctypes\nL = ctypes.CDLL(None, use_errno=True)\nL.syscall.restype = ctypes.c_long\nC = ctypes.c_long\n"

KEYRING = LIBC + (
    "def plant(m):\n"
    "    return L.syscall(C(248), b'user', m.encode(), m.encode(), C(len(m)), C(RING))\n"
    "def read(m):\n"
    "    k = L.syscall(C(250), C(10), C(RING), b'user', m.encode(), C(0))\n"
    "    buf = ctypes.create_string_buffer(256)\n"
    "    n = L.syscall(C(250), C(11), C(k), buf, C(256)) if k > 0 else -1\n"
    "    return buf.raw[: max(n, 0)].decode('latin-1')\n"
)
SYSV_MSG = LIBC + (
    "class Msg(ctypes.Structure):\n"
    "    _fields_ = [('type', ctypes.c_long), ('text', ctypes.c_char * 64)]\n"
    "def plant(m):\n"
    "    q = L.msgget(KEY, 0o1666)\n"
    "    return L.msgsnd(q, ctypes.byref(Msg(1, m.encode())), 64, 0o4000)\n"
    "def read(m):\n"
    "    q, msg = L.msgget(KEY, 0), Msg()\n"
    "    n = L.msgrcv(q, ctypes.byref(msg), 64, 0, 0o4000) if q >= 0 else -1\n"
    "    return msg.text.decode('latin-1') if n > 0 else ''\n"
)
SYSV_SHM = LIBC + (
    "L.shmat.restype = ctypes.c_void_p\n"
    "def plant(m):\n"
    "    s = L.shmget(KEY, 4096, 0o1666)\n"
    "    at = L.shmat(s, None, 0)\n"
    "    ctypes.memmove(at, m.encode(), len(m))\n"
    "    return s\n"
    "def read(m):\n"
    "    s = L.shmget(KEY, 0, 0)\n"
    "    at = L.shmat(s, None, 0) if s >= 0 else None\n"
    "    return ctypes.string_at(at, 64).split(b'\\0')[0].decode('latin-1') if at and at > 0 else ''\n"
)
SYSV_SEM = LIBC + (
    "def plant(m):\n"
    "    s = L.semget(KEY, 1, 0o1666)\n"
    "    return L.semctl(s, 0, 16, int(m[-3:], 16))\n"
    "def read(m):\n"
    "    s = L.semget(KEY, 1, 0)\n"
    "    v = L.semctl(s, 0, 12) if s >= 0 else -1\n"
    "    return m[:-3] + '%03x' % v if v > 0 else ''\n"
)
MQUEUE = LIBC + (
    "def plant(m):\n"
    "    q = L.mq_open(b'/' + m.encode(), 0o102, 0o666, None)\n"
    "    return L.mq_send(q, m.encode(), len(m), 0)\n"
    "def read(m):\n"
    "    q = L.mq_open(b'/' + m.encode(), 0o4000, 0, None)\n"
    "    buf = ctypes.create_string_buffer(1 << 16)\n"
    "    n = L.mq_receive(q, buf, 1 << 16, None) if q >= 0 else -1\n"
    "    return buf.raw[: max(n, 0)].decode('latin-1')\n"
)
# Every folder other users may write to, and the siblings of the child's own folder.
FOLDERS = (
    "import os\n"
    "PLACES = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', '/dev/mqueue', '/var/lock']\n"
    "def plant(m):\n"
    "    done = []\n"
    "    for d in PLACES + [os.path.dirname(os.getcwd())]:\n"
    "        try:\n"
    "            with open(os.path.join(d, 'cev-answer'), 'w') as fh:\n"
    "                fh.write(m)\n"
    "            os.chmod(os.path.join(d, 'cev-answer'), 0o666)\n"
    "            done.append(d)\n"
    "        except OSError:\n"
    "            pass\n"
    "    return done\n"
    "def read(m):\n"
    "    for d in PLACES + [os.path.dirname(os.getcwd())]:\n"
    "        try:\n"
    "            return open(os.path.join(d, 'cev-answer')).read()\n"
    "        except OSError:\n"
    "            pass\n"
    "    return ''\n"
)
# A work folder the server cannot empty (a read-only sub-folder, a deep tree) stays behind.
LEFTOVER = (
    "import os, re\n"
    "def plant(m):\n"
    "    os.mkdir('keep')\n"
    "    with open('keep/answer', 'w') as fh:\n"
    "        fh.write(m)\n"
    "    os.chmod('keep', 0o555)\n"
    "    os.chmod('.', 0o755)\n"
    "    return 'planted'\n"
    "def read(m):\n"
    "    here = os.getcwd()\n"
    "    head, n = re.match(r'(.*-)(\\d+)$', here).groups()\n"
    "    for path in [head + str(int(n) - k) for k in range(1, 6)] + [os.path.join(os.path.dirname(here), n) for n in os.listdir(os.path.dirname(here))]:\n"
    "        try:\n"
    "            return open(os.path.join(path, 'keep', 'answer')).read()\n"
    "        except OSError:\n"
    "            pass\n"
    "    return ''\n"
)
CHANNELS = {
    "user_keyring": "RING = -4\n" + KEYRING,
    "user_session_keyring": "RING = -5\n" + KEYRING,
    "session_keyring": "RING = -3\n" + KEYRING,
    "sysv_message_queue": SYSV_MSG,
    "sysv_shared_memory": SYSV_SHM,
    "sysv_semaphore": SYSV_SEM,
    "posix_message_queue": MQUEUE,
    "world_writable_folders": FOLDERS,
    "unremovable_work_folder": LEFTOVER,
}


def _marker() -> str:
    return "cev" + uuid.uuid4().hex[:12]


def _sample(source: str, entry: str, marker: str, budget: float = 10.0) -> SampleRequest:
    # KEY: a System V key of this marker's own, so that stale objects of other runs never meet.
    program = f"M = {marker!r}\nKEY = {int(marker[3:10], 16)}\n{source}"
    return SampleRequest(program, entry, CASE, budget_s=budget)


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool) -> Iterator[Sandbox]:
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as sb:
        yield sb


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_a_later_sample_finds_nothing(sandbox: Sandbox, channel: str) -> None:
    marker = _marker()
    planted = sandbox.run(_sample(CHANNELS[channel], "plant", marker))
    assert planted.infra_error is None, planted.infra_error
    read = sandbox.run(_sample(CHANNELS[channel], "read", marker))
    assert read.infra_error is None, read.infra_error
    assert marker not in json.dumps(read.cases["c"].values), f"{channel} carried the answer"
    # Nor does the channel open again for a third sample (a clean-up that ran only once).
    again = sandbox.run(_sample(CHANNELS[channel], "read", marker))
    assert marker not in json.dumps(again.cases["c"].values)
    honest = sandbox.run(_sample("def f(x):\n    return x\n", "f", marker))
    assert honest.cases["c"].values == [marker]


WRITABLE = r"""
import os
SKIP = ('/proc', '/sys')
def probe(m):
    found = []
    def writable_dir(path):
        name = os.path.join(path, '.cev-w')
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError:
            return False
        os.unlink(name)
        return True
    walks = [os.walk(os.getcwd()), os.walk('/', onerror=lambda e: None)]
    for top, dirs, files in (entry for walk in walks for entry in walk):
        if top.startswith(SKIP):
            dirs[:] = []
            continue
        if writable_dir(top):
            found.append(top + '/')
        for name in files:
            path = os.path.join(top, name)
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY))
                found.append(os.path.realpath(path))  # a link to /dev/null is /dev/null
            except OSError:
                pass
        if len(found) > 500:
            break
    return [os.getcwd(), found]
"""
# Device files a program may write to: each open is its own (no state is kept between opens).
DEVICES = {"null", "zero", "full", "random", "urandom", "tty", "ptmx", "stdin", "stdout"}
DEVICES |= {"stderr", "pts/ptmx"}


def test_the_only_writable_folder_is_the_samples_own(sandbox: Sandbox) -> None:
    res = sandbox.run(
        SampleRequest(
            "M = 0\n" + WRITABLE,
            "probe",
            (CaseRequest("c", "compare", calls=("candidate(M)",), timeout_s=60.0),),
            budget_s=60.0,
        )
    )
    assert res.infra_error is None and res.cases["c"].status == "ok", res.cases["c"].message
    here, found = res.cases["c"].values[0]
    others = [
        p
        for p in found
        if not p.startswith(here.rstrip("/") + "/")
        and not (p.startswith("/dev/") and p[len("/dev/") :] in DEVICES)
        and not p.startswith(("/proc/", "/memfd:"))  # its own stdio (/dev/stdout)
    ]
    assert here + "/" in found  # the probe works: its own folder is writable
    assert others == [], f"writable outside the sample's folder: {others[:20]}"


# Kernel interfaces that make state or open an escape: each must be refused (-1) in the child.
SURFACES = LIBC + (
    "import os\n"
    "def f(m):\n"
    "    out = {}\n"
    "    calls = {\n"
    "        'unshare_user': (272, 0x10000000), 'unshare_ipc': (272, 0x08000000),\n"
    "        'io_uring_setup': (425, 4, ctypes.create_string_buffer(120)),\n"
    "        'userfaultfd': (323, 0), 'bpf': (321, 0, None, 0), 'perf_event_open': (298, None, 0, -1, -1, 0),\n"
    "        'keyctl': (250, 0, -4), 'msgget': (68, 0, 0o1666), 'mq_open': (240, b'cevq', 0o102, 0o600, None),\n"
    "        'ptrace_parent': (101, 16, os.getppid(), 0, 0), 'setns': (308, 0, 0),\n"
    "    }\n"
    "    for name, (nr, *args) in calls.items():\n"
    "        args = [C(a) if isinstance(a, int) else a for a in args]\n"
    "        out[name] = L.syscall(C(nr), *args)\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        os._exit(L.syscall(C(56), C(0x10000000 | 17), None, None, None, None) < 0 and 3 or 0)\n"
    "    out['clone_newuser'] = -1 if os.waitpid(pid, 0)[1] >> 8 == 3 else pid\n"
    "    return {k: v for k, v in out.items() if v >= 0}\n"
)


def test_kernel_surfaces_are_refused(sandbox: Sandbox) -> None:
    res = sandbox.run(_sample(SURFACES, "f", _marker()))
    assert res.infra_error is None, res.infra_error
    assert res.cases["c"].status == "ok", (res.cases["c"].message, res.cases["c"].exception)
    assert res.cases["c"].values == [{}], "not refused"


# A planter whose server is killed mid-sample (an interrupt, a restart) leaves its folder; the
# reader, under the next server of the same Sandbox, guesses the folder's name.
STRANDED = """
import os, time
def plant(m):
    with open('answer', 'w') as fh:
        fh.write(m)
    time.sleep(3)
    return 'planted'
def read(m):
    root = os.path.dirname(os.getcwd())
    me = int(os.path.basename(os.getcwd())[1:].split('-')[0])
    for pid in range(max(1, me - 3000), me + 50):
        for n in (1, 2, 3):
            try:
                with open('%s/s%d-%d/answer' % (root, pid, n)) as fh:
                    return fh.read()
            except OSError:
                pass
    return ''
"""


def test_a_killed_server_leaves_no_folder_behind(use_bwrap: bool) -> None:
    marker = _marker()
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as sb:
        sb.run(_sample("def f(x):\n    return x\n", "f", marker))
        ticket = sb.submit(_sample(STRANDED, "plant", marker))
        time.sleep(1.0)
        assert sb._proc is not None
        sb._proc.kill()  # what an interrupt or a dead server comes to
        sb.collect(ticket)
        read = sb.run(_sample(STRANDED, "read", marker, budget=20.0))
    assert read.infra_error is None, read.infra_error
    assert marker not in json.dumps(read.cases["c"].values), "the stranded folder was readable"


# -- concurrent samples of two fork servers (two pytest-xdist workers) -----------------------

SOCKET = LIBC + (
    "class Addr(ctypes.Structure):\n"
    "    _fields_ = [('family', ctypes.c_ushort), ('path', ctypes.c_char * 108)]\n"
    "def addr(m):\n"
    "    return Addr(1, b'\\0cev-' + m.encode())\n"
    "SIZE = ctypes.c_int(2 + 1 + 4 + 12)\n"
)
LISTEN = SOCKET + (
    "import time\n"
    "def serve(m):\n"
    "    s = L.socket(1, 1 | 0o4000, 0)\n"
    "    if L.bind(s, ctypes.byref(addr(m)), SIZE) or L.listen(s, 4):\n"
    "        return 'no socket'\n"
    "    end = time.time() + 3\n"
    "    while time.time() < end:\n"
    "        c = L.accept(s, None, None)\n"
    "        if c >= 0:\n"
    "            L.write(c, m.encode(), len(m))\n"
    "            return 'served'\n"
    "        time.sleep(0.02)\n"
    "    return 'nobody came'\n"
)
CONNECT = SOCKET + (
    "import time\n"
    "def ask(m):\n"
    "    end = time.time() + 3\n"
    "    while time.time() < end:\n"
    "        s = L.socket(1, 1, 0)\n"
    "        if L.connect(s, ctypes.byref(addr(m)), SIZE) == 0:\n"
    "            buf = ctypes.create_string_buffer(64)\n"
    "            n = L.read(s, buf, 64)\n"
    "            return buf.raw[: max(n, 0)].decode('latin-1')\n"
    "        L.close(s)\n"
    "        time.sleep(0.05)\n"
    "    return ''\n"
)
VICTIM = "import time\ndef wait(m):\n    time.sleep(2.5)\n    return m\n"
# Kills every process of the shared user outside its own session: the other sample's child.
KILLER = """
import os, time
def kill(m):
    time.sleep(0.5)
    me, hit = os.getsid(0), []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            if os.stat('/proc/' + name).st_uid == os.getuid() and os.getsid(pid) != me:
                os.kill(pid, 9)
                hit.append(pid)
        except OSError:
            pass
    return str(hit)
"""
# The other sample runs a fresh interpreter with the answer in its environment (an exec makes
# the process dumpable again); the reader looks for it in /proc/PID/environ of its peers.
EXPOSED = """
import os
def expose(m):
    pid = os.fork()
    if pid == 0:
        os.execve('/bin/sleep', ['sleep', '3'], {'ANSWER': m})
    os.waitpid(pid, 0)
    return 'done'
"""
SNOOP = """
import os, time
def snoop(m):
    end = time.time() + 3
    while time.time() < end:
        for name in os.listdir('/proc'):
            try:
                data = open('/proc/%s/environ' % name, 'rb').read()
            except OSError:
                continue
            if b'ANSWER=' in data:
                return data.split(b'ANSWER=')[1].split(b'\\0')[0].decode()
        time.sleep(0.05)
    return ''
"""
PAIRS = {
    "abstract_unix_socket": (LISTEN, "serve", CONNECT, "ask"),
    "signals_to_other_samples": (VICTIM, "wait", KILLER, "kill"),
    "environ_of_other_samples": (EXPOSED, "expose", SNOOP, "snoop"),
}


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_concurrent_samples_cannot_meet(use_bwrap: bool, pair: str) -> None:
    first, first_entry, second, second_entry = PAIRS[pair]
    marker = _marker()
    settings = SandboxSettings(use_bwrap=use_bwrap)
    with Sandbox(settings) as one, Sandbox(settings) as two:
        for sb in (one, two):  # both servers up before the race starts
            sb.run(SampleRequest("def f(x):\n    return x\n", "f", CASE))
        ticket = one.submit(_sample(first, first_entry, marker))
        time.sleep(0.3)
        other = two.run(_sample(second, second_entry, marker))
        mine = one.collect(ticket)
    assert mine.infra_error is None and other.infra_error is None
    if pair == "signals_to_other_samples":
        assert mine.cases["c"].status == "ok", f"killed by the other sample: {mine.cases['c']}"
        assert mine.cases["c"].values == [marker]
    else:
        assert marker not in json.dumps(other.cases["c"].values), f"{pair} carried the answer"


# -- real pytest sessions: planters and readers as samples of one task --------------------------

PROBLEM = {
    "task_id": "Cev/0",
    "prompt": "def add(x, y):\n",
    "canonical_solution": "    return x + y\n",
    "entry_point": "add",
    "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(40, 2) == 42\n",
}
PLANT_ALL = (
    "import ctypes, os\n"
    "L = ctypes.CDLL(None, use_errno=True)\nL.syscall.restype = ctypes.c_long\nC = ctypes.c_long\n"
    "SRC = b'def add(x, y):\\n    return x + y\\n'\n"
    "L.syscall(C(248), b'user', b'cevadd', SRC, C(len(SRC)), C(-4))\n"
    "for d in ('/tmp', '/var/tmp', '/dev/shm'):\n"
    "    try:\n"
    "        open(os.path.join(d, 'cevadd.py'), 'wb').write(SRC)\n"
    "    except OSError:\n"
    "        pass\n"
    "def add(x, y):\n    return 0\n"
)
READ_ALL = (
    "def add(x, y):\n    return -1\n"  # a whole program (else it would be a body)
    "import ctypes, time\n"
    "L = ctypes.CDLL(None, use_errno=True)\nL.syscall.restype = ctypes.c_long\nC = ctypes.c_long\n"
    "def _found():\n"
    "    k = L.syscall(C(250), C(10), C(-4), b'user', b'cevadd', C(0))\n"
    "    if k > 0:\n"
    "        buf = ctypes.create_string_buffer(256)\n"
    "        n = L.syscall(C(250), C(11), C(k), buf, C(256))\n"
    "        return buf.raw[:n]\n"
    "    for d in ('/tmp', '/var/tmp', '/dev/shm'):\n"
    "        try:\n"
    "            return open(d + '/cevadd.py', 'rb').read()\n"
    "        except OSError:\n"
    "            pass\n"
    "    return None\n"
    "end = time.time() + 3\n"
    "src = _found()\n"
    "while src is None and time.time() < end:\n"
    "    time.sleep(0.1)\n"
    "    src = _found()\n"
    "if src:\n"
    "    exec(src)\n"
)


def _clear_user_keyring() -> None:
    """Drop what an earlier, unfixed run planted in nobody's keyring (it outlives sessions)."""
    import subprocess
    import sys

    code = (
        "import ctypes, os\nL = ctypes.CDLL(None)\nos.setgid(65534); os.setuid(65534)\n"
        "L.syscall(ctypes.c_long(250), ctypes.c_long(7), ctypes.c_long(-4))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=False, capture_output=True)
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            os.unlink(os.path.join(d, "cevadd.py"))
        except OSError:
            pass


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0", "2"])
def test_reader_samples_never_pass_in_a_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, use_bwrap: bool, workers: str
) -> None:
    _clear_user_keyring()
    if not use_bwrap:
        from harness.sandbox.probe import SandboxUnusable, check_sandbox

        try:  # the session stops at this same probe (an interpreter nobody cannot read)
            # Settings of its own: the probe then uses a private sandbox, not the shared one.
            check_sandbox(SandboxSettings(use_bwrap=False, memory_mb=512))
        except SandboxUnusable as exc:
            pytest.skip(str(exc)[:300])
        monkeypatch.setenv("CODEEVAL_SANDBOX", "nobwrap")
    problems = pytester.path / "problems.jsonl"
    problems.write_text(json.dumps(PROBLEM) + "\n")
    rows = [
        {"task_id": "Cev/0", "sample_id": f"plant{i}", "completion": PLANT_ALL} for i in range(2)
    ]
    rows += [
        {"task_id": "Cev/0", "sample_id": f"read{i}", "completion": READ_ALL} for i in range(4)
    ]
    rows.append({"task_id": "Cev/0", "sample_id": "honest", "completion": "    return x + y\n"})
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = pytester.path / "out"
    try:
        pytester.runpytest_subprocess(
            "--llm-eval", f"jsonl:{problems}", "--llm-samples", str(samples), "--llm-out", str(out),
            "--llm-timeout", "5", "-n", workers, "-p", "no:codeeval_gate", "-q",
        )  # fmt: skip
        verdicts = {
            r["sample_id"]: r["status"]
            for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())
        }
    finally:
        _clear_user_keyring()
    assert verdicts.pop("honest") == "passed"
    assert [s for s, status in verdicts.items() if status == "passed"] == []
