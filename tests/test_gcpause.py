"""The collector pause (harness.gcpause): off inside, back to what it was after, whatever the
nesting, an exception or another thread's pause in between."""

from __future__ import annotations

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
