"""The fork server defers the at-fork hooks its start-up registers (threading's, random's).

They would run at every fork of a sample (~0.5 ms of CPU each, mostly copy-on-write faults);
the server is single-threaded and children seed ``random`` from the request, so the server
records them instead, and each child registers them again for forks the candidate makes. These
tests check both halves with real processes: the server's own forks skip the hooks, and a
candidate that starts a thread and forks sees what a plain interpreter gives it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings, bwrap

SERVER = bwrap.INSIDE_DIR / "server.py"


def test_the_servers_forks_skip_the_recorded_hooks() -> None:
    script = textwrap.dedent(
        f"""
        import importlib.util, os, sys
        spec = importlib.util.spec_from_file_location("server", {str(SERVER)!r})
        server = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(server)
        hooks = server.load_deferring_fork_hooks(["json"])
        import random, threading
        names = sorted(h["after_in_child"].__qualname__ for h in hooks)
        random.seed(7)
        before = random.random()
        random.seed(7)
        rfd, wfd = os.pipe()
        if os.fork() == 0:  # random's reseed would change the next number here
            os.write(wfd, repr(random.random()).encode())
            os._exit(0)
        os.close(wfd)
        os.wait()
        print(names, os.read(rfd, 100).decode() == repr(before))
        """
    )
    # -S as the real server runs: site is run inside, under the recording.
    out = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['Random.seed', '_after_fork'] True"


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool) -> Iterator[Sandbox]:
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        yield box


# A thread that is alive at the fork, then a fork: in a plain interpreter the grandchild's
# threading forgets the thread (threading's hook) and random is reseeded (random's hook).
FORKING = """
import os, random, threading, time

def f():
    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    random.seed(3)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        message = f"{len(threading.enumerate())} {random.random() == random.Random(3).random()}"
        os.write(wfd, message.encode())
        os._exit(0)
    os.close(wfd)
    os.waitpid(pid, 0)
    reply = os.read(rfd, 100).decode()
    done.set()
    worker.join()
    return reply
"""


def test_a_candidates_own_forks_run_the_hooks(sandbox: Sandbox) -> None:
    case = CaseRequest("c0", "compare", calls=("candidate()",), timeout_s=10.0)
    result = sandbox.run(SampleRequest(FORKING, "f", (case,), budget_s=20))
    assert result.infra_error is None, result.infra_error
    assert result.cases["c0"].status == "ok", result.cases["c0"]
    # One thread (the forking one), and random drew from a fresh seed.
    assert result.cases["c0"].values == ["1 False"]
