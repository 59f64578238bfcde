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
from collections.abc import Mapping

from harness.records import Problem
from harness.sandbox import CaseExecution, KnownValues

MAX_KEPT_UNITS = 2_000_000  # decoded units kept by a process (elements, characters, ...)
MAX_ENCODINGS = 8  # distinct passing encodings kept per case (floats within a tolerance)
MAX_PROBLEMS = 512

_Cases = dict[str, dict[bytes, KnownValues]]


class PassedValues:
    """The passed values of each oracle case of the problems seen, by encoding."""

    def __init__(self) -> None:
        self._problems: dict[int, tuple[Problem, _Cases]] = {}
        self._units = 0
        self._lock = threading.Lock()  # a trainer may judge from several threads

    def of(self, problem: Problem) -> Mapping[str, Mapping[bytes, KnownValues]]:
        """The problem's oracle cases, each with its passed encodings so far (the sandbox's
        ``SampleRequest.known``: a case with an entry, even empty, wants its encoding)."""
        entry = self._problems.get(id(problem))
        if entry is None or entry[0] is not problem:
            with self._lock:
                if len(self._problems) >= MAX_PROBLEMS:
                    self._problems.clear()
                    self._units = 0
                cases = {c.case_id: {} for c in problem.cases if c.oracle and c.mode == "compare"}
                entry = self._problems[id(problem)] = (problem, cases)
        return entry[1]

    def record(self, problem: Problem, executed: CaseExecution) -> None:
        """Keep ``executed``'s values: its case's oracle passed them (a known case's are)."""
        values = executed.values
        if executed.known or executed.encoding is None or values is None:
            return
        if any(hasattr(type(value), "__next__") for value in values):
            return  # an iterator is consumed by the check that reads it: never shared
        with self._lock:
            entry = self._problems.get(id(problem))
            if entry is None or entry[0] is not problem:
                return
            encodings = entry[1].get(executed.case_id)
            if encodings is None or len(encodings) >= MAX_ENCODINGS:
                return
            if self._units + executed.units > MAX_KEPT_UNITS:
                return
            encodings[executed.encoding] = KnownValues(tuple(values), executed.units)
            self._units += executed.units


passed_values = PassedValues()
