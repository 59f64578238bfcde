"""Python stdio programs: each test is a fresh forked child of the warm fork server.

No interpreter starts per test. Each test is one request to the Python sandbox
(:mod:`harness.sandbox`): the server forks a confined child, which puts the test's input on
fd 0 (a memory file, so ``input()``, ``sys.stdin.buffer`` and ``open(0)`` all read it) and runs
the program as ``__main__``. Its stdout is fd 1, a memory file the *server* made and reads back
(bounded), never a value the child sends: whatever the program does inside its process, the
only output that counts is what reached fd 1. The child's own reply says only how the program
ended (an exit status or an exception), and a lie there cannot make a wrong output right.

Tests are submitted a few ahead of the one being judged (the server runs them one after
another); with ``stop_at_first_failure`` nothing is submitted after a failure.
"""

from __future__ import annotations

import dataclasses
import re
import signal
import time
from collections.abc import Callable, Generator, Sequence

from harness.sandbox import CaseRequest, SampleExecution, SampleRequest, Sandbox
from harness.stdio.outcome import OUTPUT_LIMIT_BYTES, TestRun, starved

ENTRY = "__codeeval_stdio__"
READ_AHEAD = 4  # tests queued on the fork server beyond the one being judged
PYTHON_MEMORY_SLACK_MB = 256  # the interpreter and the server's preloaded image (address space)

# Runs the candidate's source as __main__ with the test's input on fd 0. The names it keeps are
# bound as defaults when the server defines it, before any candidate code runs.
_WRAPPER = """
def {entry}(text, _os=__import__("os"), _io=__import__("io"), _sys=__import__("sys"),
            _threading=__import__("threading"), _source=_SOURCE):
    # A file of the work folder (no memfd: the sandbox refuses it to candidates), gone from
    # the folder before the program runs.
    fd = _os.open(".stdin", _os.O_RDWR | _os.O_CREAT | _os.O_EXCL | _os.O_TRUNC, 0o600)
    _os.unlink(".stdin")
    data = text.encode("utf-8")
    while data:
        data = data[_os.write(fd, data):]
    _os.lseek(fd, 0, 0)
    _os.dup2(fd, 0)
    _os.close(fd)
    _sys.stdin = _io.TextIOWrapper(_io.BufferedReader(_io.FileIO(0, "r", closefd=False)))
    out = _io.TextIOWrapper(_io.BufferedWriter(_io.FileIO(1, "w", closefd=False)))
    _sys.stdout = out
    _sys.argv = ["solution.py"]
    code = 0
    try:
        exec(compile(_source, "solution.py", "exec"), {{"__name__": "__main__",
                                                        "__builtins__": __builtins__}})
        for thread in _threading.enumerate():  # a process waits for its non-daemon threads
            if thread is not _threading.current_thread() and not thread.daemon:
                thread.join()
    except SystemExit as stop:
        if stop.code is None or stop.code is True or stop.code is False:
            code = int(bool(stop.code))
        elif isinstance(stop.code, int):
            code = stop.code & 0xFF
        else:
            print(stop.code, file=_sys.stderr)
            code = 1
    finally:
        try:
            _sys.stdout.flush()
        except BaseException:
            pass
        try:
            out.flush()
        except BaseException:
            pass
    return code
"""


def python_program(source: str) -> str:
    """The program the fork server runs for the stdio program ``source``."""
    return f"_SOURCE = {source!r}\n" + _WRAPPER.format(entry=ENTRY)


def test_request(program: str, text: str, time_limit_s: float, seed: int = 0) -> SampleRequest:
    """One test: the program, and one call with the test's input."""
    case = CaseRequest(
        case_id="t", mode="compare", calls=(f"{ENTRY}({text!r})",), timeout_s=time_limit_s
    )
    return SampleRequest(
        program=program,
        entry_point=ENTRY,
        cases=(case,),
        budget_s=time_limit_s + 1.0,
        seed=seed,
    )


def run_tests(
    sandbox: Sandbox,
    source: str,
    inputs: Sequence[str],
    time_limit_s: float,
    keep_going: Callable[[TestRun], bool],
) -> Generator[TestRun, None, None]:
    """Run ``source`` on each input in order; stop submitting once ``keep_going`` is False."""
    program = python_program(source)
    tickets: list[int] = []
    submitted = 0
    stopped = False
    window = 0  # grows with each test that went on: a program that loops from the first test
    # on costs one time limit, not one per test queued ahead
    try:
        for _ in inputs:
            while not stopped and submitted < len(inputs) and len(tickets) <= window:
                tickets.append(
                    sandbox.submit(test_request(program, inputs[submitted], time_limit_s))
                )
                submitted += 1
            index = submitted - len(tickets)
            started = time.monotonic()
            execution = sandbox.collect(tickets.pop(0))
            run = to_test_run(execution, time.monotonic() - started)
            if starved(run, time_limit_s):  # once more: the machine may have been busy
                started = time.monotonic()
                again = sandbox.run(test_request(program, inputs[index], time_limit_s))
                run = to_test_run(again, time.monotonic() - started)
            yield run
            if not keep_going(run):
                stopped = True
                return
            window = min(READ_AHEAD, window + 1) if run.end == "exited" else 0
    finally:
        for ticket in tickets:  # queued before the failure: collected, never judged
            sandbox.collect(ticket)


def to_test_run(execution: SampleExecution, waited_s: float) -> TestRun:
    """The fork server's execution of one test as a :class:`TestRun`."""
    if execution.infra_error:
        return TestRun("error", detail=execution.infra_error)
    stdout = execution.stdout
    case = execution.cases.get("t")
    if case is None:
        return TestRun("error", stdout, detail="the sandbox returned no result for the test")
    duration = case.duration_s or waited_s
    usage = execution.resources
    if len(stdout.encode("utf-8", "replace")) > OUTPUT_LIMIT_BYTES:
        return TestRun("output_limit", duration_s=duration, resources=usage)
    tail = execution.stderr[-2000:]
    if case.status == "ok":
        values = case.values or [0]
        code = values[0] if isinstance(values[0], int) and not isinstance(values[0], bool) else 0
        return TestRun(
            "exited", stdout, code=code, duration_s=duration, stderr_tail=tail, resources=usage
        )
    if case.status == "timeout":
        return TestRun("timeout", stdout, duration_s=duration, stderr_tail=tail, resources=usage)
    if case.status == "raised":
        exc = case.exception or {}
        kind, text = exc.get("type", "Exception"), exc.get("message", "")
        end = "memory" if kind == "MemoryError" else "raised"
        return TestRun(
            end,
            stdout,
            detail=f"{kind}: {text}",
            duration_s=duration,
            stderr_tail=tail,
            resources=usage,
        )
    if case.status == "error":
        return TestRun("error", stdout, detail=case.message, duration_s=duration)
    return dataclasses.replace(_crashed(case.message, stdout, duration, tail), resources=usage)


def _crashed(message: str, stdout: str, duration: float, tail: str) -> TestRun:
    """The child died (``os._exit``, a signal, the memory limit): how, from the server's words."""
    lowered = message.lower()
    if "memory" in lowered:
        return TestRun("memory", stdout, detail=message, duration_s=duration, stderr_tail=tail)
    found = re.search(r"signal (\d+)|SIG[A-Z0-9]+", message)
    if found:
        number = int(found.group(1)) if found.group(1) else int(getattr(signal, found.group(0), 0))
        return TestRun("signal", stdout, code=number, detail=message, duration_s=duration)
    status = re.search(r"status (-?\d+)|code (-?\d+)", message)
    code = int(next(g for g in status.groups() if g is not None)) if status else 1
    return TestRun("exited", stdout, code=code, detail=message, duration_s=duration)
