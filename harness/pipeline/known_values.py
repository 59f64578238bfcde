"""Values an oracle passed, kept by their exact encoding: a later sample of the same problem
whose child sends the same bytes for the case is neither decoded nor judged again.

An oracle (:mod:`harness.oracles`) is a function of the decoded values and the case's expected
output alone, and decoding is a function of the bytes: the same bytes get the same verdict. The
bytes are the child's own encoding of the values (checked when they are first decoded:
``harness.sandbox.decode``), so a payload that repeats them parses to the very values kept. What
changes with a sample stays per sample: the values' units still count against its decoding
bounds, and its case's duration is its own.

EvalPlus's problems have hundreds of inputs, and the samples that pass them (a GRPO group's,
a benchmark's correct programs) mostly send the same answers: each value so far cost ~10 us
of decoding and judging here, ~1 us now. Kept per judging process, for the last problems it
judged, at most :data:`MAX_KEPT_UNITS` units of values in all and :data:`MAX_ENCODINGS` per case.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from harness.records import Problem
from harness.sandbox import CaseExecution, KnownValues

MAX_KEPT_UNITS = 2_000_000  # decoded units kept by a process (elements, characters, ...)
MAX_ENCODINGS = 8  # distinct passing encodings kept per case (floats within a tolerance)
MAX_PROBLEMS = 512

_Cases = dict[str, dict[bytes, KnownValues]]


class _Kept:
    """One problem's kept values: by oracle case, by encoding; and their units in all."""

    __slots__ = ("problem", "cases", "units")

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.cases: _Cases = {
            c.case_id: {} for c in problem.cases if c.oracle and c.mode == "compare"
        }
        self.units = 0


class PassedValues:
    """The passed values of each oracle case of the problems seen, by encoding. Past its
    bounds the problems judged longest ago give up theirs (a worker judges a problem's
    samples together, then moves on)."""

    def __init__(self) -> None:
        self._problems: OrderedDict[int, _Kept] = OrderedDict()
        self._units = 0
        self._lock = threading.Lock()  # a trainer may judge from several threads

    def of(self, problem: Problem) -> Mapping[str, Mapping[bytes, KnownValues]]:
        """The problem's oracle cases, each with its passed encodings so far (the sandbox's
        ``SampleRequest.known``: a case with an entry, even empty, wants its encoding)."""
        kept = self._problems.get(id(problem))
        if kept is None or kept.problem is not problem:
            with self._lock:
                if len(self._problems) >= MAX_PROBLEMS:
                    self._drop_oldest()
                kept = self._problems[id(problem)] = _Kept(problem)
        return kept.cases

    def record(self, problem: Problem, executed: CaseExecution) -> None:
        """Keep ``executed``'s values: its case's oracle passed them (a known case's are)."""
        values = executed.values
        if executed.known or executed.encoding is None or values is None:
            return
        if any(hasattr(type(value), "__next__") for value in values):
            return  # an iterator is consumed by the check that reads it: never shared
        with self._lock:
            kept = self._problems.get(id(problem))
            if kept is None or kept.problem is not problem:
                return
            encodings = kept.cases.get(executed.case_id)
            if encodings is None or len(encodings) >= MAX_ENCODINGS:
                return
            self._problems.move_to_end(id(problem))
            while self._units + executed.units > MAX_KEPT_UNITS and len(self._problems) > 1:
                if next(iter(self._problems.values())) is kept:
                    break
                self._drop_oldest()
            if self._units + executed.units > MAX_KEPT_UNITS:
                return
            encodings[executed.encoding] = KnownValues(tuple(values), executed.units)
            kept.units += executed.units
            self._units += executed.units

    def _drop_oldest(self) -> None:
        _, kept = self._problems.popitem(last=False)
        self._units -= kept.units
        for encodings in kept.cases.values():  # a request that still holds them sees none
            encodings.clear()


passed_values = PassedValues()
