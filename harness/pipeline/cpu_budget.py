"""The CPU budget of the checks that judge a sample, in the trusted process.

A check runs the problem's generated assertions over values the candidate chose. Honest checks
take microseconds; the decoder's bounds keep C-level work on any value cheap; this budget stops
the Python-level rest (a check's loop over a huge value, a slow ``__eq__``) by raising
:class:`CheckBudgetExceeded` in it.

The clock is a CPU-time timer (``ITIMER_PROF``, ``SIGPROF``), so pytest-timeout's ``SIGALRM``
timer is left alone. Its signal repeats while the budget is armed (a handler in the checked
code may swallow one), so the arming and disarming code must never be interrupted by it: a
signal that lands there is passed over (see :func:`_on_budget`), and the next one, one
``_REFIRE_S`` later, lands in the checks themselves.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType

# CPU seconds the checks of one case, and of one sample, may spend in this process.
CASE_BUDGET_S = 1.0
SAMPLE_BUDGET_S = 5.0
_REFIRE_S = 0.05  # the budget's signal repeats until the case ends (a handler may swallow one)
# Address space a check may add to this process: ``[0] * v`` or ``list(range(v))`` for a huge
# v is one C-level allocation that no signal interrupts; past this it is a MemoryError.
CHECK_MEMORY_BYTES = 1 << 30


class CheckBudgetExceeded(BaseException):
    """A check ran past its CPU budget: the case fails (the candidate's value was too costly).

    A BaseException, so that ``except Exception`` in a repr or explanation helper does not
    swallow it.
    """


_budget_armed = False


def _on_budget(signum: int, frame: FrameType | None) -> None:
    """Raise in the checks, never in the budget's own bookkeeping.

    Python runs this handler at the next safe point of whatever frame is running, and that
    may be the first instruction of ``__exit__`` (before anything there can catch it), of
    ``__enter__`` after the timer started (where no ``__exit__`` follows), or of ``pause``.
    An exception raised there would leave the timer and this handler armed for good, and the
    next code to run (pytest's own) interrupted at random. Passing over one signal costs
    nothing: it repeats while the budget is armed.
    """
    if _budget_armed and (frame is None or frame.f_code not in _BOOKKEEPING):
        raise CheckBudgetExceeded()


class Budget:
    """The armed budget of :func:`check_budget`: ``restart`` gives the next case its own
    seconds (one ``setitimer`` call), ``pause`` stops the clock between cases."""

    def __init__(self, usable: bool) -> None:
        self.usable = usable

    def restart(self, seconds: float) -> None:
        global _budget_armed
        if self.usable:
            signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-3), _REFIRE_S)
            _budget_armed = True

    def pause(self) -> None:
        """Stop charging the clock: with the flag down its signal does nothing, so the timer
        is left to the next ``restart`` or the block's exit, which set it (one system call
        per case, not two)."""
        global _budget_armed
        if self.usable:  # else an outer block's budget, or none: not ours to stop
            _budget_armed = False


def check_budget(seconds: float) -> _Armed:
    """Raise :class:`CheckBudgetExceeded` in the block once it used ``seconds`` of CPU.

    Signals reach Python only in the main thread: elsewhere (a trainer's worker thread) the
    block runs unbounded, and the decoder's bounds alone keep it cheap. The block may also
    grow the address space by ``CHECK_MEMORY_BYTES`` at most. Arming costs ~17 us (the
    memory limit, the handler); the :class:`Budget` the block gets restarts the clock for
    each case of a sample at ~1 us.
    """
    return _Armed(seconds)


class _Armed:
    """The context of :func:`check_budget`. A class, not a generator, so that its frames are
    known to :func:`_on_budget`, which never raises in them."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.budget = Budget(False)
        self.previous: signal._HANDLER = None
        self.memory: tuple[int, int] | None = None
        self.timer: tuple[float, float] = (0.0, 0.0)

    def __enter__(self) -> Budget:
        main = threading.current_thread() is threading.main_thread()
        if not (hasattr(signal, "setitimer") and main) or _budget_armed or self.seconds <= 0:
            return self.budget  # not armed: the block runs unbounded (or inside an outer one)
        self.previous = signal.signal(signal.SIGPROF, _on_budget)
        self.memory = _limit_memory(CHECK_MEMORY_BYTES)
        self.timer = signal.getitimer(signal.ITIMER_PROF)
        self.budget = Budget(True)
        self.budget.restart(self.seconds)
        return self.budget

    def __exit__(self, *exc: object) -> bool:
        global _budget_armed
        if self.budget.usable:
            _budget_armed = False  # first: a signal still on its way now does nothing
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, self.previous)
            if self.timer[0] > 0:  # someone else's profiling timer, put back
                signal.setitimer(signal.ITIMER_PROF, *self.timer)
            if self.memory is not None:
                _restore_memory(self.memory)
                self.memory = None
        return False


# Where the budget's signal is passed over: the code that arms and disarms it.
_BOOKKEEPING = frozenset(
    function.__code__
    for function in (Budget.restart, Budget.pause, _Armed.__enter__, _Armed.__exit__)
)


def _limit_memory(extra: int) -> tuple[int, int] | None:
    """Cap this process's address space at its current size plus ``extra``; the old limits
    (to restore), or None where that cannot be done."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * resource.getpagesize()
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + extra
        for bound in (soft, hard):
            if bound != resource.RLIM_INFINITY:
                cap = min(cap, bound)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):
        return None
    return soft, hard


def _restore_memory(limits: tuple[int, int]) -> None:
    import resource

    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_AS, limits)
