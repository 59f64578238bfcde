"""The Python type model, the decoder and the translation of HumanEval (no compilers needed)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.languages.types import (
    FLOAT,
    INT,
    NONE,
    STR,
    DecodeError,
    PyType,
    Untranslatable,
    conforms,
    decode,
    infer,
    list_of,
    optional,
    parse_type,
    unify,
)

# Values of one plain type each (what benchmarks pass and return).
scalars = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=8),
)


def _typed(base: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(base, max_size=4),
        st.tuples(base, base),
        st.dictionaries(st.text(max_size=4), base, max_size=3),
    )


values = st.recursive(scalars, lambda inner: _typed(inner), max_leaves=12)


def as_driver_json(value: Any) -> Any:
    """What a driver sends for ``value``: lists for lists and tuples, pairs for dicts."""
    if isinstance(value, (list, tuple)):
        return [as_driver_json(v) for v in value]
    if isinstance(value, dict):
        return [[as_driver_json(k), as_driver_json(v)] for k, v in value.items()]
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


@settings(max_examples=100, deadline=None)
@given(values)
def test_decode_inverts_the_driver_encoding(value: Any) -> None:
    try:
        t = infer(value)
    except Untranslatable:
        return  # mixed element types: not a translatable value
    if not t.complete:
        return  # an empty list alone: its element type is open
    assert conforms(value, t)
    wire = json.loads(json.dumps(as_driver_json(value)))
    decoded = decode(wire, t)
    assert decoded == value and type(decoded) is type(value)
    assert parse_type(str(t)) == t  # types round-trip through problem metadata


@settings(max_examples=60, deadline=None)
@given(values, values)
def test_unify_gives_a_type_both_values_fit(a: Any, b: Any) -> None:
    try:
        t = unify(infer(a), infer(b))
    except Untranslatable:
        return
    if t.complete:
        assert conforms(a, t) and conforms(b, t)


@pytest.mark.parametrize(
    ("wire", "t", "message"),
    [
        ("3", INT, "expected an int"),
        (True, INT, "expected an int"),
        (2.5, INT, "expected an int"),
        (1, STR, "expected a str"),
        ([1, "x"], list_of(INT), r"returned value\[1\]: expected an int"),
        ([1, 2, 3], PyType("tuple", (INT, INT)), "expected 2 items"),
        ({"a": 1}, PyType("dict", (STR, INT)), "a JSON list"),
        ([["a"]], PyType("dict", (STR, INT)), "not a \\[key, value\\] pair"),
    ],
)
def test_decode_rejects_values_of_the_wrong_shape(wire: Any, t: PyType, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode(wire, t, "returned value")


def test_decode_accepts_what_each_language_sends_for_numbers() -> None:
    assert decode(3.0, INT) == 3 and type(decode(3.0, INT)) is int  # JavaScript's numbers
    assert decode(3, FLOAT) == 3.0 and type(decode(3, FLOAT)) is float
    assert math.isnan(decode("NaN", FLOAT))
    assert decode(None, optional(INT)) is None
    assert decode([["a", None]], PyType("dict", (STR, optional(INT)))) == {"a": None}


def test_unify_widens_and_makes_optional() -> None:
    assert unify(INT, FLOAT) == FLOAT
    assert unify(PyType("none"), STR) == optional(STR)
    two, three = PyType("tuple", (STR, STR)), PyType("tuple", (STR, STR, STR))
    assert unify(two, three) == PyType("vartuple", (STR,))
    with pytest.raises(Untranslatable, match="str and int"):
        unify(STR, INT)


def test_humaneval_translates_with_reasons_for_the_rest() -> None:
    from suites.registry import load_suite

    problems = load_suite("humaneval-rs")
    translated = [p for p in problems if not p.defects]
    assert len(problems) == 164 and len(translated) >= 161
    by_id = {p.task_id: p for p in problems}
    assert (
        by_id["rs/HumanEval/0"]
        .prompt.rstrip()
        .endswith("fn has_close_elements(numbers: Vec<f64>, threshold: f64) -> bool {")
    )
    # Only the problems whose checks all run inside Python's sandbox stay untranslated.
    untranslated = {p.task_id: p.defects[-1] for p in problems if p.defects}
    assert set(untranslated) == {"rs/HumanEval/32", "rs/HumanEval/38", "rs/HumanEval/50"}
    assert all("no check is a plain call" in reason for reason in untranslated.values())
    # Values of different types in one place: a Union (List[Any] from the prompt, the rest
    # from the values the checks pass and the reference returns).
    assert by_id["rs/HumanEval/22"].metadata["signature"]["params"] == [
        ["values", "list[Union[int, float, str, list[int], dict[int, int]]]"]
    ]
    assert by_id["rs/HumanEval/137"].metadata["signature"]["returns"] == (
        "Optional[Union[int, float, str]]"
    )
    assert by_id["rs/HumanEval/136"].metadata["signature"]["returns"] == (
        "tuple[Optional[int], Optional[int]]"
    )
    assert by_id["rs/HumanEval/148"].metadata["signature"]["returns"] == "tuple[str, ...]"
    # Non-literal arguments are evaluated as the check writes them: candidate(3 * 19).
    assert by_id["rs/HumanEval/25"].metadata["call_args"]["case_3"] == [["57"]]
    # A check that ran inside Python's sandbox (random inputs) is dropped and listed.
    assert by_id["rs/HumanEval/53"].metadata["dropped_cases"] == ["case_5"]


def test_a_dict_whose_keys_share_one_hash_is_refused_fast() -> None:
    """A forged frame can carry any JSON: 3000 int keys equal modulo 2**61 - 1 would make the
    dict quadratic to build in the trusted process; it is a decode error at once instead."""
    import time

    from harness.languages.types import DecodeError, decode, parse_type

    keys = [k * (2**61 - 1) for k in range(1, 3000)]
    start = time.process_time()
    with pytest.raises(DecodeError, match="share one hash"):
        decode([[k, 1] for k in keys], parse_type("dict[int, int]"))
    assert time.process_time() - start < 1.0
    honest = decode([[k, k] for k in range(3000)], parse_type("dict[int, int]"))
    assert honest == {k: k for k in range(3000)}


def test_an_int_widens_to_float_only_where_a_float_holds_it_exactly() -> None:
    """Hypothesis found ``[2**53 + 1, 0.0]``: typed ``list[float]``, its int came back as
    another number. Past 2**53 an int beside floats has no widened type; its place gets the
    exact Union instead."""
    from harness.languages.unions import type_of_values

    assert infer([2**53, 0.5]) == list_of(FLOAT) and conforms(2**53, FLOAT)
    assert infer([2**60, 0.5]) == list_of(FLOAT)  # a power of two: exact
    for value in ([2**53 + 1, 0.0], {"k": 2**63 - 1, "j": 1.5}, [[1.5], [2**53 + 1]]):
        with pytest.raises(Untranslatable, match="no float holds exactly"):
            infer(value)
    assert not conforms(2**53 + 1, FLOAT) and not conforms(10**400, FLOAT)
    assert str(type_of_values([[2**53 + 1, 0.0]])) == "list[Union[int, float]]"
    assert infer([None, None]) == list_of(NONE) and infer([[], [1]]) == list_of(list_of(INT))
