"""A sample in parts in the real sandbox (``SampleRequest.pauses``, ``Sandbox.parts``): one
child runs every part and waits at each part's end until the caller asks for the next; a
stop runs no more of it, and a sample passed by unread never holds up the ones behind it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings, bwrap_available

# Each call answers the child's pid, how many calls it served, and when (its own clock).
COUNTER = """
import os, time
calls = 0

def f(x):
    global calls
    calls += 1
    if x == SLOW:
        time.sleep(5)
    if x == EXIT:
        os._exit(3)
    return [os.getpid(), calls, time.monotonic()]
"""


def program(slow: int = -1, exit_on: int = -1) -> str:
    return COUNTER.replace("SLOW", str(slow)).replace("EXIT", str(exit_on))


def cases(count: int, timeout_s: float = 1.0) -> tuple[CaseRequest, ...]:
    return tuple(
        CaseRequest(f"c{i}", "compare", calls=(f"candidate({i})",), timeout_s=timeout_s)
        for i in range(count)
    )


def in_parts(source: str, count: int, pauses: tuple[int, ...], **kw: float) -> SampleRequest:
    timeout_s = float(kw.pop("timeout_s", 1.0))
    return SampleRequest(source, "f", cases(count, timeout_s), pauses=pauses, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module", params=["bwrap", "nobwrap"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    if request.param == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    with Sandbox(SandboxSettings(use_bwrap=request.param == "bwrap")) as sb:
        yield sb


def _values(execution) -> list[list]:  # noqa: ANN001
    return [case.values[0] for case in execution.cases.values()]


def test_one_child_runs_every_part_and_each_reply_holds_its_part(sandbox: Sandbox) -> None:
    parts = list(sandbox.parts(sandbox.submit(in_parts(program(), 10, (3, 7)))))
    assert [list(p.cases) for p in parts] == [
        ["c0", "c1", "c2"],
        ["c3", "c4", "c5", "c6"],
        ["c7", "c8", "c9"],
    ]
    values = [v for p in parts for v in _values(p)]
    assert len({pid for pid, _calls, _at in values}) == 1  # the same child throughout
    assert [calls for _pid, calls, _at in values] == list(range(1, 11))
    assert parts[-1].resources["cpu_user_s"] + parts[-1].resources["cpu_system_s"] > 0
    assert parts[-1].max_rss_kb > 0 and parts[0].max_rss_kb == 0  # the child's, at its end


def test_the_child_waits_for_the_caller_and_the_wait_is_not_its_time(sandbox: Sandbox) -> None:
    # Cases of 0.3 s and a budget of their sum: a wait of 1.5 s between parts spends neither.
    stream = sandbox.parts(sandbox.submit(in_parts(program(), 4, (2,), timeout_s=0.3)))
    first = next(stream)
    time.sleep(1.5)
    second = next(stream)
    assert [c.status for c in (*first.cases.values(), *second.cases.values())] == ["ok"] * 4
    ran_at = _values(first)[-1][2]
    assert _values(second)[0][2] - ran_at >= 1.5  # nothing of the next part ran meanwhile
    assert next(stream, None) is None and stream.stop() is None


def test_a_stop_runs_no_more_of_the_sample(sandbox: Sandbox) -> None:
    # Its next part would sleep 5 s; stopped, the sample ends at once, with its accounting.
    stream = sandbox.parts(sandbox.submit(in_parts(program(slow=2), 4, (2,), budget_s=30)))
    assert list(next(stream).cases) == ["c0", "c1"]
    started = time.monotonic()
    rest = stream.stop()
    assert rest is not None and rest.cases == {} and rest.max_rss_kb > 0
    assert time.monotonic() - started < 2.0
    assert next(stream, None) is None and stream.stop() is None
    assert sandbox.run(in_parts(program(), 2, ())).cases["c1"].values[0][1] == 2  # serving on


def test_a_sample_passed_by_unread_is_stopped_not_waited_for(sandbox: Sandbox) -> None:
    passed_by = sandbox.submit(in_parts(program(slow=3), 6, (2, 4), budget_s=30))
    started = time.monotonic()
    after = sandbox.run(in_parts(program(), 2, ()))
    assert [c.status for c in after.cases.values()] == ["ok", "ok"]
    assert time.monotonic() - started < 2.0 and not sandbox.holds(passed_by)
    assert sandbox.restarts == 0


def test_a_crash_on_a_parts_last_case_still_pauses_before_the_next(sandbox: Sandbox) -> None:
    stream = sandbox.parts(sandbox.submit(in_parts(program(exit_on=2), 6, (3,))))
    first = next(stream)
    assert [c.status for c in first.cases.values()] == ["ok", "ok", "crashed"]
    second = next(stream)  # a new child for the next part, its counter anew
    assert [calls for _pid, calls, _at in _values(second)] == [1, 2, 3]


def test_a_time_out_ends_the_sample_with_the_rest_in_its_last_reply(sandbox: Sandbox) -> None:
    request = in_parts(program(slow=1), 6, (2, 4), timeout_s=0.5, timeouts_in_a_row=1)
    (only,) = list(sandbox.parts(sandbox.submit(request)))
    statuses = {c.case_id: c.status for c in only.cases.values()}
    assert statuses == {"c0": "ok", "c1": "timeout"} | {f"c{i}": "timeout" for i in range(2, 6)}


STEALER = """
import os

def f(x):
    if x == 1:
        os.close(4)  # the pause socket: the child then cannot wait on it
    return x
"""


def test_a_candidate_that_closes_the_pause_socket_only_fails_itself(sandbox: Sandbox) -> None:
    request = SampleRequest(STEALER, "f", cases(4, 0.5), pauses=(2,), timeouts_in_a_row=1)
    parts = list(sandbox.parts(sandbox.submit(request)))
    statuses = [c.status for p in parts for c in p.cases.values()]
    assert statuses == ["ok", "ok", "crashed", "ok"]  # its next case, in a new child
    assert sandbox.run(in_parts(program(), 1, ())).cases["c0"].status == "ok"


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    count=st.integers(2, 12),
    cuts=st.sets(st.integers(1, 11), max_size=4),
    stop_after=st.integers(1, 6),
)
def test_parts_read_or_stopped_anywhere_give_each_case_once_in_order(
    sandbox: Sandbox, count: int, cuts: set[int], stop_after: int
) -> None:
    pauses = tuple(sorted(c for c in cuts if c < count))
    stream = sandbox.parts(sandbox.submit(in_parts(program(), count, pauses)))
    seen: list[str] = []
    for read, part in enumerate(stream, 1):
        seen += part.cases
        if read == stop_after:
            stream.stop()
            break
    ends = [*pauses, count]
    assert seen == [f"c{i}" for i in range(ends[min(stop_after, len(ends)) - 1])]


SPAMMER = """
import os, threading

def _spam():
    while True:
        try:
            os.write(4, b"p" * 4096)  # the pause channel, as if at a part's end, on and on
        except OSError:
            pass

threading.Thread(target=_spam, daemon=True).start()

def f(x):
    return x * 2
"""


def test_a_candidate_writing_on_the_pause_channel_changes_no_part(sandbox: Sandbox) -> None:
    request = SampleRequest(SPAMMER, "f", cases(6), pauses=(2, 4), timeouts_in_a_row=1)
    parts = list(sandbox.parts(sandbox.submit(request)))
    assert [list(p.cases) for p in parts] == [["c0", "c1"], ["c2", "c3"], ["c4", "c5"]]
    assert [c.values for p in parts for c in p.cases.values()] == [[0], [2], [4], [6], [8], [10]]
    assert sandbox.run(in_parts(program(), 1, ())).cases["c0"].status == "ok"
