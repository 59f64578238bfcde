"""MultiPL-E's HumanEval in JavaScript, C++, Java and Rust: ``multiple-js`` ... ``multiple-rs``.

The names are the bigcode harness's. Prompts and stop tokens are MultiPL-E's, byte for byte
(``humaneval-{js,cpp,java,rs}-reworded``, ``$CODEEVAL_DATA_DIR/multipl_e`` or the hub's
``nuprl/MultiPL-E``). MultiPL-E judges a completion by compiling ``prompt + completion +
tests`` and running it: exit status 0 passes. Here every assertion of ``tests`` becomes one
case judged in the trusted process: the driver of the problem's language
(:mod:`harness.languages.multiple_e`) makes the very call the assertion makes (MultiPL-E's
argument text, verbatim) and sends back the value; the expected literal, read back into
Python (:mod:`suites.multiple_e_literals`), is compared with it by the language's own
equality. A problem whose assertions do not all read that way (C++'s untagged ``Union_``
classes, whose ``==`` only the candidate's process can evaluate) keeps one case that runs
MultiPL-E's test body in the sandbox, marked ``weaker``, and is a data defect: a check that runs
in the candidate's process can never make a sample pass (an ``#define assert(x)`` would), so
these problems leave pass@k with the reason (``metadata["multiple_e_fallback"]`` says why).

Licence: MultiPL-E may be used for evaluation only, never as training data;
:mod:`trainers.common.problems` refuses these suites.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.records import CheckCase, Problem
from suites.errors import SuiteError
from suites.multiple_e_literals import LiteralError, parse_literal

LANGUAGES = ("js", "cpp", "java", "rs")
FOLDER = "multipl_e"
HUB_NAME = "nuprl/MultiPL-E"
DIALECT = "multiple-{}"  # the language hooks that run these problems (harness.languages)
HELPERS = (
    "from harness.languages.multiple_e import Opt\nfrom suites.js_deep_equal import js_deep_equal"
)
EVALUATION_ONLY = "evaluation only (MultiPL-E's licence forbids using it as training data)"


def data_file(language: str, data_dir: Path | None) -> Path:
    """The local mirror of MultiPL-E's ``humaneval-<language>-reworded`` config."""
    name = f"humaneval-{language}-reworded.jsonl"
    if data_dir is not None and (data_dir / FOLDER / name).is_file():
        return data_dir / FOLDER / name
    raise SuiteError(
        f"multiple-{language}: no {FOLDER}/{name} under the data folder {data_dir} "
        f"(set $CODEEVAL_DATA_DIR; online, the data set is {HUB_NAME}, humaneval-{language})"
    )


def read_records(language: str, data_dir: Path | None) -> list[dict[str, Any]]:
    path = data_file(language, data_dir)
    records = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                for field in ("name", "prompt", "tests", "stop_tokens"):
                    record[field]  # noqa: B018 - a missing field is the file's error
            except (ValueError, KeyError) as exc:
                raise SuiteError(f"{path}:{number}: not a MultiPL-E record ({exc})") from None
            records.append(record)
    return records


def load(language: str, data_dir: Path | None = None) -> list[Problem]:
    """Every problem of MultiPL-E's HumanEval in ``language``, in the data set's order."""
    from suites.registry import default_data_dir

    folder = default_data_dir(data_dir)
    return [problem(r, language) for r in read_records(language, folder)]


def problem(record: dict[str, Any], language: str) -> Problem:
    name = record["name"]
    entry = _entry_point(record["prompt"], language, name)
    metadata: dict[str, Any] = {
        "language": DIALECT.format(language),
        "multiple_e_name": name,
        "multiple_e_tests": record["tests"],
        "stop_tokens": list(record["stop_tokens"]),
        "prompt_kind": "code",
        "evaluation_only": EVALUATION_ONLY,
        "signature": {"name": entry, "params": [], "returns": "Any"},
    }
    try:
        if language == "cpp" and re.search(rf"^Union_\w+ {entry}\(", record["prompt"], re.M):
            raise LiteralError(
                "the result is a C++ union MultiPL-E generates (no driver encodes it)"
            )
        asserts = split_asserts(record["tests"], language, entry)
        cases = tuple(_case(i, a, language) for i, a in enumerate(asserts))
        metadata["call_args"] = {
            c.case_id: [[repr(a.args)]] for c, a in zip(cases, asserts, strict=True)
        }
    except LiteralError as exc:
        cases = (_program_case(record["tests"]),)
        metadata["multiple_e_fallback"] = str(exc)
        metadata["call_args"] = {"program": [[repr(("program", main_body(record["tests"])))]]}
    defects: tuple[str, ...] = ()
    if "multiple_e_fallback" in metadata:
        defects = (
            f"{metadata['multiple_e_fallback']}: MultiPL-E's test can only be judged inside the "
            "candidate's own process, where the candidate decides it",
        )
    if language == "js" and any("\n" in c.source for c in cases):
        # A raw line break inside a string literal: node cannot parse the test program, so
        # MultiPL-E fails every completion of this problem.
        defects += (
            "MultiPL-E's JavaScript test has a line break inside a string literal: "
            "its test program does not parse, so every completion fails there",
        )
    number = re.match(r"HumanEval_(\d+)_", name)
    return Problem(
        suite=f"multiple-{language}",
        task_id=f"multiple-{language}/{name}",
        prompt=record["prompt"],
        entry_point=entry,
        cases=cases,
        reference="",
        test_setup=HELPERS,
        defects=defects,
        metadata={
            **metadata,
            "humaneval_task_id": f"HumanEval/{number.group(1)}" if number else "",
        },
    )


class Assert:
    """One assertion of MultiPL-E's test program: the call's argument text, the expected
    literal's text and whether it is compared with ``.equals`` (Java) or ``==``."""

    def __init__(self, source: str, args: str, expected: str):
        self.source, self.args, self.expected = source, args, expected


_ASSERT_START = {
    "js": "assert.deepEqual(",
    "cpp": "assert(",
    "java": "assert(",
    "rs": "assert_eq!(",
}
_SKIPPED = re.compile(r"^(let candidate = \w+;|auto candidate = \w+;|)$")


def statements(body: str) -> list[str]:
    """The statements of a test body: split at each ``;`` outside strings and brackets."""
    out, start, i, depth = [], 0, 0, 0
    while i < len(body):
        ch = body[i]
        if ch in "\"'":
            i += 1
            while i < len(body) and body[i] != ch:
                i += 2 if body[i] == "\\" else 1
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            out.append(body[start : i + 1].strip())
            start = i + 1
        i += 1
    if body[start:].strip():
        raise LiteralError(f"text after the last statement: {body[start:].strip()[:60]}")
    return out


def split_asserts(tests: str, language: str, entry: str) -> list[Assert]:
    """The assertions of ``tests``; LiteralError for a line that is none of the known forms."""
    out = []
    for text in statements(main_body(tests)):
        if _SKIPPED.match(text):
            continue
        start = _ASSERT_START[language]
        if not (text.startswith(start) and text.endswith(");")):
            raise LiteralError(f"a test line that is not an assertion: {text[:80]}")
        body = text[len(start) : -2]
        callee = "candidate" if language != "java" else entry
        if not body.startswith(callee + "("):
            raise LiteralError(f"an assertion that does not start with a call: {text[:80]}")
        close = matching(body, len(callee))
        args, rest = body[len(callee) + 1 : close], body[close + 1 :]
        expected = _expected(rest, language)
        parse_literal(expected, language)  # LiteralError: the problem runs its program
        out.append(Assert(text, args, expected))
    if not out:
        raise LiteralError("no assertion in the tests")
    return out


def _expected(rest: str, language: str) -> str:
    rest = rest.strip()
    if language in ("js", "rs") and rest.startswith(","):
        return rest[1:]
    if language in ("cpp", "java") and rest.startswith("=="):
        return rest[2:]
    if language == "java" and rest.startswith(".equals(") and rest.endswith(")"):
        return rest[len(".equals(") : -1]
    raise LiteralError(f"an assertion that is not a comparison: {rest[:60]}")


def matching(text: str, open_index: int) -> int:
    """The index of the bracket that closes the one at ``open_index`` (strings skipped)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack, i = [], open_index
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i += 1
            while i < len(text) and text[i] != ch:
                i += 2 if text[i] == "\\" else 1
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                raise LiteralError(f"unbalanced brackets in {text[:80]}")
            if not stack:
                return i
        i += 1
    raise LiteralError(f"unbalanced brackets in {text[:80]}")


def _case(index: int, item: Assert, language: str) -> CheckCase:
    expected = parse_literal(item.expected, language)
    check = (
        f"assert js_deep_equal(v[0], {expected!r})"
        if language == "js"
        else f"assert v[0] == {expected!r}"
    )
    return CheckCase(
        case_id=f"case_{index}",
        source=item.source,
        mode="compare",
        calls=(f"candidate({item.args})",),
        check=check,
    )


def _program_case(tests: str) -> CheckCase:
    """MultiPL-E's test body, run in the sandbox: the case passes when it runs to its end."""
    return CheckCase(
        case_id="program",
        source=tests.strip(),
        mode="compare",
        calls=("test program",),
        check="assert v[0] == 'completed'",
        weaker=True,
    )


def main_body(tests: str) -> str:
    """The statements of the test function (``main``/``test``) of MultiPL-E's tests."""
    match = re.search(
        r"(?:int main\(\)|fn main\(\)|function test\(\)|void main\(String\[\] args\))\s*\{", tests
    )
    if match is None:
        raise SuiteError("MultiPL-E tests without a main or test function")
    close = matching(tests, match.end() - 1)
    return tests[match.end() : close]


_ENTRY = {
    "js": r"function\s+(\w+)\s*\(",
    "cpp": r"(\w+)\s*\([^()]*\)\s*\{\s*$",
    "java": r"public static [^(]*?\s(\w+)\s*\(",
    "rs": r"fn\s+(\w+)\s*[<(]",
}


def _entry_point(prompt: str, language: str, name: str) -> str:
    found = re.findall(_ENTRY[language], prompt, flags=re.MULTILINE)
    if not found:
        raise SuiteError(f"multiple-{language}/{name}: no function signature in the prompt")
    return found[-1]


def _loader(language: str):  # noqa: ANN202 - a registry loader
    def load_language(data_dir: Path | None = None) -> list[Problem]:
        return load(language, data_dir)

    return load_language


load_js = _loader("js")
load_cpp = _loader("cpp")
load_java = _loader("java")
load_rs = _loader("rs")
