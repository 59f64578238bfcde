"""A problem's special judge: a program from the data that decides, sandboxed apart from the
candidate.

The judge (Python source) runs in its own forked child of the Python fork server, never in the
candidate's process or folder: the candidate's output reaches it only as data, written into
the judge's private folder as ``output.txt`` beside ``input.txt`` and ``answer.txt``. It is
called as ``judge input.txt output.txt answer.txt`` (testlib's order) and accepts with exit
status 0, rejects with 1. Anything else (another status, an exception, a time-out) is the
judge's fault: the test fails as ``judge_error``, it never passes.
"""

from __future__ import annotations

from harness.sandbox import CaseRequest, SampleRequest, Sandbox
from harness.stdio.checkers import Comparison

ENTRY = "__codeeval_judge__"
JUDGE_TIME_LIMIT_S = 10.0

_WRAPPER = """
def {entry}(test_input, output, answer, _sys=__import__("sys"), _io=__import__("io"),
            _source=_JUDGE):
    for name, text in (("input.txt", test_input), ("output.txt", output),
                       ("answer.txt", answer)):
        with open(name, "w", encoding="utf-8") as fh:
            fh.write(text)
    _sys.argv = ["judge", "input.txt", "output.txt", "answer.txt"]
    said = _io.StringIO()
    _sys.stdout = said
    try:
        exec(compile(_source, "judge.py", "exec"), {{"__name__": "__main__",
                                                     "__builtins__": __builtins__}})
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return [code, said.getvalue()[-300:]]
"""


def judge_program(judge_source: str) -> str:
    return f"_JUDGE = {judge_source!r}\n" + _WRAPPER.format(entry=ENTRY)


def run_judge(
    sandbox: Sandbox, judge_source: str, test_input: str, output: str, answer: str
) -> tuple[Comparison, bool]:
    """The judge's decision on ``output``, and whether the judge itself failed."""
    call = f"{ENTRY}({test_input!r}, {output!r}, {answer!r})"
    request = SampleRequest(
        program=judge_program(judge_source),
        entry_point=ENTRY,
        cases=(CaseRequest("judge", "compare", calls=(call,), timeout_s=JUDGE_TIME_LIMIT_S),),
        budget_s=JUDGE_TIME_LIMIT_S + 1.0,
    )
    execution = sandbox.run(request)
    case = execution.cases.get("judge")
    if execution.infra_error or case is None:
        why = execution.infra_error or "no result"
        return Comparison(False, f"special judge could not run: {why}"), True
    if case.status != "ok" or not case.values or not isinstance(case.values[0], list):
        detail = case.message or (case.exception or {}).get("message", "") or case.status
        return Comparison(False, f"special judge failed: {detail}"[:300]), True
    code, said = (case.values[0] + [0, ""])[:2]
    if code == 0:
        return Comparison(True), False
    if code == 1:
        return Comparison(False, f"special judge: wrong answer {str(said).strip()}"[:300]), False
    return Comparison(False, f"special judge exited with status {code}"), True
