"""The collector pause (harness.gcpause): off inside, back to what it was after, whatever the
nesting, an exception or another thread's pause in between."""

from __future__ import annotations

import ast
import gc
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.gcpause import paused_gc


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), max_size=12))
def test_nested_pauses_end_with_the_collector_as_it_was(raises_at: list[bool]) -> None:
    def nest(depth: int) -> None:
        if depth == len(raises_at):
            return
        with paused_gc():
            assert not gc.isenabled()
            if raises_at[depth]:
                raise ValueError(depth)
            nest(depth + 1)
        assert not gc.isenabled() or depth == 0

    try:
        nest(0)
    except ValueError:
        pass
    assert gc.isenabled()


def test_a_pause_leaves_a_collector_that_was_off_off() -> None:
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_pauses_in_threads_end_with_the_collector_on() -> None:
    start = threading.Barrier(4)

    def pause_often() -> None:
        start.wait()
        for _ in range(2000):
            with paused_gc():
                pass

    threads = [threading.Thread(target=pause_often) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.isenabled()


_EXIT_SCRIPT = """
import gc, sys
from harness.gcpause import no_collection_at_exit


class Cycle:
    def __del__(self):
        print("collected at exit", flush=True)


if sys.argv[1] == "skip":
    no_collection_at_exit()
    no_collection_at_exit()  # registered once, however often asked
cycle = Cycle()
cycle.me = cycle
del cycle  # garbage only a collection finds: the interpreter's passes at exit do
print("ok", flush=True)
"""


@pytest.mark.parametrize("mode", ["skip", "default"])
def test_no_collection_at_exit_skips_the_interpreters_last_passes(mode: str) -> None:
    """A process that asks for it ends without traversing what it holds (a worker of a large
    suite spent a second there while pytest's controller waited); one that does not still
    collects its cycles at exit, which shows the script would see a collection."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT, mode],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert "ok" in done.stdout
    assert ("collected at exit" in done.stdout) is (mode == "default")


def test_a_judging_worker_collects_in_fewer_larger_passes() -> None:
    """A pool worker's young generation is collected every JUDGING_THRESHOLD allocations (a
    collection after every sample walked its caches again: 12 % of a HumanEval+ worker's CPU);
    the process that asks for it is the worker alone."""
    import subprocess
    import sys
    from pathlib import Path

    from harness.gcpause import JUDGING_THRESHOLD

    script = (
        "import gc, sys\n"
        "import harness.pipeline.worker as w\n"
        "before = gc.get_threshold()\n"
        "w.serve = lambda *a, **k: sys.stderr.write(repr((before, gc.get_threshold())))\n"
        "w.main()\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    before, during = ast.literal_eval(done.stderr.strip().splitlines()[-1])
    assert during == JUDGING_THRESHOLD and before != JUDGING_THRESHOLD
