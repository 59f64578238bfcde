"""benchmarks/cpu_probe.py's model of a whole run at N cores: workers that join one by one
judge from their own start on, and the run ends when the last sample is judged; a run of
another size has the start of the line through two measured sizes."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from cpu_probe import SIZED_PARTS, parts_at, predicted_run_s  # noqa: E402

seconds = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)


def parts(ready: float, spawn: float, boot: float, end: float) -> dict[str, float]:
    return {
        "controller_ready_s": ready,
        "first_worker_after_s": 0.0,
        "next_worker_after_s": spawn,
        "worker_boot_s": boot,
        "end_after_workers_s": end,
    }


@given(
    samples=st.integers(1, 100_000),
    workers=st.integers(1, 64),
    rate=st.floats(1.0, 10_000.0),
)
def test_without_a_start_the_run_is_the_samples_at_the_rate(
    samples: int, workers: int, rate: float
) -> None:
    got = predicted_run_s(parts(0, 0, 0, 0), samples, workers, rate)
    assert abs(got - samples / rate) <= 1e-9 * max(1.0, samples / rate)


@given(
    ready=seconds,
    spawn=seconds,
    boot=seconds,
    end=seconds,
    samples=st.integers(1, 100_000),
    workers=st.integers(1, 64),
    rate=st.floats(1.0, 10_000.0),
)
def test_workers_joining_late_only_lengthen_the_run(
    ready: float,
    spawn: float,
    boot: float,
    end: float,
    samples: int,
    workers: int,
    rate: float,
) -> None:
    got = predicted_run_s(parts(ready, spawn, boot, end), samples, workers, rate)
    # No faster than every worker judging from the first one's start ...
    assert got >= ready + boot + end + samples / rate - 1e-6
    # ... nor slower than the last one's start followed by all the samples on every worker,
    # or the first worker alone judging them all.
    alone = ready + boot + end + samples / (rate / workers)
    together = ready + (workers - 1) * spawn + boot + end + samples / rate
    assert got <= min(alone, together) + 1e-6
    slower = predicted_run_s(parts(ready, spawn + 0.01, boot, end), samples, workers, rate)
    assert slower >= got - 1e-9


def test_a_worker_that_joins_after_the_work_is_done_changes_nothing() -> None:
    # Two workers at 10 samples/s together: the first alone judges 5/s and is done with 5
    # samples after 1 s, long before the second would join at 100 s.
    got = predicted_run_s(parts(0.0, 100.0, 0.0, 0.0), 5, 2, 10.0)
    assert abs(got - 1.0) < 1e-9


sizes = st.integers(1, 20_000)


@given(small=st.tuples(seconds, seconds, seconds), large=st.tuples(seconds, seconds, seconds),
       small_n=sizes, more=sizes, samples=sizes)  # fmt: skip
def test_a_start_of_another_size_lies_on_the_line_through_two_sizes(
    small: tuple[float, float, float],
    large: tuple[float, float, float],
    small_n: int,
    more: int,
    samples: int,
) -> None:
    small_parts, large_parts = parts(*small[:2], 0.0, 0.0), parts(*large[:2], 0.0, 0.0)
    for parts_of_run, (ready, boot, end) in ((small_parts, small), (large_parts, large)):
        parts_of_run.update(controller_ready_s=ready, worker_boot_s=boot, end_after_workers_s=end)
    large_n = small_n + more
    # At the two measured sizes the measured parts come back.
    at_large = parts_at(small_parts, small_n, large_parts, large_n, large_n)
    assert all(abs(at_large[k] - v) <= 1e-9 * max(1.0, v) for k, v in large_parts.items())
    at_small = parts_at(small_parts, small_n, large_parts, large_n, small_n)
    bigger = parts_at(small_parts, small_n, large_parts, large_n, samples + large_n)
    for key in SIZED_PARTS:
        low, high = small_parts[key], large_parts[key]
        if high > low:
            assert abs(at_small[key] - low) < 1e-9
            # Past the larger run, a part that grew keeps growing at the same rate.
            expected = high + (high - low) * samples / more
            assert abs(bigger[key] - expected) <= 1e-9 * max(1.0, expected)
        else:  # it did not grow: fixed at the larger run's figure, whatever the size
            assert at_small[key] == bigger[key] == high
    # The spawn is not a sized part: the larger run's, at any size.
    assert bigger["next_worker_after_s"] == large_parts["next_worker_after_s"]


def test_parts_measured_at_one_size_are_used_as_they_are() -> None:
    measured = parts(1.0, 0.1, 0.5, 0.2)
    assert parts_at(parts(9.0, 9.0, 9.0, 9.0), 100, measured, 100, 9840) == measured
