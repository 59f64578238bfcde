"""A :class:`~suites.stdio_data.StdioRecord` into a :class:`Problem`, through the stdio core's
one constructor (``harness.stdio.problem.stdio_problem``)."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import re

from harness.records import Problem
from harness.stdio.problem import CallTest, Checker, StdioTest, stdio_problem, training_view
from suites.stdio_data import TEST_GROUPS, IoTest, StdioRecord, SuiteOptions

PLAIN = SuiteOptions()  # Python, every test, stop at the first failure

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


def to_problem(record: StdioRecord, options: SuiteOptions = PLAIN) -> Problem:
    """The :class:`Problem` of a record, built by the stdio core's one constructor, in the
    language the options name (as a trainer scores it with ``partial``/``largestN``).

    Tests keep the data set's order, public first; a call-based test whose arguments or
    result are not JSON is left out and named in the problem's defects.
    """
    language = options.language
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
    if owner:
        problem = as_method_calls(problem, owner)
    return training_view(problem, options.largest) if options.every_test else problem


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
