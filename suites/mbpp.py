"""MBPP: the full set (974 problems, ``mbpp.jsonl``) and the sanitized set (427,
``sanitized-mbpp.json``), from a local mirror or the hub (``google-research-datasets/mbpp``).

A record's ``test_list`` (asserts that call the function by its own name) becomes a module
``def check(candidate):`` holding the asserts, which ``harness.pipeline.checks.split_check`` splits into
cases. The function names the asserts call and the reference defines are the problem's
``candidate_names``; the entry point is the first of them the tests call.

Where the pieces go:

* ``test_imports`` (sanitized) open the check module (trusted test setup) and are the problem's
  ``program_setup`` too, so a candidate that forgets ``import math`` still runs as the data set
  intends.
* ``test_setup_code`` (full; two tasks build trees of the reference's own ``Node`` class) opens
  the body of ``check``: it needs the candidate's classes, so it runs inside the sandbox before
  the asserts, which makes those asserts sandbox cases. Placed before the program it could not
  run at all (``Node`` is not defined yet).
* ``challenge_test_list`` is kept in metadata, not run (as in the original evaluation).

The prompt a model sees is the standard MBPP prompt with the first test as the example of the
function's name and signature; the raw task text is kept in ``metadata["text"]``. Splits follow
the task-id ranges of the MBPP paper: prompt 1-10, test 11-510, validation 511-600,
train 601-974 (the sanitized set: the same ranges over its own ids).
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import textwrap
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.pipeline.checks import CheckSplitError, split_check
from harness.records import Problem
from suites.defects import missing_module_defects, parse_error

HUB_NAME = "google-research-datasets/mbpp"
FULL_FILE = "mbpp.jsonl"
SANITIZED_FILE = "sanitized-mbpp.json"
PROMPT_TEMPLATE = (
    "You are an expert Python programmer, and here is your task: {text} "
    "Your code should pass these tests:\n\n{tests}\n"
)
PROMPT_TESTS = 1  # how many of the tests the prompt shows as examples
# Task-id ranges of the MBPP paper, in the hub's split order.
SPLIT_RANGES: dict[str, range] = {
    "train": range(601, 975),
    "test": range(11, 511),
    "validation": range(511, 601),
    "prompt": range(1, 11),
}
_BUILTINS = frozenset(dir(builtins))
# A function name in prose: `name`, "function named name", or a snake_case call `name(`.
_NAMED_IN_TEXT = re.compile(
    r"`([A-Za-z_]\w*)(?:\([^`]*\))?`"
    r"|\b(?:function|method)\s+(?:named|called)\s+([A-Za-z_]\w*)"
    r"|\b([A-Za-z]\w*_\w*)\s*\("
)


def load_full(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """MBPP full, split by the paper's task-id ranges."""
    records = _read_jsonl(Path(data_dir) / FULL_FILE) if data_dir else _hub_records("full")
    problems = [problem_from_record(r, "mbpp", sanitized=False) for r in records]
    return split_by_task_id(problems)


def load_sanitized(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """MBPP sanitized, split by the paper's task-id ranges over its own ids."""
    if data_dir:
        path = Path(data_dir) / SANITIZED_FILE
        records = json.loads(_read_text(path))
    else:
        records = _hub_records("sanitized")
    problems = [problem_from_record(r, "mbpp-sanitized", sanitized=True) for r in records]
    return split_by_task_id(problems)


def split_by_task_id(problems: Iterable[Problem]) -> dict[str, list[Problem]]:
    """Problems grouped by :data:`SPLIT_RANGES`, each in task-id order."""
    splits: dict[str, list[Problem]] = {name: [] for name in SPLIT_RANGES}
    for problem in sorted(problems, key=lambda p: p.metadata["number"]):
        for name, ids in SPLIT_RANGES.items():
            if problem.metadata["number"] in ids:
                splits[name].append(problem)
                break
    return splits


def problem_from_record(record: Mapping[str, Any], suite: str, sanitized: bool) -> Problem:
    """A :class:`Problem` from one MBPP record (full or sanitized shape)."""
    with warnings.catch_warnings():
        # Old MBPP code has invalid escapes ('\d' in plain strings); parsing it warns.
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return _problem(record, suite, sanitized)


def _problem(record: Mapping[str, Any], suite: str, sanitized: bool) -> Problem:
    number = int(record["task_id"])
    text = str(record["prompt"] if sanitized else record["text"])
    code = _lf(str(record["code"]))
    tests = [_lf(t) for t in record["test_list"]]
    imports = [_lf(i) for i in (record.get("test_imports") or [])]
    setup_code = _lf(str(record.get("test_setup_code") or ""))
    defects: list[str] = []

    reference_error = parse_error(code, "reference code")
    if reference_error:
        defects.append(reference_error)
    defined = _defined_names(code)
    called = _called_names(tests)
    candidates = tuple(name for name in called if name in defined)
    entry_point = candidates[0] if candidates else next(iter(called), "")
    prompt = PROMPT_TEMPLATE.format(text=text.strip(), tests="\n".join(tests[:PROMPT_TESTS]))
    defects += _name_defects(text, prompt, called, candidates, defined, imports, setup_code)

    test_source = check_module(imports, setup_code, tests)
    test_setup, cases = "", ()
    try:
        test_setup, cases = split_check(test_source, candidates or (entry_point,))
    except CheckSplitError as exc:
        defects.append(f"tests: {exc}")
    defects += missing_module_defects([*imports, setup_code], "tests")
    defects += missing_module_defects([code], "reference code")

    metadata: dict[str, Any] = {
        "number": number,
        "text": text,
        "prompt_kind": "text",
        "test_source": test_source,
        "test_list": list(record["test_list"]),
    }
    if sanitized:
        metadata.update(test_imports=imports, source_file=record.get("source_file"))
    else:
        metadata.update(
            test_setup_code=setup_code,
            challenge_test_list=list(record.get("challenge_test_list") or []),
        )
    return Problem(
        suite=suite,
        task_id=f"Mbpp/{number}",
        prompt=prompt,
        entry_point=entry_point,
        cases=tuple(cases),
        reference=code,
        program_setup="\n".join(imports) + ("\n" if imports else ""),
        test_setup=test_setup,
        candidate_names=candidates or ((entry_point,) if entry_point else ()),
        defects=tuple(defects),
        metadata=metadata,
    )


def check_module(imports: Sequence[str], setup_code: str, tests: Sequence[str]) -> str:
    """The ``def check(candidate):`` module for MBPP asserts (setup code first, in the body)."""
    body = [setup_code.strip("\n")] if setup_code.strip() else []
    body += [t.strip("\n") for t in tests]
    lines = list(imports)
    if lines:
        lines.append("")
    lines.append("def check(candidate):")
    lines += [textwrap.indent(part, "    ") for part in body] or ["    pass"]
    return "\n".join(lines) + "\n"


def _name_defects(
    text: str,
    prompt: str,
    called: Sequence[str],
    candidates: Sequence[str],
    defined: set[str],
    imports: Sequence[str],
    setup_code: str,
) -> list[str]:
    """Defects in the names the tests use: unknown names, names the model cannot know."""
    defects: list[str] = []
    if not candidates:
        defects.append(
            f"the tests call no function the reference defines (they call {', '.join(called) or 'nothing'})"
        )
    known = defined | _defined_names("\n".join(imports)) | _defined_names(setup_code)
    for name in called:
        if name not in known and name not in _BUILTINS:
            defects.append(
                f"the tests call {name!r}, which neither the reference nor the test setup defines"
            )
    for name in candidates:
        if not re.search(rf"\b{re.escape(name)}\b", prompt):
            defects.append(f"the tests call {name!r}, which the prompt never mentions")
    named = _names_in_text(text)
    if named and candidates and not set(named) & set(candidates):
        defects.append(
            f"the prompt names {', '.join(repr(n) for n in named)} but the tests call {candidates[0]!r}"
        )
    return defects


def _names_in_text(text: str) -> list[str]:
    found: list[str] = []
    for match in _NAMED_IN_TEXT.finditer(text):
        name = next(g for g in match.groups() if g)
        if name not in found and name not in _BUILTINS:
            found.append(name)
    return found


def _defined_names(code: str) -> set[str]:
    """Top-level names ``code`` binds (functions, classes, assignments, imports)."""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError, RecursionError):
        return set(re.findall(r"^(?:def|class)\s+([A-Za-z_]\w*)", code, re.MULTILINE))
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _called_names(tests: Iterable[str]) -> list[str]:
    """Names the tests call directly (``f(...)``), in order of first use."""
    called: list[str] = []
    for test in tests:
        try:
            tree = ast.parse(test)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id not in called:
                    called.append(node.func.id)
    # Builtins go last, so the first user-defined name leads (assert set(f(x)) == ...).
    return [n for n in called if n not in _BUILTINS] + [n for n in called if n in _BUILTINS]


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _read_text(path: Path) -> str:
    from suites.errors import SuiteError

    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read MBPP data {path}: {exc}") from exc


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    from suites.errors import SuiteError

    records = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{number}: not valid JSON: {exc}") from exc
    return records


def _hub_records(config: str) -> list[dict[str, Any]]:
    """Every record of every split of the hub's MBPP ``config`` (needs the network once)."""
    from suites.errors import SuiteError

    try:
        from suites.hub import load_hub_dataset

        loaded = load_hub_dataset(HUB_NAME, config)
    except Exception as exc:  # any failure to reach or read the hub is the same to a user
        raise SuiteError(
            f"cannot load {HUB_NAME} ({config}) from the hub: {exc}; "
            "point CODEEVAL_DATA_DIR (or data_dir) at a local mirror"
        ) from exc
    return [dict(row) for split in loaded.values() for row in split]
