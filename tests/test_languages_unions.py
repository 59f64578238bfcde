"""Unions: places that hold values of different types, from inference to each language's driver
and back through the decoder. Fast tests need no compiler (JavaScript runs in node directly);
the slow ones compile C++, Java and Rust."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.completions import assemble_program
from harness.languages.registry import get_language
from harness.languages.runner import execute
from harness.languages.translate import Signature
from harness.languages.types import (
    FLOAT,
    INT,
    DecodeError,
    PyType,
    Untranslatable,
    alternative_for,
    conforms,
    decode,
    family,
    list_of,
    optional,
    parse_type,
    resolve,
)
from harness.languages.unions import type_of_values
from harness.records import CheckCase, Problem

# Mixed values as benchmarks pass them; integers within 2**53 (JavaScript's exact range).
scalars = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(alphabet="abcXY ,é😀", max_size=4),
)
mixed = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(
            st.one_of(st.text(alphabet="abk", max_size=2), st.integers(-9, 9)), inner, max_size=3
        ),
    ),
    max_leaves=10,
)


def same(a: Any, b: Any, t: PyType) -> bool:
    """Decoded ``a`` is original ``b`` of type ``t``: equal, with the same Python types all the
    way down (1, 1.0 and True are not the same), except an int in a float place (unification
    widens int to float where a place also holds floats: ``[0, 0.0]`` is ``list[float]``)."""
    if t.kind == "optional":
        return a is None and b is None or b is not None and same(a, b, t.args[0])
    if t.kind == "union":
        alt = alternative_for(b, t)
        return alt is not None and same(a, b, alt)
    if t.kind == "float" and type(b) is int:
        return type(a) is float and a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        args = t.args if t.kind == "tuple" else t.args * len(a)
        return len(a) == len(b) and all(same(x, y, u) for x, y, u in zip(a, b, args, strict=True))
    if isinstance(a, dict):
        key_t, value_t = t.args
        return len(a) == len(b) and all(
            any(same(j, k, key_t) and same(a[j], v, value_t) for j in a if j == k)
            for k, v in b.items()
        )
    return a == b


def tagged_wire(value: Any, t: PyType) -> Any:
    """What a driver sends for ``value`` of type ``t`` (the protocol of harness.languages.base)."""
    if t.kind == "optional":
        return None if value is None else tagged_wire(value, t.args[0])
    if t.kind == "union":
        alt = alternative_for(value, t)
        assert alt is not None
        return [family(alt), tagged_wire(value, alt)]
    if t.kind in ("list", "vartuple"):
        return [tagged_wire(v, t.args[0]) for v in value]
    if t.kind == "tuple":
        return [tagged_wire(v, a) for v, a in zip(value, t.args, strict=True)]
    if t.kind == "dict":
        return [[tagged_wire(k, t.args[0]), tagged_wire(v, t.args[1])] for k, v in value.items()]
    return value


def place_type(values: list[Any]) -> PyType:
    try:
        t = resolve(type_of_values(values))
    except Untranslatable:
        assume(False)
        raise
    return t


# -- inference -----------------------------------------------------------------------------


def test_places_with_one_type_keep_their_plain_types() -> None:
    assert type_of_values([1, 2.5]) == FLOAT  # int widens to float where nothing else is there
    assert type_of_values([None, 3]) == optional(INT)
    assert str(type_of_values([(1, "a"), (2, "b", "c")])) == "tuple[Union[int, str], ...]"
    assert type_of_values([[1], [2.5]]) == list_of(FLOAT)


def test_different_types_in_one_place_make_an_exact_union() -> None:
    assert str(type_of_values([-1, "0b11"])) == "Union[int, str]"
    # In a Union int and float stay apart: the check may return the argument's own type.
    assert str(type_of_values([2, 2.5, "2,3", None])) == "Optional[Union[int, float, str]]"
    assert str(type_of_values([{"a": 1, 5: 2}])) == "dict[Union[int, str], int]"
    # One alternative per family: two lists join their elements.
    assert str(type_of_values([["a"], [1], 3])) == "Union[int, list[Union[int, str]]]"
    assert str(type_of_values(["abc", []])) == "Union[str, list[unknown]]"


def test_any_in_the_prompt_keeps_every_value_exact() -> None:
    annotation = parse_type("List[Any]")
    assert str(type_of_values([[1, 2.5]], annotation)) == "list[Union[int, float]]"
    mixed_values = [[4, {}, [], 23.2, 9, "adasd"], []]
    assert str(resolve(type_of_values(mixed_values, annotation))) == (
        "list[Union[int, float, str, list[int], dict[int, int]]]"
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(mixed, min_size=1, max_size=5))
def test_a_place_type_fits_every_value_in_any_order(values: list[Any]) -> None:
    t = place_type(values)
    assert all(conforms(v, t) for v in values)
    assert place_type(list(reversed(values))) == t
    assert parse_type(str(t)) == t  # types round-trip through problem metadata


# -- decoding ------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.lists(mixed, min_size=1, max_size=5))
def test_decode_inverts_the_tagged_encoding(values: list[Any]) -> None:
    t = place_type(values)
    for value in values:
        wire = json.loads(json.dumps(tagged_wire(value, t)))
        assert same(decode(wire, t), value, t)


UNION = parse_type("Union[int, str]")
WITH_DICT = parse_type("Union[int, dict[str, int]]")


@pytest.mark.parametrize(
    ("wire", "t", "message"),
    [
        (5, UNION, "expected a tagged"),  # untagged
        ({"int": 5}, UNION, "expected a tagged"),  # not a [tag, value] pair
        (["int", 5, 6], UNION, "expected a tagged"),
        ([None, 5], UNION, "expected a tagged"),
        (["Int", 5], UNION, "tagged 'Int'"),
        (["float", 2.5], UNION, "tagged 'float'"),  # a family the Union does not hold
        (["int", "5"], UNION, "expected an int"),  # the tag lies about the value
        (["str", 5], UNION, "expected a str"),
        (["int", True], UNION, "expected an int"),
        (["bool", 1], parse_type("Union[int, bool]"), "expected a bool"),
        (["list", [["a", 1]]], WITH_DICT, "tagged 'list'"),
        (["dict", [[1, 2]]], WITH_DICT, "expected a str"),
        (["list", [1, "x"]], parse_type("Union[int, list[int]]"), r"\[1\]: expected an int"),
        (["none", None], optional(UNION), "tagged 'none'"),
    ],
)
def test_decode_rejects_lying_or_forged_tags(wire: Any, t: PyType, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode(wire, t, "returned value")


def test_decode_takes_an_int_where_only_a_float_fits() -> None:
    # Python's == takes 2 for 2.0 too; the value stays a float, as the declared type says.
    value = decode(["int", 2], parse_type("Union[float, str]"))
    assert value == 2.0 and type(value) is float
    assert decode(None, optional(UNION)) is None


# -- each language's rendering -------------------------------------------------------------


def test_languages_refuse_unions_they_cannot_tell_apart() -> None:
    js, cpp, java = (get_language(n) for n in ("js", "cpp", "java"))
    list_or_tuple = parse_type("Union[list[int], tuple[int, ...]]")
    for language in (js, cpp, java):  # one runtime type (array, vector, ArrayList) for both
        with pytest.raises(Untranslatable):
            language.type_name(list_or_tuple)
    number = parse_type("Union[int, float]")
    assert js.literal(2.5, number) == "2.5"
    with pytest.raises(Untranslatable, match="cannot tell the float 2.0"):
        js.literal(2.0, number)  # it would reach the candidate as the int 2
    assert get_language("rs").type_name(list_or_tuple) == "Value"  # variants tell them apart


def test_literals_pick_the_alternative_of_the_value() -> None:
    t = parse_type("Union[int, float, str]")
    cpp, java, rust = (get_language(n) for n in ("cpp", "java", "rs"))
    assert (
        cpp.literal(2, t) == "std::variant<long, double, std::string>(std::in_place_index<0>, 2L)"
    )
    assert "std::in_place_index<1>, 2.5" in cpp.literal(2.5, t)
    assert "std::in_place_index<2>" in cpp.literal("2", t)
    assert java.type_name(t) == "Object" and java.literal(-4, t) == "-4L"
    assert rust.literal(2.5, t) == "Value::Float(2.5f64)"
    assert (
        rust.literal(["a", 1], list_of(t))
        == 'vec![Value::Str(String::from("a")), Value::Int(1i64)]'
    )


def test_rust_shares_one_enum_where_the_unions_agree() -> None:
    from harness.languages.rust import enum_names

    a, b = parse_type("Union[int, str]"), parse_type("Optional[Union[int, float, str]]")
    shared = enum_names([a, b])
    assert {name for name, _ in shared.values()} == {"Value"}
    assert str(shared[a][1]) == "Union[int, float, str]"
    apart = enum_names([parse_type("Union[int, list[int]]"), parse_type("Union[str, list[str]]")])
    assert sorted(name for name, _ in apart.values()) == ["Value", "Value2"]
    rust = get_language("rs")
    stub = rust.stub(Signature("f", (("a", a),), b), "Doc.")
    assert stub.startswith("#[derive(Debug, Clone, PartialEq)]\nenum Value {\n    Int(i64),\n")
    assert stub.rstrip().endswith("fn f(a: Value) -> Option<Value> {")
    keyed = rust.stub(Signature("g", (("d", parse_type("dict[Union[int, str], str]")),), INT), "")
    assert "#[derive(Debug, Clone, PartialEq, Eq, Hash)]" in keyed  # a HashMap key
    with pytest.raises(Untranslatable, match="not hashable"):
        rust.type_name(parse_type("dict[Union[int, float], str]"))


def test_drivers_tag_with_the_decoder_families() -> None:
    sig = Signature(
        "f", (("x", INT),), parse_type("list[Union[int, tuple[int, ...], dict[int, int]]]")
    )
    cpp = get_language("cpp").driver(sig, [[(1,)]])
    assert 'names[] = {"int", "tuple", "dict"}' in cpp
    rust = get_language("rs").driver(sig, [[(1,)]])
    for variant, tag in (("Int", "int"), ("Tuple", "tuple"), ("Dict", "dict")):
        assert f'Value::{variant}(x) => {{ o.push_str("[\\"{tag}\\","); ' in rust
    # Without a Union in the result the drivers are what they were (no tagged encoder).
    plain = Signature("f", (("x", UNION),), INT)
    assert "__codeeval_typed" not in get_language("js").driver(plain, [[(1,)]])
    assert "CodeevalTyped" not in get_language("java").driver(plain, [[(1,)]])
    assert "tags<" not in get_language("cpp").driver(plain, [[(1,)]])


@settings(max_examples=8, deadline=None)
@given(st.lists(mixed, min_size=1, max_size=6))
def test_union_values_round_trip_through_javascript(values: list[Any]) -> None:
    """Python value -> JavaScript literal -> the driver's typed encoder in node -> decode."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    from harness.languages import javascript

    t = place_type(values)
    js = get_language("js")
    try:
        js.type_name(t)
        literals = [js.literal(v, t) for v in values]
    except Untranslatable:
        assume(False)  # a float JavaScript cannot tell from an int, or a list-or-tuple Union
        raise
    script = (
        javascript._ENCODER
        + javascript._typed_prelude(t)
        + f"const values = [{', '.join(literals)}];\n"
        + "process.stdout.write(JSON.stringify(values.map((v) => __codeeval_typed(v, __codeeval_returns))));\n"
    )
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    decoded = [decode(w, t) for w in json.loads(done.stdout)]
    assert all(same(d, v, t) for d, v in zip(decoded, values, strict=True)), (decoded, values)


def test_a_whole_rust_solution_restating_the_enum_gets_no_second_one() -> None:
    from suites.registry import load_suite

    problem = {p.task_id: p for p in load_suite("humaneval-rs")}["rs/HumanEval/103"]
    body = "fn rounded_avg(n: i64, m: i64) -> Value {\n    Value::Int(n + m)\n}\n"
    enum = "#[derive(Debug, Clone, PartialEq, Eq, Hash)]\nenum Value {\n    Int(i64),\n    Str(String),\n}\n"
    restated = assemble_program(problem, f"```rust\n{enum}\n{body}```\n").program
    assert restated.count("enum Value") == 1 and restated.index("enum Value") < restated.index(
        "fn "
    )
    bare = assemble_program(problem, f"```rust\n{body}```\n").program
    assert bare.count("enum Value") == 1  # the stub's enum comes with the preamble


def test_js_candidate_that_makes_the_encoder_lie_never_passes() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    from suites.registry import load_suite

    problem = {p.task_id: p for p in load_suite("humaneval-js")}["js/HumanEval/103"]
    liars = [
        # The driver's encoder replaced: tags that do not match their values.
        '  __codeeval_typed = () => ["int", "0b11"];\n  return "0b11";\n}\n',
        '  __codeeval_typed = () => ["float", 3];\n  return 3;\n}\n',
        # Runtime types patched so the encoder picks int for a fraction.
        "  Number.isInteger = () => true;\n  return 2.5;\n}\n",
        # A value that looks like a tagged pair is just an array here.
        '  return ["int", -1];\n}\n',
    ]
    for liar in liars:
        execution = execute(problem, assemble_program(problem, liar).program)
        for case in execution.cases.values():
            assert case.status == "crashed" and "wrong return type" in case.message, (liar, case)


# -- slow: every language compiles and runs Union values ---------------------------------------

UNION_TYPE = (
    "tuple[list[Union[int, float, str, list[int], dict[str, int]]], Optional[Union[int, str]], "
    "dict[Union[int, str], Union[bool, list[str]]], Union[str, tuple[int, str]]]"
)
UNION_VALUES = [
    ([1, 2.5, "a", [1, 2], {"k": 3}, -7, [], {}], 5, {1: True, "x": ["p", "q"]}, (3, "t")),
    ([], None, {}, "s"),
    (["", -0.25, {"": -1}], "none", {"": False, -2: []}, (0, "")),
]
IDENTITY = {
    "js": "  return x;\n}\n",
    "cpp": "  return x;\n}\n",
    "java": "        return x;\n    }\n}\n",
    "rs": "    x\n}\n",
}


def _needs(language: str) -> None:
    from pathlib import Path

    tool = {"js": "node", "cpp": "g++", "java": "javac", "rs": "rustc"}[language]
    cargo = Path("~/.cargo/bin/rustc").expanduser()
    if shutil.which(tool) is None and not (language == "rs" and cargo.exists()):
        pytest.skip(f"{tool} is not installed")


def _identity(language: str) -> Problem:
    t = parse_type(UNION_TYPE)
    cases = tuple(
        CheckCase(f"case_{i}", "", "compare", calls=("candidate(x)",), check="assert v[0] == x")
        for i in range(len(UNION_VALUES))
    )
    metadata = {
        "language": language,
        "signature": {"name": "identity", "params": [["x", UNION_TYPE]], "returns": UNION_TYPE},
        "call_args": {f"case_{i}": [[repr(v)]] for i, v in enumerate(UNION_VALUES)},
    }
    prompt = get_language(language).stub(Signature("identity", (("x", t),), t), "Returns x.")
    return Problem(
        "identity", f"{language}/identity", prompt, "identity", cases, "", metadata=metadata
    )


@pytest.mark.slow
@pytest.mark.parametrize("language", ["js", "cpp", "java", "rs"])
def test_union_values_round_trip_through_every_language(language: str) -> None:
    _needs(language)
    problem = _identity(language)
    execution = execute(problem, assemble_program(problem, IDENTITY[language]).program)
    assert execution.infra_error is None, execution.stderr
    for i, expected in enumerate(UNION_VALUES):
        case = execution.cases[f"case_{i}"]
        assert case.status == "ok", (case.message, execution.stderr[-2000:])
        assert same(case.values[0], expected, parse_type(UNION_TYPE)), (case.values[0], expected)


LIARS_103 = {
    # Its own tag table for the variant the driver tags: a second definition, no program.
    "cpp": (
        "namespace codeeval_driver { template <class V> struct tags; template <> struct "
        'tags<std::variant<long, std::string>> { static constexpr const char* names[] = {"str", '
        '"int"}; }; }\nstd::variant<long, std::string> rounded_avg(long n, long m) {\n'
        "  return 3L;\n}\n"
    ),
    # Its own encoder for the enum: conflicting implementations, no program.
    "rs": (
        "fn rounded_avg(n: i64, m: i64) -> Value {\n    Value::Int(3)\n}\n"
        "impl CodeevalEnc for Value { fn codeeval_enc(&self, o: &mut String) "
        '{ o.push_str("[\\"str\\",\\"0b11\\"]"); } }\n'
    ),
    # Its own typed encoder class: a duplicate class, no program.
    "java": (
        "class Problem {\n    public static Object rounded_avg(long n, long m) { return 3L; }\n}\n"
        'final class CodeevalTyped { static void enc(StringBuilder o, Object v, Object t) { o.append("[\\"str\\",\\"0b11\\"]"); } }\n'
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("language", sorted(LIARS_103))
def test_a_candidate_cannot_replace_the_tagging(language: str) -> None:
    from suites.registry import load_suite

    _needs(language)
    problems = {p.task_id: p for p in load_suite(f"humaneval-{language}")}
    problem = problems[f"{language}/HumanEval/103"]
    completion = f"```{get_language(language).fence}\n{LIARS_103[language]}```\n"
    execution = execute(problem, assemble_program(problem, completion).program)
    assert {c.status for c in execution.cases.values()} == {"crashed"}
    assert "compile error" in execution.cases["case_0"].message
