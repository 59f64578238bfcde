"""The records every part of codeeval-rl agrees on.

A benchmark adapter (``suites/``) turns its data into :class:`Problem` records; a model backend
or a samples file gives :class:`Sample` records; the compiler turns both into a generated pytest
suite whose cases are :class:`CheckCase` records. Everything here is plain data that round-trips
through JSON (``to_json`` / ``from_json``), because it crosses process boundaries: the pytest
controller writes it, xdist workers read it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

try:
    import orjson
except ImportError:  # a platform without its wheel: json writes the fingerprints
    orjson = None  # type: ignore[assignment]

CaseMode = Literal["compare", "sandbox"]
SampleStatus = Literal["passed", "failed", "timeout", "error"]
SAMPLE_STATUSES: tuple[str, ...] = ("passed", "failed", "timeout", "error")


# A problem's metadata flag, set by its loader: when only the verdict is wanted, its samples
# stop at their first failed case (harness.pipeline.sample_parts; EvalPlus's hundreds of inputs).
STOP_AT_FIRST_FAILURE = "stop_at_first_failure"
# A problem's metadata flag, set for a run: judge every case even after one failed (a
# partial-credit reward, per-case detail); it overrides STOP_AT_FIRST_FAILURE and a stdio
# problem's own stop at the first failed test.
EVERY_CASE = "every_case"
# A problem's metadata: the memory (MiB) its programs need, at least; a run whose own cap is
# lower raises it to this (EvalPlus's problems: evalplus's 4 GiB, which Mbpp/255 needs).
MEMORY_MB = "memory_mb"
PLUS_PREFIX = "plus_"  # the ids of cases generated from the reference (harness.plus)


def is_plus(case_id: str) -> bool:
    """Whether a case id names a generated plus case."""
    return case_id.startswith(PLUS_PREFIX)


@dataclass(frozen=True)
class CheckCase:
    """One check of a benchmark, run as one pytest test per sample.

    ``compare`` cases are the strong kind: the sandbox only evaluates ``calls`` (expressions that
    call the candidate) and sends back their values as plain data; the trusted pytest process
    then evaluates ``check``, an expression over ``v[0]``, ``v[1]``, ... So a candidate never
    judges itself. ``sandbox`` cases (loops over generated inputs, checks that use the
    prompt's helpers, unittest classes) run ``statement`` in a judge process that never runs
    candidate code and reaches the program through an object bridge: a forged answer there is
    a wrong value too. ``weaker`` marks checks whose verdict still depends on candidate code
    (a mined repository's tests, which must import the answer into their own process).
    """

    case_id: str
    source: str
    mode: CaseMode
    prelude: str = ""
    calls: tuple[str, ...] = ()
    check: str = ""
    statement: str = ""
    timeout_s: float | None = None
    weaker: bool = False
    # A compare case judged by a named oracle (harness.oracles) instead of ``check``: the
    # oracle gets the values sent back and ``expected``, JSON text it alone interprets
    # (EvalPlus's cases: the reference's output in the channel's tagged encoding, atol).
    # Text, not a structure: cases are hashed (harness.pipeline.runtime caches by them).
    oracle: str = ""
    expected: str = ""


@dataclass(frozen=True)
class Problem:
    """One benchmark task, in the same shape for every benchmark.

    ``program_setup`` is benchmark code placed before the completion (imports the benchmark
    promises, MBPP's ``test_setup_code``). ``test_setup`` is trusted module-level test code
    (imports, helper functions, constants) that runs on both sides. ``candidate_names`` are the
    names a check uses for the code under test (``candidate`` for HumanEval, the function name
    for MBPP). ``defects`` lists known data defects: such a problem is reported as a data error,
    never as a model's failure.
    """

    suite: str
    task_id: str
    prompt: str
    entry_point: str
    cases: tuple[CheckCase, ...]
    reference: str
    program_setup: str = ""
    test_setup: str = ""
    candidate_names: tuple[str, ...] = ("candidate",)
    defects: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """A stable hash of everything that decides a verdict (for caches).

        Each field's value in field order, the names first, the metadata's keys sorted: the
        cases go as lists of values, not objects with sorted keys, which took twice as long
        (every run computes it, and EvalPlus's problems have a thousand cases each); written
        by orjson where it is installed (4x json: a quarter of preparing HumanEval+'s run).
        """
        names = _field_names(Problem).ordered
        case_names = _field_names(CheckCase).ordered
        payload = [
            names,
            case_names,
            [getattr(self, n) for n in names if n not in ("cases", "metadata")],
            json.dumps(self.metadata, sort_keys=True, default=str),
            list(map(_case_values, self.cases)),
        ]
        return hashlib.sha256(_fingerprint_bytes(payload)).hexdigest()[:16]


def _fingerprint_bytes(payload: list[Any]) -> bytes:
    """``payload`` as JSON bytes (a field orjson cannot write goes as its ``str``, as json's
    ``default=str`` has it). orjson writes a NaN as ``null``: no field of a record deciding a
    verdict is NaN (time limits are finite), and json's text is not needed to match it, only
    to be stable."""
    if orjson is not None:
        try:
            return orjson.dumps(payload, default=str)
        except TypeError:  # an integer past 64 bits (orjson.JSONEncodeError is one)
            pass
    return json.dumps(payload, default=str).encode()


@dataclass(frozen=True)
class Sample:
    """One completion to evaluate for one problem.

    ``completion`` is the text as given (a continuation of the prompt, a whole solution, or a
    markdown answer); ``raw`` is the model's unprocessed output when it differs.
    """

    task_id: str
    completion: str
    sample_id: str
    agent: str | None = None
    raw: str | None = None
    source_line: int | None = None


def to_json(record: Any) -> Any:
    """A record as JSON-ready data, to serialize at once: a problem's fields and its cases'
    are read as they are, not deep-copied (EvalPlus's problems have a thousand cases, and
    every run writes them; ``dataclasses.asdict`` was most of preparing a run)."""
    if type(record) is Problem:
        cases = [_field_values(case) for case in record.cases]
        return {**_field_values(record), "cases": cases}
    if type(record) is Sample:  # flat: strings and None (a copy, as asdict gives, 7x faster)
        return dict(_field_values(record))
    return dataclasses.asdict(record)


def _field_values(record: Any) -> dict[str, Any]:
    """The record's fields by name. Its own ``__dict__`` holds exactly them (as ``__init__``
    and :func:`replaced` set them), and a serializer only reads it: lent as it is, without a
    copy, unless something else was stored on the instance."""
    names = _field_names(type(record))
    values = record.__dict__
    if len(values) == len(names.ordered) and names.known.issuperset(values):
        return values
    return {name: getattr(record, name) for name in names.ordered}


class _FieldNames(NamedTuple):
    ordered: tuple[str, ...]  # in the dataclass's order
    known: frozenset[str]  # the same, to test membership


def _field_names(kind: type) -> _FieldNames:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        ordered = tuple(f.name for f in dataclasses.fields(kind))
        names = _FIELD_NAMES[kind] = _FieldNames(ordered, frozenset(ordered))
    return names


_FIELD_NAMES: dict[type, _FieldNames] = {}
# A case's field values in field order (a tuple, written as a list): one C call a case.
_case_values = operator.attrgetter(*_field_names(CheckCase).ordered)


def replaced(record: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` of a record here (none has a ``__post_init__``), a copy of its
    fields with ``changes``, several times faster: every run copies each of EvalPlus's 165,000
    cases once or twice (its expected output, its time limit)."""
    kind = type(record)
    names = _field_names(kind).known
    if not names.issuperset(changes):
        unknown = sorted(set(changes).difference(names))
        raise TypeError(f"{kind.__name__} has no field {unknown[0]!r}")
    copy = object.__new__(kind)
    fields = copy.__dict__  # frozen: set as its __init__ would
    fields.update(record.__dict__)
    fields.update(changes)
    return copy


def problem_from_json(data: dict[str, Any]) -> Problem:
    cases = tuple(CheckCase(**{**c, "calls": tuple(c.get("calls", ()))}) for c in data["cases"])
    return Problem(
        **{
            **data,
            "cases": cases,
            "candidate_names": tuple(data.get("candidate_names", ("candidate",))),
            "defects": tuple(data.get("defects", ())),
        }
    )


def sample_from_json(data: dict[str, Any]) -> Sample:
    return Sample(**data)
