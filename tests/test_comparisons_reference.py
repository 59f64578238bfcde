"""Each suite compares as its own reference evaluator does, on the edge cases.

* ``multiple-js``: node's own ``assert.deepEqual`` (legacy, loose ``==`` on primitives) is run
  on the same values as ``js_deep_equal``: Unicode digits and white space in strings, control
  characters, signed zero, numbers past 2**53 and past the largest double, NaN, Infinity.
  ``Number("١٢٣")`` is NaN in JavaScript, and Python's ``float`` read it as 123. And on what
  the driver's encoder sends of values of every kind (Map, Set, Date, RegExp, boxed
  primitives, Error, BigInt, arrays with holes or extra keys, class instances, objects with
  another ``Symbol.toStringTag``): node compares object tags, so ``new Map()`` is not ``{}``,
  and BigInt loosely, so ``1n`` is ``1``.
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

from harness.languages.multiple_e_templates import JS_ENCODER
from harness.stdio.checkers import compare, presentation_matches, tokens
from harness.stdio.problem import Checker
from suites.js_deep_equal import js_deep_equal
from suites.multiple_e_literals import LiteralError, parse_literal

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


# What a candidate may return, as JavaScript source, against what the test expects (mostly
# MultiPL-E's literals). Node gives its verdict and the driver's encoder sends both values.
EXOTIC = [
    ("new Map()", "{}"),
    ('new Map([["zz", 99]])', "{}"),
    ('new Map([["zz", 99]])', '{"zz": 99}'),
    ("new Map()", "[]"),
    ("new Set()", "{}"),
    ("new Set([1])", "[1]"),
    ("new Map()", "new Map()"),
    ('new Map([[1, "a"]])', 'new Map([["1", "a"]])'),
    ('new Map([[1, "1"]])', "new Map([[1, 1]])"),
    ("new Map([[[1], 1]])", 'new Map([[["1"], 1]])'),
    ("new Map([[null, 1]])", "new Map([[undefined, 1]])"),
    ("new Set()", "new Map()"),
    ("new Set([1, 2])", "new Set([2, 1])"),
    ("new Set([1])", 'new Set(["1"])'),
    ("new Set([[1]])", 'new Set([["1"]])'),
    ("new Set([1])", "new Set([2])"),
    ("new Set([NaN])", "new Set([NaN])"),
    ("new Set([null])", "new Set([undefined])"),
    ("new Date(0)", "{}"),
    ("new Date(0)", "0"),
    ("new Date(0)", "new Date(0)"),
    ("new Date(0)", "new Date(1)"),
    ("new Date(NaN)", "new Date(NaN)"),
    ("Object.assign(new Date(0), {[Symbol.toStringTag]: 'Object'})", "{}"),
    ("{[Symbol.toStringTag]: 'Date'}", "{}"),
    ("{[Symbol.toStringTag]: 'Date'}", "new Date(0)"),
    ("/a/", "{}"),
    ("/a/", '"/a/"'),
    ("/a/g", "/a/g"),
    ("/a/g", "/a/i"),
    ("Object.assign(/a/g, {lastIndex: 1})", "/a/g"),
    ("new Boolean(false)", "{}"),
    ("new Boolean(false)", "false"),
    ("new Number(1)", "1"),
    ("new Number(1)", "{}"),
    ("new Number(1)", "new Number(1)"),
    ("new Number(NaN)", "new Number(NaN)"),
    ("new Number(0)", "new Number(-0)"),
    ("new Number(1)", 'new String("1")'),
    ('new String("a")', '"a"'),
    ('new String("a")', "{}"),
    ('new String("a")', '{"0": "a"}'),
    ('new String("ab")', '["a", "b"]'),
    ("Object(1n)", "1n"),
    ("Object(1n)", "Object(1n)"),
    ('new Error("x")', "{}"),
    ('new Error("x")', 'new Error("x")'),
    ('new Error("x")', 'new TypeError("x")'),
    ('new Error("x")', 'new Error("y")'),
    ('Object.assign(new Error("x"), {code: 1})', 'new Error("x")'),
    ("1n", "1"),
    ("1n", "1.5"),
    ("1n", "NaN"),
    ("1n", '"1"'),
    ("1n", '" 1 "'),
    ("1n", '"1.0"'),
    ("1n", '"+1"'),
    ("16n", '"0x10"'),
    ("-16n", '"-0x10"'),
    ("-1n", '"-1"'),
    ("0n", '""'),
    ("1n", "true"),
    ("0n", "null"),
    ("1n", "1n"),
    ("1n", "2n"),
    ("2n ** 60n", "1152921504606846976"),
    ("2n ** 53n + 1n", "9007199254740992"),
    ("10n ** 400n", "Infinity"),
    ("[1n]", "[1]"),
    ('{"a": 1n}', '{"a": "1"}'),
    ("Object.assign([1, 2], {x: 1})", "[1, 2]"),
    ("Object.assign([1], {[Symbol('s')]: 1})", "[1]"),
    ("Object.defineProperty([1], 'x', {value: 1})", "[1]"),
    ("Object.assign([1], {[Symbol.toStringTag]: 'Object'})", "[1]"),
    ("Object.assign([1], {[Symbol.toStringTag]: 'Object'})", '{"0": 1}'),
    ("[, 1]", "[undefined, 1]"),
    ("[undefined, 1]", "[, 1]"),
    ("[, 1]", "[, 1]"),
    ("[, 1]", "[null, 1]"),
    ("[1, , 3]", "[1, , 3]"),
    ("Object.assign(Object.create(null), {a: 1})", '{"a": 1}'),
    ("new (class K { constructor() { this.a = 1; } })()", '{"a": 1}'),
    ('{"a": 1}', "new (class K { constructor() { this.a = 1; } })()"),
    ("(function () { return arguments; })()", "{}"),
    ("(function () { return arguments; })(1)", "[1]"),
    ("function () {}", "{}"),
    ("Symbol('a')", "{}"),
    ("Promise.resolve(1)", "{}"),
    ("new WeakMap()", "{}"),
    ("new Uint8Array([1])", "[1]"),
    ("new Uint8Array([1])", '{"0": 1}'),
    ("new ArrayBuffer(1)", "{}"),
    ("{}", "new Map()"),
    ("{[Symbol.toStringTag]: 'Foo'}", "{}"),
    ("{[Symbol.toStringTag]: 'Foo', a: 1}", "{[Symbol.toStringTag]: 'Foo', a: 1}"),
    ("[new Map(), 1]", "[{}, 1]"),
    ('{"a": new Set()}', '{"a": []}'),
]

ENCODED_SCRIPT = """
const assert = require("assert");
%s
const pairs = [%s];
console.log(JSON.stringify(pairs.map(([a, b]) => {
  let x, y, equal = true;
  try { x = a(); y = b(); } catch (e) { return null; }  // e.g. new Error(Object.create(null))
  try { assert.deepEqual(x, y); } catch (e) { equal = false; }
  return [equal, __codeeval_enc(x, 0), __codeeval_enc(y, 0)];
})));
"""


def node_on_sources(pairs: list[tuple[str, str]]) -> list[tuple[bool, list, list] | None]:
    """Node's verdict on each pair of JavaScript expressions, and both as the driver sends them
    (None where an expression throws)."""
    body = ",\n".join(f"[() => ({a}), () => ({b})]" for a, b in pairs)
    done = subprocess.run(
        ["node", "-e", ENCODED_SCRIPT % (JS_ENCODER, body)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [tuple(row) if row else None for row in json.loads(done.stdout)]


def literal(text: str) -> list | None:
    """MultiPL-E's literal ``text`` as the suite reads it, or None where it is no literal."""
    try:
        return parse_literal(text, "js")
    except LiteralError:
        return None


def disagreements(pairs: list[tuple[str, str]]) -> list[tuple[str, str, bool, bool]]:
    """The pairs where ``js_deep_equal`` on what the driver sends is not node's verdict, for
    the expected value as sent and, where it is a literal, as the suite reads it."""
    differ = []
    for (a, b), row in zip(pairs, node_on_sources(pairs), strict=True):
        if row is None:
            continue
        theirs, sent_a, sent_b = row
        read = literal(b)
        for expected in [sent_b] + ([read] if read is not None else []):
            if js_deep_equal(sent_a, expected) != theirs:
                differ.append((a, b, not theirs, theirs))
    return differ


@needs_node
def test_js_deep_equal_is_nodes_on_values_of_every_kind() -> None:
    assert disagreements(EXOTIC) == []
    # the red team's HumanEval_111 answers: a Map or a Date for the expected {} fail
    assert not js_deep_equal(node_on_sources([("new Date(0)", "{}")])[0][1], literal("{}"))


def js_kinds(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """JavaScript expressions of every kind the encoder tells apart, around ``inner`` values."""
    items = st.lists(inner, max_size=3).map(", ".join)
    return st.one_of(
        items.map(lambda xs: f"[{xs}]"),
        st.lists(st.tuples(st.sampled_from("ab0"), inner), max_size=2).map(
            lambda kv: "{" + ", ".join(f'"{k}": {v}' for k, v in kv) + "}"
        ),
        st.lists(st.tuples(inner, inner), max_size=2).map(
            lambda kv: "new Map([" + ", ".join(f"[{k}, {v}]" for k, v in kv) + "])"
        ),
        items.map(lambda xs: f"new Set([{xs}])"),
        st.tuples(items, st.sampled_from(["x", "0", "length2"]), inner).map(
            lambda t: f"Object.assign([{t[0]}], {{{t[1]!r}: {t[2]}}})"
        ),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]}, , {t[1]}]"),
        inner.map(lambda x: f"Object.assign(Object.create(null), {{a: {x}}})"),
        inner.map(lambda x: f"new Number({x})"),
        inner.map(lambda x: f"new String({x})"),
        inner.map(lambda x: f"new Boolean({x})"),
        inner.map(lambda x: f"new Error({x})"),
        st.sampled_from(
            ["new Date(0)", "new Date(1)", "/a/g", "/a/", "Object(2n)", "new WeakSet()"]
        ),
    )


JS_PRIMITIVES = PRIMITIVES.map(js_source) | st.integers(-(2**64), 2**64).map(lambda n: f"{n}n")
JS_EXPRESSIONS = st.recursive(JS_PRIMITIVES, js_kinds, max_leaves=4)


@needs_node
@settings(max_examples=10, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(JS_EXPRESSIONS, JS_EXPRESSIONS | VALUES.map(js_source)), min_size=60, max_size=60
    )
)
def test_js_deep_equal_is_nodes_on_generated_values_of_every_kind(
    pairs: list[tuple[str, str]],
) -> None:
    assert disagreements(pairs) == []


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
