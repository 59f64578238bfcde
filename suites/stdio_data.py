"""What the stdin/stdout suites share: the parsed record, errors that name where bad data is,
reading a mirror or the hub, and the test encodings more than one data set uses.

A loader (``suites.livecodebench``, ``codecontests``, ``apps``, ``taco``, the ``jsonl:`` suite)
turns each row of its published schema into a :class:`StdioRecord`: tests as (input text,
expected output) pairs in groups (public, private, generated), the limits the data gives, and
for call-based problems the function name. :func:`to_problem` hands it to the stdio core
(``harness.stdio``), which owns the problem shape, checkers and execution.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import io
import json
import math
import os
import pickle
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.jsonlines import read_objects
from harness.records import Problem
from harness.stdio.problem import STDIO_LANGUAGES, CallTest, Checker, StdioTest, stdio_problem
from suites.errors import SuiteError

TEST_GROUPS = ("public", "private", "generated")


class StdioDataError(SuiteError):
    """A row that cannot be used; the message names where it is (file and line, or the hub
    split and row) and the field."""

    def __init__(self, where: str, field_name: str | None, message: str):
        self.where, self.field = where, field_name
        super().__init__(
            f"{where}: {field_name}: {message}" if field_name else f"{where}: {message}"
        )


@dataclass(frozen=True)
class IoTest:
    """One test: stdin text and the expected stdout, or for a call-based problem the
    arguments (one JSON value a line, as LiveCodeBench writes them) and the JSON result."""

    input: str
    output: str
    group: str = "private"
    kind: str = "stdin"  # or "functional": a call-based test


@dataclass(frozen=True)
class StdioRecord:
    """One problem as its data set gives it, before the stdio core builds the Problem."""

    suite: str
    task_id: str
    statement: str
    tests: tuple[IoTest, ...]
    starter_code: str = ""
    fn_name: str | None = None  # set: call-based, judged on the value path
    time_limit_s: float | None = None
    memory_limit_mb: float | None = None
    reference: str = ""  # a whole program that passes (the data's first solution), if any
    reference_language: str = "python"
    checker: Checker | None = None  # None: what the statement asks for (checker_for)
    defects: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def by_group(self, group: str) -> list[IoTest]:
        return [t for t in self.tests if t.group == group]


# -- suite options (NAME@OPTION@OPTION) ---------------------------------------------------


def split_options(option: str | None, suite: str) -> tuple[str, list[str]]:
    """The program language among the ``@``-separated options (``python`` when none), and the
    other options, for the loader to read (a LiveCodeBench date window)."""
    language, rest = "python", []
    for part in (option or "").split("@"):
        part = part.strip()
        if part.lower() in STDIO_LANGUAGES:
            language = part.lower()
        elif part:
            rest.append(part)
    return language, rest


def no_more_options(rest: list[str], suite: str) -> None:
    if rest:
        raise SuiteError(
            f"{suite}: unknown option {rest[0]!r}; options are a language "
            f"({', '.join(STDIO_LANGUAGES)})"
        )


def suite_name(suite: str, option: str | None) -> str:
    """The name problems carry, options included, so the same name loads them again."""
    return f"{suite}@{option}" if option else suite


# -- reading rows -------------------------------------------------------------------------


Row = tuple[str, dict[str, Any]]  # (where: "FILE:LINE" or "HUB[split]:INDEX", the row)


def read_jsonl_rows(path: Path) -> list[Row]:
    """The rows of a JSONL file (``.gz`` too), each with ``FILE:LINE``."""

    def error(message: str) -> StdioDataError:  # read_objects' messages start with FILE:LINE
        where, _, rest = message.partition(": ")
        return StdioDataError(where, None, rest)

    try:
        return [(f"{path}:{n}", row) for n, row in read_objects(path, error)]  # type: ignore[arg-type]
    except OSError as exc:
        raise StdioDataError(str(path), None, f"cannot read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise StdioDataError(str(path), None, f"not valid UTF-8 at byte {exc.start}") from None


def data_folders(data_dir: str | Path | None) -> list[Path]:
    """``data_dir`` and ``$CODEEVAL_DATA_DIR``, the folders a mirror may be in."""
    return [Path(d) for d in (data_dir, os.environ.get("CODEEVAL_DATA_DIR")) if d]


def find_mirror(data_dir: str | Path | None, folder: str) -> Path | None:
    """The mirror folder ``folder`` under ``data_dir`` or ``$CODEEVAL_DATA_DIR``, if any."""
    for base in data_folders(data_dir):
        if (base / folder).is_dir():
            return base / folder
    return None


def split_files(mirror: Path, splits: Iterable[str]) -> dict[str, Path]:
    """``{split: SPLIT.jsonl}`` for the splits a mirror folder has (``.jsonl.gz`` too)."""
    found: dict[str, Path] = {}
    for split in splits:
        for name in (f"{split}.jsonl", f"{split}.jsonl.gz"):
            if (mirror / name).is_file():
                found[split] = mirror / name
                break
    return found


def hub_rows(hub_name: str, suite: str, mirror_hint: str, **kwargs: Any) -> dict[str, list[Row]]:
    """Every split of a hub data set as rows; an error says where a mirror would go."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a train dependency
        raise SuiteError(
            f"{suite}: no mirror ({mirror_hint}) and `datasets` is not installed"
        ) from exc
    try:
        loaded = datasets.load_dataset(hub_name, **kwargs)
    except Exception as exc:  # the hub raises many kinds; all mean "not available here"
        raise SuiteError(
            f"{suite}: no local mirror ({mirror_hint}) and the hub data set {hub_name} "
            f"could not be loaded: {exc}"
        ) from exc
    return {
        split: [(f"{hub_name}[{split}]:{i}", dict(row)) for i, row in enumerate(rows)]
        for split, rows in loaded.items()
    }


def hub_file_rows(hub_name: str, filename: str, suite: str, mirror_hint: str) -> list[Row]:
    """The rows of one JSONL file of a hub data set repository (for data sets whose loading
    script ``datasets`` no longer runs)."""
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(hub_name, filename, repo_type="dataset")
    except Exception as exc:  # offline, missing file, no package: all mean "not here"
        raise SuiteError(
            f"{suite}: no local mirror ({mirror_hint}) and {filename} of the hub data set "
            f"{hub_name} could not be fetched: {exc}"
        ) from exc
    return [
        (f"{hub_name}/{filename}:{w.rsplit(':', 1)[1]}", r) for w, r in read_jsonl_rows(Path(path))
    ]


# -- fields --------------------------------------------------------------------------------


def text_field(row: Mapping[str, Any], name: str, where: str, *, required: bool = True) -> str:
    """A string field; a missing optional one (or JSON null) is ``""``."""
    value = row.get(name)
    if value is None:
        if required:
            raise StdioDataError(where, name, "missing")
        return ""
    if not isinstance(value, str):
        raise StdioDataError(where, name, f"expected a string, got {type(value).__name__}")
    return value


def json_text_field(row: Mapping[str, Any], name: str, where: str) -> Any:
    """A field that holds JSON as a string (APPS ``input_output``, LiveCodeBench tests)."""
    text = text_field(row, name, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StdioDataError(where, name, f"not valid JSON: {exc.msg} at char {exc.pos}") from None


def unique_ids(records: Sequence[tuple[str, StdioRecord]]) -> list[StdioRecord]:
    """The records, raising on a task id that appears twice (naming both places)."""
    seen: dict[str, str] = {}
    for where, record in records:
        if record.task_id in seen:
            raise StdioDataError(
                where, "task_id", f"{record.task_id!r} repeats {seen[record.task_id]}"
            )
        seen[record.task_id] = where
    return [record for _, record in records]


# -- LiveCodeBench's compressed tests ---------------------------------------------------------


class _StringsOnly(pickle.Unpickler):
    """Unpickles plain data only: hub data never gets to import or call anything."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def decode_compressed_json(text: str) -> Any:
    """LiveCodeBench's ``private_test_cases`` when compressed: base64 of zlib of a pickled
    JSON string. Raises ``ValueError`` saying which layer is broken."""
    try:
        packed = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise ValueError(f"not base64: {exc}") from None
    try:
        pickled = zlib.decompress(packed)
    except zlib.error as exc:
        raise ValueError(f"not zlib data: {exc}") from None
    try:
        inner = _StringsOnly(io.BytesIO(pickled)).load()
    except Exception as exc:  # a broken or hostile pickle: any error means "not our data"
        raise ValueError(f"not a pickled string: {exc}") from None
    if not isinstance(inner, str):
        raise ValueError(f"the pickle holds a {type(inner).__name__}, not a JSON string")
    try:
        return json.loads(inner)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the decoded text is not JSON: {exc.msg}") from None


def encode_compressed_json(value: Any) -> str:
    """The inverse of :func:`decode_compressed_json` (for fixtures and round-trip tests)."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(value)))).decode("ascii")


# -- APPS / TACO ``input_output`` -----------------------------------------------------------


def _as_text(value: Any) -> str | None:
    """APPS writes some stdio inputs and outputs as lists of lines; join them as it does."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + ("\n" if value else "")
    return None


def parse_input_output(
    value: Any, where: str, field_name: str = "input_output"
) -> tuple[list[IoTest], str | None, list[str]]:
    """APPS/TACO ``input_output``: ``{"inputs": [...], "outputs": [...], "fn_name"?}``.

    Returns (tests, fn_name, defects). For stdio problems each input and output is text (or a
    list of lines); for call-based ones each input is the argument list and each output the
    return value, written here as one JSON value a line and a JSON value. A test that cannot be
    read is left out and named in ``defects``, never silently dropped.
    """
    if not isinstance(value, dict):
        raise StdioDataError(
            where, field_name, f"expected a JSON object, got {type(value).__name__}"
        )
    inputs, outputs = value.get("inputs"), value.get("outputs")
    for key, items in (("inputs", inputs), ("outputs", outputs)):
        if not isinstance(items, list):
            raise StdioDataError(where, f"{field_name}.{key}", "missing or not a list")
    assert isinstance(inputs, list) and isinstance(outputs, list)
    fn_name = value.get("fn_name")
    if fn_name is not None and (not isinstance(fn_name, str) or not fn_name.isidentifier()):
        raise StdioDataError(where, f"{field_name}.fn_name", f"{fn_name!r} is not a Python name")
    defects: list[str] = []
    if len(inputs) != len(outputs):
        defects.append(
            f"{field_name}: {len(inputs)} inputs but {len(outputs)} outputs; "
            f"only the first {min(len(inputs), len(outputs))} pairs are tests"
        )
    tests: list[IoTest] = []
    for index, (given, expected) in enumerate(zip(inputs, outputs, strict=False)):
        if fn_name:
            if not isinstance(given, list):
                defects.append(f"{field_name}.inputs[{index}]: call arguments are not a list")
                continue
            args = "\n".join(json.dumps(a) for a in given)
            tests.append(IoTest(args, json.dumps(expected), "private", "functional"))
            continue
        stdin, stdout = _as_text(given), _as_text(expected)
        if stdin is None or stdout is None:
            bad = "inputs" if stdin is None else "outputs"
            defects.append(f"{field_name}.{bad}[{index}]: not text or a list of lines")
            continue
        tests.append(IoTest(stdin, stdout, "private"))
    if not tests:
        defects.append(f"{field_name}: no usable test")
    return tests, fn_name or None, defects


# -- building problems ------------------------------------------------------------------------

# "absolute or relative error does not exceed 10^{-6}": the statement asks for a float checker.
_TOLERANCE = re.compile(
    r"(?:absolute|relative)\s+(?:or\s+relative\s+)?error[^.]{0,80}?"
    r"10\s*\^\s*\{?\s*[-−]\s*(\d{1,2})\s*\}?",
    re.IGNORECASE,
)


def checker_for(statement: str) -> Checker:
    """Judges' checker the statement asks for: a float tolerance when it states one
    ("absolute or relative error ... 10^{-6}"), else token-wise comparison."""
    match = _TOLERANCE.search(statement)
    if not match:
        return Checker()
    tolerance = 10.0 ** -int(match.group(1))
    return Checker("float", abs_tol=tolerance, rel_tol=tolerance)


def _call_test(test: IoTest) -> CallTest:
    """A functional test's arguments (one JSON value a line) and JSON result as values."""
    lines = [line for line in test.input.split("\n") if line.strip()]
    return CallTest(
        args=tuple(json.loads(line) for line in lines),
        expected=json.loads(test.output),
        hidden=test.group != "public",
    )


def to_problem(record: StdioRecord, language: str = "python") -> Problem:
    """The :class:`Problem` of a record, built by the stdio core's one constructor.

    Tests keep the data set's order, public first; a call-based test whose arguments or
    result are not JSON is left out and named in the problem's defects.
    """
    defects = list(record.defects)
    groups = {g: len(record.by_group(g)) for g in TEST_GROUPS if record.by_group(g)}
    metadata = {**record.metadata, "test_groups": groups}
    ordered = sorted(record.tests, key=lambda t: t.group != "public")  # stable: data order kept
    tests: list[StdioTest] | list[CallTest]
    if record.fn_name:
        tests = []
        for index, test in enumerate(ordered):
            try:
                tests.append(_call_test(test))
            except json.JSONDecodeError as exc:
                defects.append(f"test {index + 1} ({test.group}): not JSON: {exc.msg}")
    else:
        tests = [StdioTest(t.input, t.output, hidden=t.group != "public") for t in ordered]
    if record.fn_name and language != "python":
        defects.append(
            f"call-based (fn_name {record.fn_name!r}): runs in Python only, not {language}"
        )
    if not tests:
        defects.append("no usable test")
        # The constructor needs one test; a problem with defects is never run.
        tests = [CallTest((), None, hidden=True)] if record.fn_name else [StdioTest("", "")]
    problem = stdio_problem(
        record.suite,
        record.task_id,
        record.statement,
        tests,
        language=language,
        checker=record.checker or checker_for(record.statement),
        time_limit_s=record.time_limit_s,
        memory_mb=math.ceil(record.memory_limit_mb) if record.memory_limit_mb else None,
        fn_name=record.fn_name,
        starter_code=record.starter_code,
        reference=record.reference if record.reference_language == language else "",
        defects=defects,
        metadata=metadata,
    )
    owner = method_owner(record.starter_code, record.fn_name) if record.fn_name else None
    return as_method_calls(problem, owner) if owner else problem


# What LeetCode-style programs may use without importing it (LiveCodeBench's evaluation
# puts the same kind of imports before the program).
METHOD_PROGRAM_SETUP = (
    "from typing import *\nfrom collections import *\nfrom functools import *\n"
    "from itertools import *\nfrom heapq import *\nfrom bisect import *\nimport math\n"
)


def method_owner(starter_code: str, fn_name: str) -> str | None:
    """The class whose method ``fn_name`` is the entry point (LeetCode's ``class Solution``)."""
    tree = None
    for source in (starter_code, starter_code.rstrip() + "\n" + " " * 16 + "pass\n"):
        try:  # starter code usually stops where the body begins: a `pass` completes it
            tree = ast.parse(source)
            break
        except SyntaxError:
            continue
    for node in tree.body if tree else []:
        if isinstance(node, ast.ClassDef) and any(
            isinstance(item, ast.FunctionDef) and item.name == fn_name for item in node.body
        ):
            return node.name
    return None


def as_method_calls(problem: Problem, owner: str) -> Problem:
    """A call-based problem whose entry point is a method: each call goes through a fresh
    ``owner()`` instance, as LeetCode's judge does. (The stdio core's constructor calls a
    plain function; this is the one change made to its Problem.)"""
    method = problem.entry_point
    cases = tuple(
        dataclasses.replace(
            case,
            calls=tuple(c.replace(f"{method}(", f"{owner}().{method}(", 1) for c in case.calls),
            source=case.source.replace(f"{method}(", f"{owner}().{method}(", 1),
        )
        for case in problem.cases
    )
    return dataclasses.replace(
        problem,
        cases=cases,
        entry_point=owner,
        candidate_names=(owner,),
        program_setup=METHOD_PROGRAM_SETUP,
        metadata={**problem.metadata, "method_of": owner},
    )
