"""Everything a sample starts is the sample's: its CPU, its session, and what it sends back.

A candidate can fork. What its children compute counts against its limits even when the
child never waits for them (segment.tree_cpu_seconds), and it cannot have the kernel reap them
unseen (no SIGCHLD action); they cannot take sessions of their own, each of which the
scheduler would give a share of the machine, nor memory files no limit counts (the candidate's
seccomp filter). Whatever frames a candidate writes, one reply holds at most ``MAX_REPLY``
bytes of them (segment.Segment._fits), and bytes it writes while its frames are not read (a
judged case) end the sample: what a sample costs the server and the trusted side is bounded.
"""

from __future__ import annotations

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox.channel import wire


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool):
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        yield box


def _request(program: str, cases: int, timeout_s: float = 1.0, budget_s: float = 30.0):
    calls = tuple(
        CaseRequest(f"c{i}", "compare", calls=(f"candidate({i})",), timeout_s=timeout_s)
        for i in range(cases)
    )
    return SampleRequest(program, "f", calls, budget_s=budget_s)


_BURN = """
import os, time
def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
"""

# Each case's work (2.5 s of CPU, past its 1 s limit) runs in a child it never waits for:
# its own CPU stays near zero, which once read as a busy machine and stretched the deadline.
OFFLOADED = (
    _BURN
    + """
def f(i):
    r, w = os.pipe()
    if os.fork() == 0:
        _burn(2.5)
        os.write(w, b"1")
        os._exit(0)
    os.close(w)
    return int(os.read(r, 1)) + i - 1
"""
)

# Children started at import compute on while every case answers at once, well in time.
HOGS_ALONGSIDE = (
    _BURN
    + """
for _ in range(4):
    if os.fork() == 0:
        _burn(60)
        os._exit(0)
def f(i):
    time.sleep(0.3)
    return i
"""
)


def test_cpu_in_a_child_never_waited_for_counts(sandbox: Sandbox) -> None:
    result = sandbox.run(_request(OFFLOADED, cases=2))
    statuses = [c.status for c in result.cases.values()]
    assert statuses[0] == "timeout", result.cases


def test_children_computing_beside_quick_cases_use_up_the_budget(sandbox: Sandbox) -> None:
    # 12 cases of 0.3 s of sleep: 3.6 s of wall, in time. Four children compute all along:
    # the sample's processes pass its 2.5 s budget long before its last case.
    result = sandbox.run(_request(HOGS_ALONGSIDE, cases=12, budget_s=2.5))
    cases = list(result.cases.values())
    assert cases[-1].status == "timeout", [(c.status, c.message) for c in cases]
    assert any("budget" in c.message for c in cases), [(c.status, c.message) for c in cases]


NEW_SESSION = """
import os
def f(i):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.write(w, b"made")
        except OSError as exc:
            os.write(w, str(exc.errno).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(w)
    return os.read(r, 16).decode()
"""


def test_no_process_of_a_sample_makes_a_session_of_its_own(sandbox: Sandbox) -> None:
    result = sandbox.run(_request(NEW_SESSION, cases=1))
    case = result.cases["c0"]
    assert case.status == "ok", (case.status, case.message)
    assert case.values == ["1"]  # EPERM: the filter refused it


KERNEL_REAPS_OR_MEMFD = """
import errno, os, signal
def f(i):
    refused = []
    for attempt in (
        lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN),  # children reaped unseen
        lambda: os.memfd_create("hold"),
    ):
        try:
            attempt()
            refused.append("allowed")
        except OSError as exc:
            refused.append(errno.errorcode[exc.errno])
    refused.append(signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL)  # asking stays allowed
    return refused
"""


def test_no_sigchld_action_and_no_memory_files(sandbox: Sandbox) -> None:
    result = sandbox.run(_request(KERNEL_REAPS_OR_MEMFD, cases=1))
    case = result.cases["c0"]
    assert case.status == "ok", (case.status, case.message)
    assert case.values == [["EPERM", "EPERM", True]]


# Writes 400 MiB on the result pipe while the judge runs its check: nobody reads those bytes.
FLOOD_WHILE_JUDGED = """
import os
def f(i):
    chunk = b"x" * (1 << 20)
    for _ in range(400):
        os.write(3, chunk)
    return i
"""


def test_bytes_written_while_a_judged_case_runs_end_the_sample(sandbox: Sandbox) -> None:
    case = CaseRequest("j0", "sandbox", statement="assert candidate(1) == 1", timeout_s=10.0)
    result = sandbox.run(SampleRequest(FLOOD_WHILE_JUDGED, "f", (case,), budget_s=30.0))
    judged = result.cases["j0"]
    assert (judged.status, judged.message) == ("crashed", "corrupted result channel")


# Correct answers, each frame padded with 30 MiB of JSON whitespace: every frame is within
# MAX_FRAME, and together they pass what one reply may hold.
PADDED = """
import gc, os, struct, sys
def f(i):
    sender = next(o for o in gc.get_objects() if type(o).__name__ == "_Sender")
    frame = sys._getframe(1)
    while "codec" not in frame.f_locals:
        frame = frame.f_back
    encode = frame.f_locals["codec"].encode_value
    pad = b" " * (30 << 20)
    for index in range(CASES):
        whole = sender._values_frame(index, [encode(index)], 0.001, sender._nonce)
        head, body = whole[:13], whole[13:].replace(b'"values":', b'"values":' + pad, 1)
        sender._write_frame(head[:5] + struct.pack(">II", index, len(body)) + body)
    end = b'{"n":"%s","i":%d}' % (sender._nonce.encode(), CASES)
    sender._write_frame(whole[:4] + struct.pack(">BII", 3, CASES, len(end)) + end)
    os._exit(0)
"""


def test_a_reply_holds_at_most_max_reply_bytes(sandbox: Sandbox) -> None:
    cases = 6
    result = sandbox.run(_request(PADDED.replace("CASES", str(cases)), cases=cases))
    fit = wire.MAX_REPLY // (30 << 20)  # the frames that fit
    statuses = [c.status for c in result.cases.values()]
    assert statuses[:fit] == ["ok"] * fit, statuses
    assert statuses[fit:] == ["crashed"] * (cases - fit), statuses
    message = result.cases[f"c{fit}"].message
    assert f"passed {wire.MAX_REPLY >> 20} MiB" in message, message
