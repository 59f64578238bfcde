"""Type-directed translation of a Python problem's signature and check calls.

What a typed language needs from a Python problem: the entry point's parameters with types,
its return type, and, for every check case, the literal arguments of each candidate call (the
driver calls the candidate with them; the expected values stay on the trusted side).

Types come from the prompt's annotations where there are any, unified with the types of the
values the checks pass and the reference returns on them (MultiPL-E annotates by hand; MBPP has
no annotations at all); a place whose values have different types (or whose annotation says
``Any``) gets the Union of their exact types (:mod:`harness.languages.unions`). The reference
runs once, in the sandbox (an inline problem's reference and tests come with a request), and
its results are kept in a :class:`~harness.memo.DiskMemo`.

Anything that does not fit (a check that is not ``candidate(literals...)``, a value of a type
with no translation, a reference that fails) raises :class:`Untranslatable` with the reason;
the suite adapter lists it as the problem's data defect.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

from harness.analyzers.structure import entry_function
from harness.languages.types import PyType, Untranslatable, conforms, from_annotation, resolve
from harness.languages.unions import type_of_values
from harness.memo import DiskMemo, source_version
from harness.records import Problem

REFERENCE_TIMEOUT_S = 60.0
_MEMO = DiskMemo("language_reference_results", source_version(__file__))


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[tuple[str, PyType], ...]
    returns: PyType


@dataclass(frozen=True)
class Translation:
    """A problem's signature, its docstring, and each case's calls as argument tuples."""

    signature: Signature
    doc: str
    calls: dict[str, tuple[tuple[Any, ...], ...]]  # case_id -> the argument tuples of its calls
    dropped: tuple[str, ...] = ()  # cases with no translation (they ran inside Python's sandbox)


def translate(problem: Problem) -> Translation:
    """The translation of ``problem`` (Untranslatable: why there is none).

    Checks that run inside the Python sandbox (loops over random inputs, checks that call the
    candidate's own helpers) have no translation; they are dropped, as MultiPL-E drops them,
    when plain call checks remain (listed in :attr:`Translation.dropped`).
    """
    if problem.defects:
        raise Untranslatable(f"the Python problem has a defect: {problem.defects[0]}")
    function = _entry_function(problem)
    names = [a.arg for a in function.args.args]
    if function.args.vararg or function.args.kwarg or function.args.kwonlyargs:
        raise Untranslatable("the entry point takes *args, **kwargs or keyword-only arguments")
    kept = [c for c in problem.cases if c.mode == "compare"]
    dropped = tuple(c.case_id for c in problem.cases if c.mode != "compare")
    if not kept:
        raise Untranslatable("no check is a plain call of the candidate")
    for case in kept:
        for text in case.calls:
            _check_call(text, problem, len(names))
    evaluated = reference_results(problem, [(c.prelude, c.calls) for c in kept])
    calls: dict[str, tuple[tuple[Any, ...], ...]] = {}
    for case, per_case in zip(kept, evaluated, strict=True):
        calls[case.case_id] = tuple(args for args, _ in per_case)
    every = [pair for per_case in evaluated for pair in per_case]
    types = [
        type_of_values((args[i] for args, _ in every), from_annotation(a.annotation))
        for i, a in enumerate(function.args.args)
    ]
    returns = type_of_values((value for _, value in every), from_annotation(function.returns))
    params = tuple((n, resolve(t)) for n, t in zip(names, types, strict=True))
    signature = Signature(problem.entry_point, params, resolve(returns))
    for per_case in calls.values():
        for args in per_case:
            for (name, t), value in zip(params, args, strict=True):
                if not conforms(value, t):
                    raise Untranslatable(f"argument {name}={value!r} does not fit type {t}"[:200])
    return Translation(signature, ast.get_docstring(function) or "", calls, dropped)


def _entry_function(problem: Problem) -> ast.FunctionDef:
    node = entry_function((problem.prompt, problem.reference), problem.entry_point)
    if node is not None:
        return node
    raise Untranslatable(f"no top-level function {problem.entry_point} in prompt or reference")


def _check_call(text: str, problem: Problem, arity: int) -> None:
    call = ast.parse(text, mode="eval").body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise Untranslatable(f"check call {text[:80]} is not a plain call")
    if call.func.id not in ("candidate", problem.entry_point):
        raise Untranslatable(f"check call {text[:80]} calls {call.func.id}, not the entry point")
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        raise Untranslatable(f"check call {text[:80]} uses keyword or starred arguments")
    if len(call.args) != arity:
        raise Untranslatable(f"check call {text[:80]} passes {len(call.args)} of {arity} arguments")


# Runs in the sandbox (harness.sandbox): the reference, test setup and preludes are the
# benchmark's, or an inline problem's from a request, never run in the trusted process. Many
# problems' jobs go to one sample (a suite loads in one run, not 164).
_RUNNER = r"""
import ast, copy, signal

def run(job):
    scope = {}
    exec(compile(job["program"], "reference", "exec"), scope)
    function = scope[job["entry_point"]]
    setup = {}
    exec(compile(job["test_setup"], "test_setup", "exec"), setup)
    out = []
    for prelude, calls in job["cases"]:
        names = dict(setup)
        exec(compile(prelude, "prelude", "exec"), names)
        results = []
        for text in calls:
            call = ast.parse(text, mode="eval").body
            args = tuple(eval(compile(ast.Expression(a), "args", "eval"), names) for a in call.args)
            value = function(*copy.deepcopy(args))
            results.append([repr(args), repr(value)])
        out.append(results)
    return out

def alarm(*_):
    raise TimeoutError("the Python reference timed out on the check calls")

def run_all(jobs):
    signal.signal(signal.SIGALRM, alarm)
    replies = []
    for job in jobs:
        signal.alarm(int(job["timeout"]))
        try:
            replies.append({"ok": run(job)})
        except BaseException as exc:
            replies.append({"error": f"{type(exc).__name__}: {exc}"[:200]})
        signal.alarm(0)
    return replies
"""


def _job(problem: Problem, cases: list[tuple[str, tuple[str, ...]]]) -> dict[str, Any]:
    return {
        "program": problem.program_setup + "\n" + problem.reference,
        "entry_point": problem.entry_point,
        "test_setup": problem.test_setup,
        "cases": [[prelude, list(calls)] for prelude, calls in cases],
        "timeout": REFERENCE_TIMEOUT_S,
    }


def prefetch(problems: list[Problem]) -> None:
    """Run the references of every problem not in the memo yet, in one subprocess."""
    jobs = []
    for problem in problems:
        kept = [(c.prelude, c.calls) for c in problem.cases if c.mode == "compare"]
        if problem.defects or not kept or not problem.reference.strip():
            continue
        job = _job(problem, kept)
        if _MEMO.get(DiskMemo.key(job)) is None:
            jobs.append(job)
    if jobs:
        _run_jobs(jobs)


def _run_jobs(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each job's reply (``ok`` or ``error``), run in the sandbox; successful ones are kept in
    the memo."""
    from harness.sandbox import CaseRequest, SampleRequest, SandboxSettings
    from harness.sandbox.shared import shared_sandbox

    limit = REFERENCE_TIMEOUT_S * len(jobs) + 30
    program = f"{_RUNNER}\nimport json\nJOBS = json.loads({json.dumps(jobs)!r})\n"
    case = CaseRequest("jobs", "compare", calls=("candidate(JOBS)",), timeout_s=limit)
    request = SampleRequest(program, "run_all", (case,), budget_s=limit + 10)
    result = shared_sandbox(SandboxSettings()).run(request)
    outcome = result.cases["jobs"]
    replies = outcome.values[0] if outcome.status == "ok" and outcome.values else []
    if not isinstance(replies, list):
        replies = []
    replies = [r if isinstance(r, dict) else {"error": "a malformed reply"} for r in replies]
    replies = replies[: len(jobs)]
    replies += [{"error": "the reference runner stopped"}] * (len(jobs) - len(replies))
    for job, reply in zip(jobs, replies, strict=True):
        if "ok" in reply:
            _MEMO.put(DiskMemo.key(job), reply["ok"])
    return replies


def reference_results(
    problem: Problem, cases: list[tuple[str, tuple[str, ...]]]
) -> list[list[tuple[tuple[Any, ...], Any]]]:
    """For each case's calls: the argument values and what the Python reference returns.

    Arguments are evaluated as the check writes them (``candidate(3 * 19)``, ``candidate(lst)``
    after the case's prelude); the results are plain literals, cached on disk.
    """
    if not problem.reference.strip():
        raise Untranslatable("no reference solution to infer the types from")
    job = _job(problem, cases)
    texts = _MEMO.get(DiskMemo.key(job))
    if texts is None:
        reply = _run_jobs([job])[0]
        if "error" in reply:
            raise Untranslatable(f"the Python reference fails on the check calls: {reply['error']}")
        texts = reply["ok"]
    try:
        return [[(ast.literal_eval(a), ast.literal_eval(v)) for a, v in case] for case in texts]
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise Untranslatable("an argument or result is not a plain literal") from None
