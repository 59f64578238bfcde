"""multiple-js, multiple-cpp, multiple-java, multiple-rs: MultiPL-E's data, read exactly.

Prompts and stop tokens are MultiPL-E's byte for byte; every assertion of its tests is one
case whose call is MultiPL-E's argument text and whose expected value is its literal read
back into Python; the literal reader and JavaScript's loose deepEqual are checked on their
own; the trainers refuse the suites (evaluation-only licence). One real end-to-end run per
language is in tests/test_multiple_e_agreement.py (slow).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.languages import NAMES, get_language
from suites import load_suite
from suites.js_deep_equal import js_deep_equal
from suites.multiple_e import LANGUAGES, main_body, split_asserts, statements
from suites.multiple_e_literals import LiteralError, f32, parse_literal
from trainers.common.config import ConfigError
from trainers.common.problems import train_problems

DATA = Path(os.environ.get("CODEEVAL_DATA_DIR", "/nonexistent")) / "multipl_e"
COUNTS = {"js": 161, "cpp": 161, "java": 158, "rs": 156}

needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason="MultiPL-E's files are in $CODEEVAL_DATA_DIR/multipl_e"
)


def records(language: str) -> list[dict]:
    path = DATA / f"humaneval-{language}-reworded.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@needs_data
@pytest.mark.parametrize("language", LANGUAGES)
def test_prompts_stop_tokens_and_cases_are_multiple_es(language: str) -> None:
    problems = load_suite(f"multiple-{language}")
    data = records(language)
    assert len(problems) == len(data) == COUNTS[language]
    dialect = get_language(f"multiple-{language}")
    for problem, record in zip(problems, data, strict=True):
        assert problem.task_id == f"multiple-{language}/{record['name']}"
        assert problem.prompt == record["prompt"]  # byte for byte
        assert problem.metadata["stop_tokens"] == record["stop_tokens"]
        assert list(dialect.completion_stops) == record["stop_tokens"]
        assert problem.metadata["multiple_e_tests"] == record["tests"]
        asserts = [s for s in statements(main_body(record["tests"])) if "assert" in s]
        if "multiple_e_fallback" in problem.metadata:
            assert [c.case_id for c in problem.cases] == ["program"]
            continue
        assert len(problem.cases) == len(asserts)
        for case, text in zip(problem.cases, asserts, strict=True):
            assert case.source == text
            args = case.calls[0].removeprefix("candidate(")[:-1]
            assert args in text  # MultiPL-E's own argument text, verbatim


@needs_data
def test_fallbacks_and_defects_are_the_known_few() -> None:
    """C++'s generated unions run MultiPL-E's program and, being judged only in the candidate's
    process, are data defects; JS/51's test does not parse in node."""
    fallbacks, defects = {}, {}
    for language in LANGUAGES:
        for problem in load_suite(f"multiple-{language}"):
            if "multiple_e_fallback" in problem.metadata:
                fallbacks[problem.task_id] = problem.metadata["multiple_e_fallback"]
            if problem.defects:
                defects[problem.task_id] = problem.defects[0]
    assert sorted(fallbacks) == [
        "multiple-cpp/HumanEval_103_rounded_avg",
        "multiple-cpp/HumanEval_125_split_words",
        "multiple-cpp/HumanEval_137_compare_one",
    ]
    assert all("C++ union" in why for why in fallbacks.values())
    assert sorted(defects) == sorted([*fallbacks, "multiple-js/HumanEval_51_remove_vowels"])
    assert all("candidate's own process" in defects[task] for task in fallbacks)


def test_the_project_languages_keep_their_names() -> None:
    """MultiPL-E's dialects are registered beside the four, never instead of them."""
    assert NAMES == ("js", "cpp", "java", "rs")
    for language in LANGUAGES:
        assert get_language(f"multiple-{language}").title == get_language(language).title


@pytest.mark.parametrize(
    ("language", "text", "value"),
    [
        ("cpp", "(std::vector<float>({(float)1.0f, (float)2.2f}))", [1.0, f32(2.2)]),
        ("cpp", "std::make_tuple(std::optional<long>(std::nullopt), 1)", (None, 1)),
        ("cpp", '(std::map<std::string,long>({{"a", 2}, {"b", 2}}))', {"a": 2, "b": 2}),
        ("cpp", "(std::vector<std::string>())", []),
        ("cpp", "(-7)", -7),
        ("java", '(new HashMap<String,Long>(Map.of("a", 2l)))', {"a": 2}),
        (
            "java",
            "(new ArrayList<ArrayList<Long>>(Arrays.asList((ArrayList<Long>)new ArrayList<Long>(Arrays.asList((long)1l)))))",
            [[1]],
        ),
        ("java", "Pair.with(-2l, 1l)", (-2, 1)),
        ("rs", 'HashMap::from([(String::from("a"), 2)])', {"a": 2}),
        ("rs", "Vec::<isize>::new()", []),
        ("rs", "(Some(-2), None)", (-2, None)),
        ("rs", 'vec![String::from("a\\nb")]', ["a\nb"]),
        ("js", '[1, "x", true, null]', ["a", [["n", 1], ["s", "x"], ["b", True], ["null"]]]),
        ("js", '{"a": 2}', ["o", [["a", ["n", 2]]]]),
    ],
)
def test_literals_read_back_as_python(language: str, text: str, value: object) -> None:
    assert parse_literal(text, language) == value


def test_java_optional_keeps_multiple_es_nesting() -> None:
    """``Optional.of(Optional.empty())`` equals no honest value in Java: nor here."""
    from harness.languages.multiple_e import Opt

    got = parse_literal("Pair.with(Optional.of(Optional.empty()), Optional.of(1l))", "java")
    assert got == (Opt(True, Opt(False)), Opt(True, 1))
    assert got != (Opt(False), Opt(True, 1))


@pytest.mark.parametrize("text", ["std::any(1)", "Union_long(1)", "{1, 2}", "x + 1", '"a'])
def test_unknown_forms_are_refused(text: str) -> None:
    with pytest.raises(LiteralError):
        parse_literal(text, "cpp")


def rust_string(text: str) -> str:
    """A Rust string literal, escaped as MultiPL-E's translator escapes (``\\u{..}``)."""
    simple = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    body = "".join(
        simple.get(ch) or (f"\\u{{{ord(ch):x}}}" if ord(ch) < 0x20 else ch) for ch in text
    )
    return f'String::from("{body}")'


@given(st.lists(st.integers(-(2**40), 2**40) | st.text(max_size=5), max_size=6))
def test_rust_vectors_round_trip(values: list) -> None:
    items = [rust_string(v) if isinstance(v, str) else str(v) for v in values]
    assert parse_literal("vec![" + ", ".join(items) + "]", "rs") == values


@given(st.text(max_size=8))
def test_js_strings_with_json_escapes_round_trip(text: str) -> None:
    assert parse_literal(json.dumps(text), "js") == ["s", text]


@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_float_literals_round_to_32_bits(value: float) -> None:
    text = repr(value) if "e" in repr(value) or "." in repr(value) else f"{value}.0"
    assert parse_literal(f"(float){text}f", "cpp") == f32(value)


@pytest.mark.parametrize(
    ("actual", "expected", "equal"),
    [
        ('"1"', "1", True),  # == on primitives
        ("true", "1", True),
        ("null", "undefined", True),
        ("0", '""', True),
        ("[1, 2]", '["1", 2]', True),
        ("[]", "{}", False),  # an array never equals a plain object
        ("[1]", "[1, 2]", False),
        ('{"a": 1}', '{"a": "1"}', True),
        ('{"a": 1}', '{"b": 1}', False),
        ('"a"', '"b"', False),
        ("null", "0", False),
    ],
)
def test_js_deep_equal_is_nodes_loose_comparison(actual: str, expected: str, equal: bool) -> None:
    tagged = parse_literal(actual, "js"), parse_literal(expected, "js")
    assert js_deep_equal(*tagged) is equal


def test_js_nan_equals_nan() -> None:
    assert js_deep_equal(["n", "NaN"], ["n", "NaN"])
    assert not js_deep_equal(["n", "NaN"], ["n", math.inf])


def test_an_assertion_of_another_shape_falls_back() -> None:
    tests = "int main() {\n    auto candidate = f;\n    assert(candidate(1) < 2);\n}\n"
    with pytest.raises(LiteralError, match="not a comparison"):
        split_asserts(tests, "cpp", "f")


@needs_data
def test_trainers_refuse_multiple_e_as_training_prompts() -> None:
    dataset = types.SimpleNamespace(
        suite="multiple-rs",
        train_split="test",
        data_dir=None,
        task_ids=(),
        difficulty=None,
        needs=None,
    )
    with pytest.raises(ConfigError, match="may not be used as training prompts"):
        train_problems(dataset, "smollm2-135m", 0)


def js_literal(value: object) -> str:
    if value is None:
        return "null"
    if value == "undefined!":
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(js_literal(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{json.dumps(k)}: {js_literal(v)}" for k, v in value.items()) + "}"


_JS_SCALARS = (
    st.none()
    | st.just("undefined!")
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.5, -0.0, 1.0, 1e21])
    | st.sampled_from(["", " ", "1", "0", "1.0", "0x1", "true", "a", " 2 ", "Infinity", "1e3"])
)
_JS_VALUES = st.recursive(
    _JS_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner, max_size=2)
    ),
    max_leaves=6,
)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@settings(max_examples=4, deadline=None)
@given(st.lists(st.tuples(_JS_VALUES, _JS_VALUES), min_size=40, max_size=40))
def test_js_deep_equal_agrees_with_node(pairs: list) -> None:
    """Node's own assert.deepEqual on the same literals decides what js_deep_equal must say."""
    lines = [
        "const assert = require('node:assert');",
        "const out = [];",
        *(
            f"try {{ assert.deepEqual({js_literal(a)}, {js_literal(b)}); out.push(true); }}"
            " catch (e) { out.push(false); }"
            for a, b in pairs
        ),
        "console.log(JSON.stringify(out));",
    ]
    done = subprocess.run(
        ["node", "-e", "\n".join(lines)], capture_output=True, text=True, timeout=60, check=True
    )
    expected = json.loads(done.stdout)
    ours = [
        js_deep_equal(parse_literal(js_literal(a), "js"), parse_literal(js_literal(b), "js"))
        for a, b in pairs
    ]
    assert ours == expected, [
        (js_literal(a), js_literal(b), x)
        for (a, b), x, y in zip(pairs, expected, ours, strict=True)
        if x != y
    ]
