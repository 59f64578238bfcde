"""The checks' CPU budget (harness.pipeline.cpu_budget): it stops a costly check, and it never
outlives its block, wherever its repeating signal lands."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from harness.pipeline import cpu_budget
from harness.pipeline.cpu_budget import Budget, CheckBudgetExceeded, _Armed, check_budget


@contextlib.contextmanager
def _left_clean() -> Iterator[None]:
    """Assert the budget left nothing behind; put things back even if it did, so that a
    failure here does not interrupt the rest of the session."""
    original = signal.getsignal(signal.SIGPROF)
    try:
        yield
        assert signal.getsignal(signal.SIGPROF) is original
        assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
        assert not cpu_budget._budget_armed
    finally:
        cpu_budget._budget_armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, original)


def test_a_costly_check_is_stopped() -> None:
    with _left_clean(), pytest.raises(CheckBudgetExceeded):
        with check_budget(0.05):
            while True:
                pass


def test_a_paused_budget_does_not_stop_the_code_between_cases() -> None:
    with _left_clean(), check_budget(0.01) as budget:
        budget.pause()
        total = 0
        for i in range(3_000_000):  # well past 0.01 s of CPU, the timer still running
            total += i
    assert total > 0


def _landing_on(target: Callable[..., Any]) -> Callable[[FrameType, str, Any], None]:
    """A profile hook that delivers the budget's signal on the first instruction of each
    call of ``target``: what CPython does when the signal is pending as the call begins."""

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is target.__code__:
            handler = signal.getsignal(signal.SIGPROF)
            if callable(handler):
                handler(signal.SIGPROF, frame)

    return hook


@pytest.mark.parametrize(
    "target",
    [Budget.restart, Budget.pause, _Armed.__enter__, _Armed.__exit__],
    ids=lambda f: f.__qualname__,
)
@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_a_signal_on_the_budgets_own_code_is_passed_over(
    target: Callable[..., Any], ending: str
) -> None:
    """A signal that lands as the budget arms, pauses, restarts or disarms raises nothing
    there: raised on the first instruction of ``__exit__`` it left the timer and handler
    armed for good, and pytest's own code was interrupted at random after the block."""
    with _left_clean(), contextlib.suppress(ValueError):
        sys.setprofile(_landing_on(target))
        try:
            with check_budget(30.0) as budget:
                budget.pause()
                budget.restart(30.0)
                # A check's own frame still gets the signal while the budget is armed.
                with pytest.raises(CheckBudgetExceeded):
                    signal.getsignal(signal.SIGPROF)(signal.SIGPROF, sys._getframe())  # type: ignore[operator]
                if ending == "raises":
                    raise ValueError("the check's own failure")
        finally:
            sys.setprofile(None)


def test_the_check_budget_never_outlives_its_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, with the real timer: its signal repeats every 0.1 ms here, to land
    anywhere in the arming and the clean-up."""
    monkeypatch.setattr(cpu_budget, "_REFIRE_S", 0.0001)
    with _left_clean():
        for _ in range(300):
            with contextlib.suppress(CheckBudgetExceeded):
                with check_budget(0.0005):
                    while True:
                        pass
