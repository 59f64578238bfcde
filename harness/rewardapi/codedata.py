"""verl's dataset rows as the harness's problems: its ``data_source`` names and its code data.

verl's rows carry ``data_source`` and ``reward_model.ground_truth``. Three kinds are read here:

- **A suite's task.** ``data_source`` names a registered suite (``humaneval``, ``mbpp``,
  ``humaneval-js`` ...) or a HumanEval/MBPP data set under the names verl users' data carry
  (``openai_humaneval``, ``openai/openai_humaneval``, ``google-research-datasets/mbpp``,
  ``evalplus/humanevalplus`` ...: :data:`SOURCE_SUITES`), and ``ground_truth`` is the task id
  (``HumanEval/53``, or the bare number ``53``).
- **Code data** (verl's ``codecontests``, ``apps``, ``taco``, ``livecodebench``,
  ``primeintellect``, ``codeforces`` rows, judged by verl's ``prime_code`` and
  ``sandbox_fusion``): ``ground_truth`` is ``{"inputs": [...], "outputs": [...]}``, as an
  object or its JSON text, whatever the ``data_source``:

  - stdin/stdout: each input is the text given on stdin (``None`` is empty), each output the
    expected stdout (a list of lines is joined); judged token-wise, as the stdio suites are;
  - call-based, with ``fn_name``: each input is the arguments, one JSON value a line
    (LiveCodeBench's and PRIME's form; a JSON list of arguments, APPS's form, works too), each
    output the JSON return value. A completion that defines ``class Solution`` with the method
    (LeetCode's form) is called through a fresh ``Solution()``, as verl's judges do;
  - assert-based, with ``assert_case`` (KodCode's form; or the ground truth a bare list of
    assert lines, MBPP's ``test_list``, or their text): each assert line is one case, calling
    ``fn_name`` (else the function the asserts call).

- **An inline problem**: ``ground_truth`` is ``{"prompt", "tests", "entry_point", ...}``
  (:mod:`harness.rewardapi.inline`), or HumanEval's test code (``def check(candidate)``) with
  the entry point in ``extra_info.entry_point``.

A row that cannot be judged is never an exception here: :func:`read_row` says why, and the
adapter masks it (:mod:`harness.rewardapi.verl`).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.program_ast import parse_program
from harness.records import Problem
from harness.rewardapi.items import InlineSpec, RewardInputError, check_inline

# METHOD_PROGRAM_SETUP: the typing and standard-library names a LeetCode-style answer uses
# without importing them; verl's call-based judges (prime_code, sandbox_fusion) put them first.
from suites.stdio_build import METHOD_PROGRAM_SETUP, as_method_calls, method_owner, to_problem
from suites.stdio_data import IoTest, StdioRecord

# verl users' names of the HumanEval and MBPP data sets -> the project's suites. Keys are the
# name in lower case with every character but letters and digits left out ("+" is "plus").
SOURCE_SUITES = {
    "openaihumaneval": "humaneval",
    "openaiopenaihumaneval": "humaneval",
    "humaneval": "humaneval",
    "humanevalplus": "humaneval-plus",
    "evalplushumanevalplus": "humaneval-plus",
    "openaihumanevalplus": "humaneval-plus",
    "mbpp": "mbpp",
    "mbppfull": "mbpp",
    "googleresearchdatasetsmbpp": "mbpp",
    "googleresearchdatasetsmbppfull": "mbpp",
    "mbppsanitized": "mbpp-sanitized",
    "sanitizedmbpp": "mbpp-sanitized",
    "googleresearchdatasetsmbppsanitized": "mbpp-sanitized",
    "mbppplus": "mbpp-plus",
    "evalplusmbppplus": "mbpp-plus",
}
# Task ids a bare number stands for, per suite family.
_NUMBERED = {"humaneval": "HumanEval/{}", "mbpp": "Mbpp/{}"}
CODE_DATA_KEYS = ("inputs", "outputs", "assert_case")
CACHE_SIZE = 4096  # built code-data problems kept (a data set's problems, usually fewer)


def source_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower().replace("+", "plus"))


def suite_for(data_source: str) -> str:
    """The suite a ``data_source`` names: a verl name of HumanEval/MBPP mapped, else as is."""
    return SOURCE_SUITES.get(source_key(data_source), data_source)


def task_id_for(suite: str, truth: str) -> str:
    """``truth`` as the suite's task id: ``53`` is ``HumanEval/53`` in a HumanEval suite."""
    text = truth.strip()
    family = "humaneval" if suite.startswith("humaneval") else suite.split("-")[0]
    pattern = _NUMBERED.get(family)
    if pattern is None:
        return text
    if text.isdigit():
        return pattern.format(int(text))
    prefix = pattern.split("/")[0]
    match = re.fullmatch(rf"{prefix}[/_](\d+)", text, re.IGNORECASE)
    return pattern.format(int(match.group(1))) if match else text


def plain(value: Any) -> Any:
    """``value`` as plain JSON-like data (verl's parquet rows hold numpy arrays and scalars)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist) and not isinstance(value, (str, bytes)):
        return plain(tolist())
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def is_code_data(truth: Any) -> bool:
    return isinstance(truth, Mapping) and any(key in truth for key in CODE_DATA_KEYS)


@dataclass(frozen=True)
class RowReading:
    """What one verl row asks for: a suite's task, an inline problem, or code data."""

    suite: str = ""
    task_id: str = ""
    inline: InlineSpec | None = None
    code: Mapping[str, Any] | None = None


def read_row(data_source: Any, ground_truth: Any, extra_info: Any) -> RowReading:
    """The row's problem reference; raises :class:`RewardInputError` naming the field (the
    reason its sample is masked)."""
    source = "" if data_source is None else str(plain(data_source))
    truth = plain(ground_truth)
    extra = plain(extra_info) if isinstance(plain(extra_info), Mapping) else {}
    if isinstance(truth, str) and truth.lstrip().startswith(("{", "[")):
        try:
            truth = json.loads(truth)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise RewardInputError("ground_truth", f"not valid JSON: {exc}") from None
    if truth is None or (isinstance(truth, str) and not truth.strip()):
        raise RewardInputError(
            "ground_truth",
            "missing: give a task id, verl's code data {inputs, outputs}, or an inline problem",
        )
    if _assert_lines(truth):  # assert tests as a list (MBPP's test_list) or as text
        lines = truth if isinstance(truth, list) else [truth]
        return RowReading(suite=source or "code", code={"assert_case": lines})
    if is_code_data(truth):
        return RowReading(suite=source or "code", code=truth)
    if isinstance(truth, Mapping):
        if "task_id" in truth:
            suite = str(truth.get("suite") or suite_for(source))
            return RowReading(suite=suite, task_id=task_id_for(suite, str(truth["task_id"])))
        problem = truth.get("problem", truth)
        return RowReading(inline=check_inline(_present(problem), "ground_truth"))
    if isinstance(truth, (int, float)) and not isinstance(truth, bool):
        truth = str(int(truth))
    if not isinstance(truth, str):
        raise RewardInputError(
            "ground_truth",
            f"expected a task id, an object or JSON text, got {type(truth).__name__}",
        )
    if "def check(" in truth:  # HumanEval's test code; the entry point comes with extra_info
        entry = extra.get("entry_point")
        if not entry:
            raise RewardInputError(
                "extra_info.entry_point",
                "missing: ground_truth is HumanEval test code, which names no function",
            )
        spec = {"prompt": extra.get("prompt") or "", "tests": truth, "entry_point": entry}
        return RowReading(inline=check_inline(spec, "ground_truth"))
    if not source:
        raise RewardInputError("data_source", "missing: name the suite of the task id")
    suite = suite_for(source)
    return RowReading(suite=suite, task_id=task_id_for(suite, truth))


def _assert_lines(truth: Any) -> bool:
    """Assert-based tests given bare: a list of assert lines, or a text of them."""
    if isinstance(truth, list):
        return bool(truth) and all(
            isinstance(t, str) and t.lstrip().startswith("assert") for t in truth
        )
    if not isinstance(truth, str) or "def check(" in truth:  # HumanEval's test code: not bare
        return False
    return re.search(r"^\s*assert\b", truth, re.MULTILINE) is not None


def _present(problem: Any) -> Any:
    if isinstance(problem, Mapping):
        return {k: v for k, v in problem.items() if v is not None}
    return problem


def assert_spec(code: Mapping[str, Any], where: str = "ground_truth") -> InlineSpec:
    """KodCode's assert cases as an inline problem (each assert one case)."""
    asserts = code.get("assert_case")
    if not isinstance(asserts, list) or not all(isinstance(a, str) for a in asserts):
        raise RewardInputError(f"{where}.assert_case", "expected a list of assert lines")
    tests = "\n".join(a.strip("\n") for a in asserts if a.strip())
    if not tests:
        raise RewardInputError(f"{where}.assert_case", "empty")
    entry = code.get("fn_name") or called_function(tests)
    if not entry:
        raise RewardInputError(f"{where}.fn_name", "missing, and the asserts call no function")
    return check_inline({"prompt": "", "tests": tests, "entry_point": entry}, where)


def called_function(tests: str) -> str | None:
    """The function the assert lines call most (their entry point), if any."""
    tree = parse_program(tests)
    if tree is None:
        return None
    names = Counter(
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    )
    for name, _ in names.most_common():
        if not hasattr(builtins, name) and name != "isclose":
            return name
    return None


class CodeDataProblems:
    """Code data to problems, built once per content (least recently used dropped first)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._problems: OrderedDict[str, Problem] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, source: str, code: Mapping[str, Any], completion: str) -> Problem:
        """The problem of stdin/stdout or call-based ``code`` for ``completion`` (a LeetCode
        answer, ``class Solution``, is called through the class). Raises RewardInputError."""
        fn_name = code.get("fn_name") or None
        owner = _method_owner(code, completion) if fn_name else None
        payload = json.dumps([source, code, owner], sort_keys=True, default=str)
        key = hashlib.sha256(payload.encode()).hexdigest()[:20]
        with self._lock:
            problem = self._problems.get(key)
            if problem is not None:
                self._problems.move_to_end(key)
                return problem
        problem = build_code_problem(source, code, f"{source_key(source) or 'code'}/{key}", owner)
        with self._lock:
            self._problems[key] = problem
            while len(self._problems) > self.size:
                self._problems.popitem(last=False)
        return problem


def _method_owner(code: Mapping[str, Any], completion: str) -> str | None:
    """``Solution`` when the answer (or the starter code) puts ``fn_name`` in that class and
    defines no function of that name at top level."""
    fn_name = str(code["fn_name"])
    starter = code.get("starter_code")
    if isinstance(starter, str) and starter.strip():
        return method_owner(starter, fn_name)
    if re.search(rf"^(async\s+)?def\s+{re.escape(fn_name)}\s*\(", completion, re.MULTILINE):
        return None
    return "Solution" if re.search(r"^class\s+Solution\b", completion, re.MULTILINE) else None


def build_code_problem(
    source: str, code: Mapping[str, Any], task_id: str, owner: str | None = None
) -> Problem:
    """The :class:`Problem` of verl's stdin/stdout or call-based code data."""
    inputs, outputs = code.get("inputs"), code.get("outputs")
    for name, values in (("inputs", inputs), ("outputs", outputs)):
        if not isinstance(values, list) or not values:
            raise RewardInputError(f"ground_truth.{name}", "missing, empty or not a list")
    assert isinstance(inputs, list) and isinstance(outputs, list)
    if len(inputs) != len(outputs):
        raise RewardInputError(
            "ground_truth.outputs", f"{len(outputs)} outputs for {len(inputs)} inputs"
        )
    fn_name = code.get("fn_name") or None
    if fn_name is not None and (not isinstance(fn_name, str) or not fn_name.isidentifier()):
        raise RewardInputError("ground_truth.fn_name", f"{fn_name!r} is not a function name")
    if fn_name:
        tests = call_tests(inputs, outputs)
    else:
        tests = [
            IoTest(_stdin_text(i, f"inputs[{n}]"), _stdin_text(o, f"outputs[{n}]"))
            for n, (i, o) in enumerate(zip(inputs, outputs, strict=True))
        ]
    starter = code.get("starter_code") if isinstance(code.get("starter_code"), str) else ""
    record = StdioRecord(
        suite=source or "code",
        task_id=task_id,
        statement="",
        tests=tuple(tests),
        starter_code=str(starter or ""),
        fn_name=fn_name,
        metadata={"verl_code_data": True},
    )
    problem = to_problem(record)
    if problem.defects:
        raise RewardInputError("ground_truth", "; ".join(problem.defects))
    if fn_name and owner and problem.entry_point == fn_name:
        problem = as_method_calls(problem, owner)
    elif fn_name and not problem.program_setup:
        problem = replace(problem, program_setup=METHOD_PROGRAM_SETUP)
    return problem


def _stdin_text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + ("\n" if value else "")
    raise RewardInputError(f"ground_truth.{where}", "expected text or a list of lines")


def call_tests(inputs: list[Any], outputs: list[Any]) -> list[IoTest]:
    """Call-based tests: arguments one JSON value a line, the JSON result. APPS's form (a list
    of arguments, the result wrapped in a one-element list) is read as APPS's loader reads it."""
    tests = []
    for n, (given, expected) in enumerate(zip(inputs, outputs, strict=True)):
        if isinstance(given, list):  # APPS: the argument list; its result wrapped as [v]
            args = "\n".join(json.dumps(a) for a in given)
            value = _json_value(expected, f"outputs[{n}]")
            if isinstance(value, list) and len(value) == 1:
                value = value[0]
        elif isinstance(given, str):
            for line in (line for line in given.split("\n") if line.strip()):
                _json_value(line, f"inputs[{n}]")
            args, value = given, _json_value(expected, f"outputs[{n}]")
        else:
            raise RewardInputError(
                f"ground_truth.inputs[{n}]", "expected JSON lines of arguments or a list"
            )
        tests.append(IoTest(args, json.dumps(value), "private", "functional"))
    return tests


def _json_value(value: Any, where: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise RewardInputError(f"ground_truth.{where}", f"not JSON: {exc}") from None
