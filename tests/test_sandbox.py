"""The sandbox end to end: real fork server, real children, real bubblewrap where it works."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness.sandbox import (
    CaseRequest,
    SampleRequest,
    Sandbox,
    SandboxSettings,
    bwrap_available,
)
from harness.sandbox.channel.codec import Digest

ADD = "def add(a, b):\n    return a + b\n"


def compare(i: int, call: str, timeout_s: float = 1.0) -> CaseRequest:
    return CaseRequest(f"c{i}", "compare", calls=(call,), timeout_s=timeout_s)


def add_cases(n: int = 4, timeout_s: float = 1.0) -> tuple[CaseRequest, ...]:
    return tuple(compare(i, f"candidate({i}, 10)", timeout_s) for i in range(n))


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxSettings()) as sb:
        yield sb


def test_correct_program_gives_values(sandbox: Sandbox) -> None:
    result = sandbox.run(SampleRequest(ADD, "add", add_cases()))
    assert result.infra_error is None
    assert [c.status for c in result.cases.values()] == ["ok"] * 4
    assert [c.values for c in result.cases.values()] == [[10], [11], [12], [13]]
    assert all(c.duration_s >= 0 for c in result.cases.values())
    assert result.max_rss_kb > 0


def test_wrong_program_gives_other_values(sandbox: Sandbox) -> None:
    result = sandbox.run(SampleRequest("def add(a, b):\n    return a - b\n", "add", add_cases(2)))
    assert [c.values for c in result.cases.values()] == [[-10], [-9]]


def test_values_of_many_types(sandbox: Sandbox) -> None:
    calls = (
        "candidate()",
        "[1.5, float('inf'), None, True, 'x', b'y', (1, 2), {3}, frozenset({4}), {5: 6}, 1j]",
    )
    case = CaseRequest("c", "compare", calls=calls)
    prog = "def f():\n    return {'a': [1, (2, 3)], 'b': {4, 5}}\n"
    result = sandbox.run(SampleRequest(prog, "f", (case,)))
    assert result.cases["c"].values == [
        {"a": [1, (2, 3)], "b": {4, 5}},
        [1.5, float("inf"), None, True, "x", b"y", (1, 2), {3}, frozenset({4}), {5: 6}, 1j],
    ]


def test_exceptions_are_raised_with_type(sandbox: Sandbox) -> None:
    prog = "def add(a, b):\n    raise ValueError('no ' + str(a))\n"
    case = sandbox.run(SampleRequest(prog, "add", add_cases(1))).cases["c0"]
    assert case.status == "raised"
    assert case.exception == {"type": "ValueError", "message": "no 0"}


def test_sandbox_mode_assert(sandbox: Sandbox) -> None:
    cases = (
        CaseRequest("good", "sandbox", statement="assert candidate(1, 2) == 3"),
        CaseRequest("bad", "sandbox", statement="assert candidate(1, 2) == 4, 'nope'"),
        CaseRequest(
            "plain", "sandbox", prelude="x = candidate(2, 2)", statement="assert __plain__(x) == 4"
        ),
    )
    result = sandbox.run(SampleRequest(ADD, "add", cases))
    assert result.cases["good"].status == "ok"
    assert result.cases["bad"].status == "assertion"
    assert result.cases["bad"].exception == {"type": "AssertionError", "message": "nope"}
    assert result.cases["plain"].status == "ok"


def test_test_setup_shares_the_namespace(sandbox: Sandbox) -> None:
    setup = "HELPER = 100\ndef expected(a, b):\n    return a + b + HELPER - 100\n"
    case = CaseRequest("c", "sandbox", statement="assert candidate(2, 3) == expected(2, 3)")
    result = sandbox.run(SampleRequest(ADD, "add", (case,), test_setup=setup))
    assert result.cases["c"].status == "ok"


def test_program_that_fails_to_load(sandbox: Sandbox) -> None:
    result = sandbox.run(SampleRequest("def add(a, b)\n    return a\n", "add", add_cases(2)))
    assert {c.status for c in result.cases.values()} == {"raised"}
    assert result.cases["c1"].exception["type"] == "SyntaxError"
    missing = sandbox.run(SampleRequest("x = 1\n", "add", add_cases(1)))
    assert missing.cases["c0"].status == "raised"
    assert missing.cases["c0"].exception["type"] == "NameError"


def test_infinite_loop_times_out_and_later_cases_run(sandbox: Sandbox) -> None:
    prog = "def add(a, b):\n    while a == 1:\n        pass\n    return a + b\n"
    request = SampleRequest(prog, "add", add_cases(4, timeout_s=0.5))
    start = time.monotonic()
    result = sandbox.run(request)
    elapsed = time.monotonic() - start
    statuses = [c.status for c in result.cases.values()]
    assert statuses == ["ok", "timeout", "ok", "ok"]
    assert result.cases["c3"].values == [13]
    assert 0.45 <= result.cases["c1"].duration_s < 3.0
    assert elapsed < 8.0  # generous: two shared cores
    again = sandbox.run(request)
    assert [c.status for c in again.cases.values()] == statuses


def test_timeout_while_loading_hits_every_case(sandbox: Sandbox) -> None:
    prog = "while True:\n    pass\n"
    result = sandbox.run(SampleRequest(prog, "add", add_cases(3, timeout_s=0.2)))
    assert {c.status for c in result.cases.values()} == {"timeout"}


def test_budget_stops_the_sample(sandbox: Sandbox) -> None:
    # Loops on every other case (never two timeouts in a row): the budget stops it.
    prog = "def add(a, b):\n    while a % 2 == 0:\n        pass\n    return a + b\n"
    request = SampleRequest(prog, "add", add_cases(6, timeout_s=0.5), budget_s=1.2)
    start = time.monotonic()
    result = sandbox.run(request)
    assert time.monotonic() - start < 6.0
    statuses = [c.status for c in result.cases.values()]
    assert statuses[:4] == ["timeout", "ok", "timeout", "ok"]
    assert statuses[4:] == ["timeout", "timeout"]
    assert "budget" in result.cases["c5"].message


def test_two_timeouts_in_a_row_stop_the_sample(sandbox: Sandbox) -> None:
    prog = "def add(a, b):\n    while True:\n        pass\n"
    start = time.monotonic()
    result = sandbox.run(SampleRequest(prog, "add", add_cases(6, timeout_s=0.5), budget_s=10))
    # Two limits, not six: a sample that loops on every input costs what two cases cost.
    assert time.monotonic() - start < 2.5
    cases = list(result.cases.values())
    assert {c.status for c in cases} == {"timeout"}
    assert [c.message for c in cases[:2]] == ["timed out after 0.5s"] * 2
    assert {c.message for c in cases[2:]} == {"not run: the 2 cases before it timed out"}


def test_one_timeout_keeps_the_other_cases(sandbox: Sandbox) -> None:
    prog = "def add(a, b):\n    while a in (0, 2):\n        pass\n    return a + b\n"
    result = sandbox.run(SampleRequest(prog, "add", add_cases(4, timeout_s=0.5), budget_s=10))
    assert [c.status for c in result.cases.values()] == ["timeout", "ok", "timeout", "ok"]
    assert result.cases["c3"].values == [13]


def test_exit_inside_a_call_crashes_only_that_case(sandbox: Sandbox) -> None:
    prog = "import os\ndef add(a, b):\n    if a == 1:\n        os._exit(0)\n    return a + b\n"
    result = sandbox.run(SampleRequest(prog, "add", add_cases(3)))
    assert [c.status for c in result.cases.values()] == ["ok", "crashed", "ok"]
    assert "exited with code 0" in result.cases["c1"].message


def test_output_is_captured_and_capped() -> None:
    settings = SandboxSettings(max_output_bytes=100)
    prog = "import sys\nprint('hello')\nprint('x' * 1000, file=sys.stderr)\n" + ADD
    with Sandbox(settings) as sb:
        result = sb.run(SampleRequest(prog, "add", add_cases(1)))
    assert result.stdout == "hello\n"
    assert len(result.stderr) == 100


def test_coverage_of_solution_lines(sandbox: Sandbox) -> None:
    prog = "def add(a, b):\n    if a > 100:\n        return 0\n    return a + b\n"
    result = sandbox.run(SampleRequest(prog, "add", add_cases(2), coverage=True))
    cov = result.coverage
    assert cov is not None
    assert cov["statements"] == [1, 2, 3, 4]
    assert cov["missing"] == [3]
    assert cov["branches"] == 2 and cov["partial_branches"] == 1
    assert cov["line_rate"] == 0.75 and cov["branch_rate"] == 0.5


def test_server_restarts_after_it_is_killed(sandbox: Sandbox) -> None:
    # Start the server first: under xdist this may be the first test to use the fixture.
    assert sandbox.run(SampleRequest(ADD, "add", add_cases(1))).infra_error is None
    assert sandbox._proc is not None
    sandbox._proc.kill()
    sandbox._proc.wait()
    result = sandbox.run(SampleRequest(ADD, "add", add_cases(1)))
    assert result.infra_error is None and result.cases["c0"].values == [10]


@pytest.mark.parametrize("started_soon", [False, True])
def test_infra_error_when_the_server_cannot_start(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, started_soon: bool
) -> None:
    from harness.sandbox import bwrap

    monkeypatch.setattr(bwrap, "INSIDE_DIR", tmp_path)  # no server.py there: python exits
    with Sandbox(SandboxSettings(use_bwrap=False)) as sb:
        if started_soon:
            sb.start_soon()  # nothing raised here: the sample that needs the server says it
        result = sb.run(SampleRequest(ADD, "add", add_cases(2)))
        assert result.infra_error and "died" in result.infra_error
        assert {c.status for c in result.cases.values()} == {"error"}
        monkeypatch.undo()
        again = sb.run(SampleRequest(ADD, "add", add_cases(2)))
    assert again.infra_error is None and again.cases["c1"].values == [11]


def test_a_server_started_soon_runs_the_first_sample_without_a_second_start() -> None:
    with Sandbox(SandboxSettings()) as sb:
        sb.start_soon()  # returns without waiting for the server's greeting
        started = sb._proc
        assert started is not None and started.poll() is None
        result = sb.run(SampleRequest(ADD, "add", add_cases(2)))
        assert sb._proc is started and sb.restarts == 0
        sb.start_soon()  # running: nothing happens
        assert sb._proc is started
    assert result.infra_error is None and result.cases["c1"].values == [11]


@pytest.mark.skipif(not bwrap_available(), reason="bubblewrap does not work here")
def test_bwrap_is_used_when_it_works() -> None:
    # A server of its own: the module's shared one has forked a child per sample run so far,
    # and how many ran before this test depends on how xdist spread the module.
    prog = "import os\ndef add(a, b):\n    return os.getpid()\n"
    with Sandbox(SandboxSettings()) as sandbox:
        assert sandbox.uses_bwrap
        result = sandbox.run(SampleRequest(prog, "add", add_cases(1)))
    assert result.cases["c0"].values[0] < 10  # own PID namespace: the server is PID 1


def test_without_bwrap_the_same_verdicts() -> None:
    prog = "def add(a, b):\n    while a == 1:\n        pass\n    return a + b\n"
    with Sandbox(SandboxSettings(use_bwrap=False)) as sb:
        result = sb.run(SampleRequest(prog, "add", add_cases(3, timeout_s=0.5)))
        assert "no bubblewrap" in " ".join(result.notes)
    assert [c.status for c in result.cases.values()] == ["ok", "timeout", "ok"]


def test_large_and_oversized_values(sandbox: Sandbox) -> None:
    cases = (
        # Generous limits: encoding megabytes is slow on a loaded 2-core machine.
        CaseRequest("big", "compare", calls=("'x' * 3_000_000",), timeout_s=10.0),
        CaseRequest("huge", "compare", calls=("'x' * 20_000_000",), timeout_s=10.0),
        CaseRequest("many", "compare", calls=("list(range(200_000))",), timeout_s=10.0),
    )
    result = sandbox.run(SampleRequest(ADD, "add", cases))
    assert result.cases["big"].values == ["x" * 3_000_000]
    huge = result.cases["huge"].values[0]  # over the decoding bounds: its digest came back
    assert isinstance(huge, Digest) and "too large" in repr(huge)
    assert huge == "x" * 20_000_000 and huge != "x" * 19_999_999
    assert result.cases["many"].values == [list(range(200_000))]


def test_no_cases(sandbox: Sandbox) -> None:
    result = sandbox.run(SampleRequest(ADD, "add", ()))
    assert result.cases == {} and result.infra_error is None


def test_interrupted_run_gives_a_fresh_server(sandbox: Sandbox) -> None:
    import signal

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        slow = "import time\ndef add(a, b):\n    time.sleep(0.8)\n    return a + b\n"
        with pytest.raises(KeyboardInterrupt):
            sandbox.run(SampleRequest(slow, "add", add_cases(1, timeout_s=2.0)))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    result = sandbox.run(SampleRequest(ADD, "add", add_cases(2)))
    assert result.infra_error is None and result.cases["c1"].values == [11]


def test_a_child_reuses_the_memory_it_frees(sandbox: Sandbox) -> None:
    """Blocks freed by the candidate are reused, not unmapped and faulted in again: values of
    growing size, each dropped before the next, fault in about the largest one's pages only
    (glibc's defaults map each such block afresh: about the sum of their sizes)."""
    prog = (
        "import resource\n"
        "def grow():\n"
        "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "    for mb in range(1, 31):\n"
        "        block = b'x' * (mb << 20)\n"
        "        del block\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
    )
    result = sandbox.run(SampleRequest(prog, "grow", (compare(0, "candidate()", 10.0),)))
    (faults,) = result.cases["c0"].values
    all_sizes_pages, largest_pages = (465 << 20) // 4096, (30 << 20) // 4096
    assert faults < 2 * largest_pages < all_sizes_pages // 3


def test_a_problems_key_is_its_content_and_is_kept_by_its_cases_tuple() -> None:
    """The server knows a problem by a key of its content; the key is computed once per
    tuple of cases (the pipeline builds one per problem), not on every sample."""
    from harness.sandbox import sandbox as sandbox_module

    cases = add_cases(3)
    key = sandbox_module._problem_key("add", "", cases)
    assert sandbox_module._problem_key("add", "", tuple(cases)) == key  # same content
    assert sandbox_module._problem_key("add", "", add_cases(2)) != key
    assert sandbox_module._problem_key("add", "X = 1", cases) != key
    twin = tuple(add_cases(3))
    assert twin is not cases
    assert sandbox_module._problem_key("add", "", twin) == key
    seen = []
    real = sandbox_module._case_fields
    sandbox_module._case_fields = lambda case: seen.append(case) or real(case)
    try:
        assert sandbox_module._problem_key("add", "", cases) == key
        assert seen == []  # kept: the cases were not read again
        assert sandbox_module._problem_key("add", "", add_cases(4)) != key
        assert len(seen) == 4
    finally:
        sandbox_module._case_fields = real
