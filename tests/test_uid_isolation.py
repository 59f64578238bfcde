"""One sample's processes never change another sample's verdict, across workers and runs.

The kernel counts ``RLIMIT_NPROC`` per uid across the whole machine. When every candidate ran
as ``nobody``, a sample holding its 63 processes made a correct sample in another worker fail
to start a thread. Now each sandbox runs its candidates as a uid it leases for itself
(:mod:`harness.sandbox.uids`), so a hog in one sandbox (or in another process, as another
pytest run would be) leaves the others their whole limit. Real fork servers, real processes.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings, uids

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="uids are dropped only as root")
REPO = Path(__file__).resolve().parents[1]
HOLD_S = 15
# Takes every process its uid may have (RLIMIT_NPROC) and holds them for HOLD_S seconds.
HOG = f"""
import os, time
def f():
    held = 0
    while True:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep({HOLD_S})
            os._exit(0)
        held += 1
    time.sleep({HOLD_S})
    return held
"""
# Starts 8 threads: each one is a process to the kernel's count.
THREADS = """
import threading
def f():
    done = []
    threads = [threading.Thread(target=done.append, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(done)
"""


def _request(program: str, timeout_s: float) -> SampleRequest:
    case = CaseRequest("c", "compare", calls=("candidate()",), timeout_s=timeout_s)
    return SampleRequest(program, "f", (case,), budget_s=timeout_s + 5)


def _wait_for_hog(not_uid: int) -> None:
    """Until some leased uid other than ``not_uid`` runs 60 processes (the hog is holding)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        counts: dict[int, int] = {}
        for name in os.listdir("/proc"):
            try:
                status = Path(f"/proc/{name}/status").read_text()
            except (OSError, ValueError):
                continue
            for line in status.splitlines():
                if line.startswith("Uid:"):
                    uid = int(line.split()[1])
                    counts[uid] = counts.get(uid, 0) + 1
        if any(n >= 60 for u, n in counts.items() if u >= uids.UID_BASE and u != not_uid):
            return
        time.sleep(0.1)
    raise AssertionError("the hog never held its processes")


def _threads_pass(box: Sandbox) -> None:
    result = box.run(_request(THREADS, 20))
    case = result.cases["c"]
    assert case.status == "ok", (case.status, case.message, case.exception)
    assert case.values == [list(range(8))]


@pytest.mark.slow  # 16 s of a hog under load
def test_a_hog_in_another_worker_leaves_this_workers_samples_their_limit(use_bwrap: bool) -> None:
    settings = SandboxSettings(use_bwrap=use_bwrap)
    with Sandbox(settings) as hog_box, Sandbox(settings) as box:
        _threads_pass(box)  # started: its uid is known
        hog = threading.Thread(target=hog_box.run, args=(_request(HOG, HOLD_S + 10),))
        hog.start()
        try:
            _wait_for_hog(not_uid=box._uids.uid() if box._uids else -1)
            _threads_pass(box)
        finally:
            hog.join()


@pytest.mark.slow  # 16 s of a hog under load
def test_a_hog_in_another_run_on_the_machine_leaves_this_run_its_limit(use_bwrap: bool) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
        case = CaseRequest("c", "compare", calls=("candidate()",), timeout_s={HOLD_S + 10})
        with Sandbox(SandboxSettings(use_bwrap={use_bwrap})) as box:
            box.run(SampleRequest({HOG!r}, "f", (case,), budget_s={HOLD_S + 15}))
        """
    )
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        _threads_pass(box)
        other = subprocess.Popen([sys.executable, "-c", script])
        try:
            _wait_for_hog(not_uid=box._uids.uid() if box._uids else -1)
            _threads_pass(box)
        finally:
            other.wait(timeout=120)


def test_leases_are_exclusive_across_processes_and_end_with_their_holder() -> None:
    script = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from harness.sandbox import uids\n"
        "lease = uids.lease(1)\n"
        "print(lease.first, flush=True)\n"
        "sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdin is not None
    theirs = int(holder.stdout.readline())
    lock = os.path.join(uids._lock_folder(), str(theirs))
    fd = os.open(lock, os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):  # held while its process lives
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        mine = uids.lease(1)
        assert mine.first != theirs
        mine.release()
        holder.stdin.close()
        holder.wait(timeout=30)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once it died
    finally:
        os.close(fd)
