"""A problem's benchmark code compiled once: the two requests the fork server hands its children.

Stdlib only. The trusted side builds them (:mod:`harness.sandbox.problem_parts`, which keeps
them on disk between runs) and sends them with the problem's definition, so no fork server
compiles a problem's inputs: EvalPlus's HumanEval+ has 124,000 calls, 2.6 s of ``compile`` in
each server that sees them all, and ``marshal`` reads them back in a twentieth of that.

``_child_part`` is for the candidate's child (the program's setup and the compare cases' calls:
the inputs it is given, nothing of the checks), ``_judge_part`` for the judge (the sandbox-mode
checks, the test setup and the helpers); each is marshalled, and the server passes it on to the
process it forks as it is.
"""

from __future__ import annotations

import marshal
from typing import Any


def compiled_parts(problem: dict[str, Any]) -> tuple[bytes, bytes]:
    """``(child part, judge part)`` of ``problem`` (the server's definition of it: its cases'
    ``mode``, ``prelude``, ``calls`` and ``statement``, its ``entry_point``, ``test_setup``,
    ``helpers`` and ``deps_path``); the judge part is empty without sandbox-mode cases.

    Code that does not compile is left to the child, which then reports the SyntaxError
    where it belongs (the case or the test setup).
    """

    def code(source: str, mode: str, name: str = "<check>") -> Any:
        try:
            return compile(source, name, mode) if source else None
        except (SyntaxError, ValueError):
            return None

    setup = code(problem.get("test_setup", ""), "exec", "<test_setup>")
    helpers = code(problem.get("helpers", ""), "exec", "<helpers>")
    child_cases: list[dict[str, Any]] = []
    judge_cases: list[dict[str, Any]] = []
    for case in problem["cases"]:
        prelude = case.get("prelude", "")
        if case.get("mode") == "sandbox":
            child_cases.append({"mode": "sandbox"})
            judge_cases.append(
                {
                    "mode": "sandbox",
                    "prelude": prelude,
                    "prelude_code": code(prelude, "exec"),
                    "statement": case.get("statement", ""),
                    "statement_code": code(case.get("statement", ""), "exec"),
                }
            )
            continue
        judge_cases.append({"mode": case.get("mode")})
        calls = list(case.get("calls", ()))
        compiled = [code(expr, "eval") for expr in calls]
        child_cases.append(
            {
                "mode": case.get("mode"),
                "prelude": prelude,
                "prelude_code": code(prelude, "exec"),
                # The source only where it did not compile (the child reports the error).
                "calls": [
                    expr if c is None else "" for expr, c in zip(calls, compiled, strict=True)
                ],
                "calls_code": compiled,
            }
        )
    shared = {"entry_point": problem["entry_point"], "deps_path": problem.get("deps_path", "")}
    child: dict[str, Any] = {**shared, "cases": child_cases}
    if any(case["mode"] != "sandbox" for case in child_cases):
        child.update(test_setup=problem.get("test_setup", ""), test_setup_code=setup)
    judge = b""
    if any(case["mode"] == "sandbox" for case in child_cases):
        judge = marshal.dumps(
            {
                **shared,
                "cases": judge_cases,
                "test_setup": problem.get("test_setup", ""),
                "test_setup_code": setup,
                "helpers": problem.get("helpers", ""),
                "helpers_code": helpers,
            }
        )
    return marshal.dumps(child), judge
