"""Each suite compares as its own reference evaluator does, on the edge cases.

* ``multiple-js``: node's own ``assert.deepEqual`` (legacy, loose ``==`` on primitives) is run
  on the same values as ``js_deep_equal``: Unicode digits and white space in strings, control
  characters, signed zero, numbers past 2**53 and past the largest double, NaN, Infinity.
  ``Number("١٢٣")`` is NaN in JavaScript, and Python's ``float`` read it as 123.
* stdio's checkers split tokens where judges (testlib) do: space, tab, CR, LF. Python's
  ``str.split`` also split on a no-break space, ``\\x0b``, ``\\x1c`` or ``\\u2003``, and ``float``
  read ``"١٢٣"``, ``"1_0"`` and ``"nan"`` as numbers.
* A check that could only run in the candidate's process (MultiPL-E's C++ unions) never makes
  a sample pass: the problem is a data defect.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.stdio.checkers import compare, presentation_matches, tokens
from harness.stdio.problem import Checker
from suites.multiple_e_literals import js_deep_equal

# -- JavaScript -------------------------------------------------------------------------------
DIGITS = "0123456789١٢٣٤٥٦٧٨٩٠０１２３߀৪"
SPACES = " \t\n\r\x0b\x0c\u00a0\ufeff\u1680\u2003\u2028\u2029\u202f\u3000\x1c\x1d\x85\u200b"
ALPHABET = DIGITS + SPACES + ".eE+-xXob_aInfity,\x00\x07"
NUMBERS = (
    st.integers(-(2**60), 2**60)
    | st.sampled_from([0, 2**53 + 1, 2**1100, -(2**1100), 10**400])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, -0.0, 1e308, 5e-324])
)
PRIMITIVES = (
    NUMBERS.map(lambda n: ["n", n])
    | st.text(ALPHABET, max_size=8).map(lambda s: ["s", s])
    | st.booleans().map(lambda b: ["b", b])
    | st.sampled_from([["null"], ["u"]])
)
VALUES = st.recursive(
    PRIMITIVES, lambda inner: st.lists(inner, max_size=3).map(lambda xs: ["a", xs]), max_leaves=5
)


def js_source(tagged: list) -> str:
    """The JavaScript literal of a tagged value (as the driver would have sent it)."""
    kind = tagged[0]
    if kind == "n":
        value = tagged[1]
        if isinstance(value, float) and math.isnan(value):
            return "NaN"
        if isinstance(value, float) and math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if isinstance(value, float) and value == 0 and math.copysign(1, value) < 0:
            return "-0"
        return f"({value!r})"
    if kind == "s":
        return json.dumps(tagged[1])
    if kind == "b":
        return "true" if tagged[1] else "false"
    if kind == "null":
        return "null"
    if kind == "u":
        return "undefined"
    return "[" + ", ".join(js_source(v) for v in tagged[1]) + "]"


NODE_SCRIPT = """
const assert = require("assert");
const pairs = [%s];
console.log(JSON.stringify(pairs.map(([a, b]) => {
  try { assert.deepEqual(a, b); return true; } catch (e) { return false; }
})));
"""


def nodes_verdicts(pairs: list[tuple[list, list]]) -> list[bool]:
    body = ",\n".join(f"[{js_source(a)}, {js_source(b)}]" for a, b in pairs)
    done = subprocess.run(
        ["node", "-e", NODE_SCRIPT % body], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
EDGES = [
    (["s", "١٢٣"], ["n", 123]),
    (["s", "\u2003123\u3000"], ["n", 123]),
    (["s", "\x1c123"], ["n", 123]),
    (["s", "123\x00"], ["n", 123]),
    (["s", "1_000"], ["n", 1000]),
    (["s", "0x1F"], ["n", 31]),
    (["s", "-0x1F"], ["n", -31]),
    (["s", ""], ["n", 0]),
    (["s", " \n"], ["n", 0]),
    (["s", "Infinity"], ["n", math.inf]),
    (["s", "infinity"], ["n", math.inf]),
    (["s", "1e400"], ["n", math.inf]),
    (["n", -0.0], ["n", 0]),
    (["n", 2**53 + 1], ["n", 2**53]),
    (["n", 2**1100], ["n", math.inf]),
    (["n", math.nan], ["n", math.nan]),
    (["s", "NaN"], ["n", math.nan]),
    (["b", True], ["s", "1"]),
    (["null"], ["u"]),
    (["null"], ["n", 0]),
    (["a", [["s", "٣"]]], ["a", [["n", 3]]]),
]


@needs_node
def test_js_deep_equal_is_nodes_on_the_edge_cases() -> None:
    ours = [js_deep_equal(a, b) for a, b in EDGES]
    assert ours == nodes_verdicts(EDGES), [
        (a, b, o) for (a, b), o, n in zip(EDGES, ours, nodes_verdicts(EDGES), strict=True) if o != n
    ]


@needs_node
@settings(max_examples=8, deadline=None)
@given(pairs=st.lists(st.tuples(VALUES, VALUES), min_size=100, max_size=100))
def test_js_deep_equal_is_nodes_on_generated_values(pairs: list[tuple[list, list]]) -> None:
    ours = [js_deep_equal(a, b) for a, b in pairs]
    theirs = nodes_verdicts(pairs)
    differ = [(a, b, o) for (a, b), o, t in zip(pairs, ours, theirs, strict=True) if o != t]
    assert differ == []


# -- stdio ------------------------------------------------------------------------------------
TOKENS = Checker("tokens")


@pytest.mark.parametrize("space", ["\u00a0", "\x0b", "\x0c", "\x1c", "\x85", "\u2003", "\u3000"])
def test_only_a_judges_blanks_separate_tokens(space: str) -> None:
    assert not compare(f"1{space}2", "1 2", TOKENS).passed
    assert tokens(f"1{space}2") == [f"1{space}2"]
    assert compare("1 \t2\r\n", "1\n2", TOKENS).passed


@pytest.mark.parametrize("text", ["١٢٣", "1_23", "nan", "NaN", "inf", "0x7b", "١٢٣.0"])
def test_the_float_checker_reads_numbers_as_judges_do(text: str) -> None:
    assert not compare(text, "123", Checker("float")).passed


@settings(max_examples=300)
@given(st.text(ALPHABET + "abc", max_size=20), st.text(ALPHABET + "abc", max_size=20))
def test_tokens_are_runs_between_a_judges_blanks(a: str, b: str) -> None:
    ascii_blank = str.maketrans({c: " " for c in " \t\r\n"})
    expected = [t for t in a.translate(ascii_blank).split(" ") if t]
    assert tokens(a) == expected
    if tokens(a) == tokens(b):
        assert compare(a, b, TOKENS).passed
        assert presentation_matches(a, b) == (a != b)
    else:
        assert not compare(a, b, TOKENS).passed


# -- checks that only the candidate's process can run ----------------------------------------
@pytest.mark.slow
def test_a_redefined_assert_never_passes_a_cpp_union_problem(tmp_path) -> None:
    from harness.evaluate import evaluate
    from harness.records import Sample
    from suites import load_suite

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    try:
        problems = [p for p in load_suite("multiple-cpp") if p.task_id.endswith("_103_rounded_avg")]
    except Exception as exc:  # noqa: BLE001 - no MultiPL-E mirror
        pytest.skip(f"multiple-cpp is not available here: {exc}")
    forged = "    return Union_std_string_long(0L);\n}\n#undef assert\n#define assert(x) (void)0\n"
    (row,) = evaluate(problems, [Sample(problems[0].task_id, forged, "forged")], out_dir=tmp_path)
    assert row["passed"] is False
    assert row["status"] == "error" and row["error_kind"] == "data"
