"""The shape of a stdin -> stdout problem (competitive programming), and its one constructor.

A stdio problem is an ordinary :class:`harness.records.Problem`: one check case per test, and
everything the stdio runner needs in ``metadata["stdio"]`` (a :class:`StdioSpec` as JSON). Its
``metadata["language"]`` names the stdio flavour of the program's language (``stdio-python``,
``stdio-cpp``, ``stdio-java``, ``stdio-rs``, ``stdio-js``), which :mod:`harness.stdio` registers
as a language (:mod:`harness.language_hooks`), so the core sends its samples to the stdio runner.

Call-based problems in the same data (APPS's ``fn_name``) are built as value-path problems:
each test calls the function and the trusted process compares the returned value, as for MBPP.

Loaders build problems with :func:`stdio_problem` only; the rest of this module is the data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.records import CheckCase, Problem

# The languages a stdio program can be written in (the names harness.languages uses).
STDIO_LANGUAGES: tuple[str, ...] = ("python", "cpp", "java", "rs", "js")
LANGUAGE_PREFIX = "stdio-"  # metadata["language"] of a stdio problem: stdio-python, stdio-cpp, ...
DEFAULT_TIME_LIMIT_S = 2.0  # per test, when the data gives none (a judge's usual limit)
DEFAULT_MEMORY_MB = 512
SHOWN_CHARS = 400  # how much of a test's input/output a generated test's docstring shows

CheckerKind = Literal["tokens", "float", "exact", "special"]


@dataclass(frozen=True)
class StdioTest:
    """One judge test: the text given on stdin and the expected stdout."""

    input: str
    output: str
    hidden: bool = False  # public (shown in the statement) or hidden (judge only)


@dataclass(frozen=True)
class CallTest:
    """One test of a call-based problem: arguments and the expected return value (JSON data)."""

    args: tuple[Any, ...]
    expected: Any
    hidden: bool = False


@dataclass(frozen=True)
class Checker:
    """How an output is compared with the expected one, in the trusted process.

    * ``tokens`` (default): whitespace-separated tokens must be equal (judges' usual check:
      trailing spaces, blank lines and line breaks do not matter);
    * ``float``: tokens that both parse as numbers may differ by ``abs_tol`` or ``rel_tol``
      (either suffices, 1e-6 by default), the others must be equal;
    * ``exact``: the bytes must be equal, except trailing whitespace at the end of the output;
    * ``special``: ``judge_source``, a Python program from the data, decides. It runs
      sandboxed, apart from the candidate, as ``judge INPUT OUTPUT ANSWER`` (testlib's order:
      the test's input, the candidate's output, the expected output, as file paths) and
      accepts with exit status 0, rejects with 1; anything else is a fault of the judge.

    ``case_insensitive`` applies to ``tokens``, ``float`` and ``exact``.
    """

    kind: CheckerKind = "tokens"
    abs_tol: float = 1e-6
    rel_tol: float = 1e-6
    case_insensitive: bool = False
    judge_source: str = ""


@dataclass(frozen=True)
class StdioSpec:
    """What ``metadata["stdio"]`` holds: the tests, their limits and the checker."""

    language: str
    tests: tuple[StdioTest, ...]
    checker: Checker = Checker()
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    memory_mb: int = DEFAULT_MEMORY_MB
    # Only the verdict counts (pass@k): the tests after a failed one are not run. A reward that
    # gives partial credit needs every test run (:func:`training_view`).
    stop_at_first_failure: bool = True


def stdio_problem(
    suite: str,
    task_id: str,
    statement: str,
    tests: Sequence[StdioTest] | Sequence[CallTest],
    *,
    language: str = "python",
    checker: Checker | None = None,
    time_limit_s: float | None = None,
    memory_mb: int | None = None,
    fn_name: str | None = None,
    starter_code: str = "",
    reference: str = "",
    defects: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
) -> Problem:
    """The :class:`Problem` of one stdio (or, with ``fn_name``, call-based) problem.

    ``statement`` is the problem text the prompt shows; ``tests`` are :class:`StdioTest` (or
    :class:`CallTest` when ``fn_name`` is given: the value path, Python only). Limits the data
    does not give get judges' usual defaults. ``defects`` are known data defects: the problem
    is then reported as a data error, never as a model's failure. ``metadata`` is kept (a
    loader's ``difficulty``, ``platform``, ``contest_date``...).

    Example::

        from harness.stdio.problem import Checker, StdioTest, stdio_problem

        problem = stdio_problem(
            "apps", "apps/4000", "Print the sum of two integers.",
            [StdioTest("1 2\\n", "3\\n"), StdioTest("5 7\\n", "12\\n", hidden=True)],
            language="cpp", checker=Checker("float", abs_tol=1e-9), time_limit_s=1.0,
        )
    """
    if language not in STDIO_LANGUAGES:
        raise ValueError(
            f"{task_id}: language {language!r} is not one of {', '.join(STDIO_LANGUAGES)}"
        )
    if not tests:
        raise ValueError(f"{task_id}: a stdio problem needs at least one test")
    extra = dict(metadata or {})
    if fn_name:
        return _call_problem(
            suite, task_id, statement, tests, fn_name, starter_code, reference, defects, extra
        )
    if not all(isinstance(t, StdioTest) for t in tests):
        raise TypeError(
            f"{task_id}: stdin tests must be StdioTest records (CallTest needs fn_name)"
        )
    stdin_tests = tuple(t for t in tests if isinstance(t, StdioTest))
    spec = StdioSpec(
        language=language,
        tests=stdin_tests,
        checker=checker or Checker(),
        time_limit_s=float(time_limit_s or DEFAULT_TIME_LIMIT_S),
        memory_mb=int(memory_mb or DEFAULT_MEMORY_MB),
    )
    if spec.checker.kind == "special" and not spec.checker.judge_source.strip():
        raise ValueError(f"{task_id}: a special checker needs the judge program's source")
    ids = case_ids(stdin_tests)
    cases = tuple(
        CheckCase(
            case_id=case_id,
            source=_describe(test, case_id),
            mode="compare",
            check=f'assert v[0] == "passed", v[1]  # judged in the trusted process ({spec.checker.kind})',
            timeout_s=spec.time_limit_s,
        )
        for case_id, test in zip(ids, stdin_tests, strict=True)
    )
    return Problem(
        suite=suite,
        task_id=task_id,
        prompt=statement,
        entry_point="main",
        cases=cases,
        reference=reference,
        defects=tuple(defects),
        metadata={
            **extra,
            "language": LANGUAGE_PREFIX + language,
            "stdio": spec_to_json(spec),
            "starter_code": starter_code,
            # The time limits are the data's: no reference is calibrated (harness.pipeline.calibration).
            "limits_from_data": True,
        },
    )


def training_view(problem: Problem, largest: int | None = None) -> Problem:
    """``problem`` as a trainer scores it: every test run (partial credit), and with
    ``largest`` only the ``largest`` tests with the longest inputs (DeepCoder keeps 15: the
    big inputs are the ones that tell a slow or wrong program from a right one).

    Evaluate on the problem itself: all its tests, stopping at the first failure.
    """
    if not is_stdio(problem):
        return problem
    spec = stdio_spec(problem)
    keep = range(len(spec.tests))
    if largest is not None and largest < len(spec.tests):
        by_size = sorted(keep, key=lambda i: len(spec.tests[i].input), reverse=True)
        keep = sorted(by_size[: max(largest, 1)])
    tests = tuple(spec.tests[i] for i in keep)
    cases = tuple(problem.cases[i] for i in keep)
    view = dataclasses.replace(spec, tests=tests, stop_at_first_failure=False)
    metadata = {**problem.metadata, "stdio": spec_to_json(view)}
    return dataclasses.replace(problem, cases=cases, metadata=metadata)


def case_ids(tests: Sequence[StdioTest] | Sequence[CallTest]) -> list[str]:
    """``public_1, public_2, hidden_1, ...``: each test's case id, numbered within its kind."""
    counts = {"public": 0, "hidden": 0}
    out = []
    for test in tests:
        kind = "hidden" if test.hidden else "public"
        counts[kind] += 1
        out.append(f"{kind}_{counts[kind]}")
    return out


def is_stdio(problem: Problem) -> bool:
    """Whether ``problem`` is a stdin -> stdout problem built by :func:`stdio_problem`."""
    return bool(problem.metadata) and isinstance(problem.metadata.get("stdio"), dict)


def stdio_spec(problem: Problem) -> StdioSpec:
    """The :class:`StdioSpec` of a stdio problem (``KeyError`` for any other problem)."""
    return spec_from_json(problem.metadata["stdio"])


def spec_to_json(spec: StdioSpec) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def spec_from_json(data: Mapping[str, Any]) -> StdioSpec:
    return StdioSpec(
        language=data["language"],
        tests=tuple(StdioTest(**t) for t in data["tests"]),
        checker=Checker(**data.get("checker", {})),
        time_limit_s=float(data.get("time_limit_s", DEFAULT_TIME_LIMIT_S)),
        memory_mb=int(data.get("memory_mb", DEFAULT_MEMORY_MB)),
        stop_at_first_failure=bool(data.get("stop_at_first_failure", True)),
    )


def is_large(test: StdioTest) -> bool:
    """A test whose input or output the generated module keeps in files beside it."""
    return len(test.input) > SHOWN_CHARS or len(test.output) > SHOWN_CHARS


def _describe(test: StdioTest, case_id: str) -> str:
    """A generated test's docstring: the input and expected output (cut when long; then the
    whole texts are files beside the module)."""
    text = f"stdin:\n{_shown(test.input)}\nexpected stdout:\n{_shown(test.output)}"
    if is_large(test):
        text += (
            f"\n\nThe whole texts: {case_id}.in and {case_id}.out, in the folder named like "
            "this module."
        )
    return text


def _shown(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text.rstrip("\n")
    return text[:SHOWN_CHARS].rstrip("\n") + f"\n... ({len(text)} characters in all)"


def _call_problem(
    suite: str,
    task_id: str,
    statement: str,
    tests: Sequence[StdioTest] | Sequence[CallTest],
    fn_name: str,
    starter_code: str,
    reference: str,
    defects: Sequence[str],
    metadata: dict[str, Any],
) -> Problem:
    """A call-based problem: the value path (the sandbox returns values, this side compares)."""
    if not fn_name.isidentifier():
        raise ValueError(f"{task_id}: fn_name {fn_name!r} is not a Python identifier")
    if not all(isinstance(t, CallTest) for t in tests):
        raise TypeError(f"{task_id}: a call-based problem (fn_name) needs CallTest records")
    call_tests = [t for t in tests if isinstance(t, CallTest)]
    cases = tuple(
        CheckCase(
            case_id=case_id,
            source=f"assert {fn_name}(*{test.args!r}) == {test.expected!r}",
            mode="compare",
            calls=(f"{fn_name}(*{test.args!r})",),
            check=value_check(test.expected),
        )
        for case_id, test in zip(case_ids(call_tests), call_tests, strict=True)
    )
    prompt = f"{statement.rstrip()}\n\n{starter_code}" if starter_code else statement
    return Problem(
        suite=suite,
        task_id=task_id,
        prompt=prompt,
        entry_point=fn_name,
        cases=cases,
        reference=reference,
        candidate_names=(fn_name,),
        defects=tuple(defects),
        metadata={
            **metadata,
            "call_based": True,
            "starter_code": starter_code,
            "prompt_kind": "text",  # the statement is prose: a model answers with the function
        },
    )


def value_check(expected: Any) -> str:
    """The trusted check of a call-based test's returned value ``v[0]``.

    Floats within 1e-6 (absolute or relative, as the stdio checker), booleans by identity
    (``1 == True`` must not pass), tuples and lists alike (JSON has only lists).
    """
    if isinstance(expected, bool):
        return f"assert v[0] is {expected!r}"
    if isinstance(expected, float) and not math.isfinite(expected):
        return f"assert v[0] == float({str(expected)!r})"  # inf (NaN equals nothing)
    if isinstance(expected, float):
        return (
            f"assert isinstance(v[0], (int, float)) and not isinstance(v[0], bool) and "
            f"abs(v[0] - {expected!r}) <= max(1e-6, 1e-6 * abs({expected!r}))"
        )
    if isinstance(expected, list):
        return f"assert (list(v[0]) if isinstance(v[0], tuple) else v[0]) == {expected!r}"
    return f"assert v[0] == {expected!r}"
