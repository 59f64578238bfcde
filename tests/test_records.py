"""The data model's serialization: what a suite folder stores, and the fingerprint that keys
every cache (calibration, analyzers, generated inputs)."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.records import CheckCase, Problem, Sample, problem_from_json, replaced, to_json

text = st.text(max_size=12)
cases = st.builds(
    CheckCase,
    case_id=text,
    source=text,
    mode=st.sampled_from(["compare", "sandbox"]),
    prelude=text,
    calls=st.tuples(text, text),
    check=text,
    statement=text,
    timeout_s=st.none() | st.floats(0.1, 9.0),
    weaker=st.booleans(),
    oracle=text,
    expected=text,
)
problems = st.builds(
    Problem,
    suite=text,
    task_id=text,
    prompt=text,
    entry_point=text,
    cases=st.lists(cases, max_size=4).map(tuple),
    reference=text,
    metadata=st.dictionaries(text, st.integers() | text, max_size=3),
)
CASE_FIELDS = [f.name for f in dataclasses.fields(CheckCase)]


@settings(max_examples=60, deadline=None)
@given(problems)
def test_a_problem_round_trips_and_serializing_it_changes_nothing(problem: Problem) -> None:
    before = dataclasses.astuple(problem)
    data = to_json(problem)
    assert problem_from_json(json.loads(json.dumps(data))) == problem
    assert dataclasses.astuple(problem) == before
    assert data is not problem.__dict__ and type(problem.cases) is tuple


@given(
    st.builds(
        Sample,
        task_id=text,
        completion=text,
        sample_id=text,
        agent=st.none() | text,
        raw=st.none() | text,
        source_line=st.none() | st.integers(1, 10**6),
    )
)
def test_a_sample_serializes_as_asdict_gives_it_and_the_copy_is_its_own(sample: Sample) -> None:
    data = to_json(sample)
    assert data == dataclasses.asdict(sample) and list(data) == list(dataclasses.asdict(sample))
    data["task_id"] = data["task_id"] + "!"  # compile_suite adds keys to it: never the sample's
    assert sample.task_id != data["task_id"]


def test_something_else_stored_on_a_case_is_not_serialized() -> None:
    case = CheckCase("c", "", "compare", calls=("candidate()",))
    object.__setattr__(case, "_memo", 1)  # what a cache on the instance would do
    problem = Problem("s", "t", "", "f", (case,), "")
    assert "_memo" not in to_json(problem)["cases"][0]
    assert problem_from_json(to_json(problem)) == problem


@settings(max_examples=60, deadline=None)
@given(problems, st.data())
def test_the_fingerprint_follows_every_field_of_every_case(problem: Problem, data) -> None:
    same = problem_from_json(json.loads(json.dumps(to_json(problem))))
    assert same.fingerprint() == problem.fingerprint()
    reordered = dataclasses.replace(problem, metadata=dict(reversed(problem.metadata.items())))
    assert reordered.fingerprint() == problem.fingerprint()
    if problem.cases:
        index = data.draw(st.integers(0, len(problem.cases) - 1))
        name = data.draw(st.sampled_from(CASE_FIELDS))
        old = getattr(problem.cases[index], name)
        new = {
            bool: lambda: not old,
            tuple: lambda: (*old, "x"),
            type(None): lambda: 1.5,
            float: lambda: old + 1.0,
        }.get(type(old), lambda: f"{old}x")()
        changed = list(problem.cases)
        changed[index] = replaced(changed[index], **{name: new})
        assert dataclasses.replace(problem, cases=tuple(changed)).fingerprint() != (
            problem.fingerprint()
        )
    other = dataclasses.replace(problem, metadata={**problem.metadata, "\0new": 1})
    assert other.fingerprint() != problem.fingerprint()


def test_replaced_names_the_unknown_field() -> None:
    case = CheckCase("c", "", "compare")
    try:
        replaced(case, timeout_s=1.0, nonsense=2)
    except TypeError as exc:
        assert "nonsense" in str(exc)
    else:
        raise AssertionError("an unknown field was accepted")
    assert replaced(case, timeout_s=2.0).timeout_s == 2.0 and case.timeout_s is None
