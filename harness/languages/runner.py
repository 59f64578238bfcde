"""Compile a sample's program with its driver and run every case, sandboxed; decode the values.

:func:`execute` is what the harness calls instead of the Python fork server for a problem with
``metadata["language"]``: it returns the same :class:`SampleExecution`, so the trusted pytest
process judges compiled languages with the same generated check functions, messages and
partial credit as Python (:mod:`harness.verdicts`).

A run starts the driver at case ``start``; it writes one frame per case on an inherited pipe
(:mod:`harness.languages.base`). Each frame must carry this run's nonce and the next case's
index, or the run is stopped and that case fails. When the program dies, exits early or runs
past a case's limit, that case fails (crashed / timeout) and a new run starts at the next case,
so one crash never loses the other cases. Nothing the program prints on stdout counts.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from harness.languages import compile_cache, sandboxed
from harness.languages.registry import language_for
from harness.languages.types import DecodeError, PyType, decode, parse_type
from harness.records import Problem
from harness.sandbox import CaseExecution, SampleExecution

MAX_FRAME_BYTES = 8 * 1024 * 1024
TAIL_BYTES = 2000


@dataclass(frozen=True)
class NativeCase:
    case_id: str
    calls: int
    timeout_s: float


def execute(
    problem: Problem,
    program: str,
    *,
    hide: tuple[str, ...] = (),
    memory_mb: int = 1024,
    timeout_override_s: float | None = None,
) -> SampleExecution:
    """Compile ``program`` (cached by source) and run each case of ``problem`` on it."""
    started = time.monotonic()
    language = language_for(problem)
    source = compile_cache.full_source(problem, program)
    cases = native_cases(problem, timeout_override_s)
    use_bwrap = sandboxed.bubblewrap_usable()
    notes = [] if use_bwrap else ["bubblewrap unusable: limits and a private folder only"]
    try:
        built = compile_cache.compiled(language, source, hide=hide, use_bwrap=use_bwrap)
    except compile_cache.CompileInfraError as exc:
        return SampleExecution(cases={}, infra_error=str(exc), notes=notes)
    if not built.ok:
        status = "timeout" if built.timed_out else "crashed"
        message = built.message
        results = {c.case_id: CaseExecution(c.case_id, status, message=message) for c in cases}
        return SampleExecution(
            cases=results,
            stderr=built.log,
            duration_s=time.monotonic() - started,
            notes=[*notes, "compile failed"],
        )
    returns = parse_type(problem.metadata["signature"]["returns"])
    runner = _Runner(language, built.folder, cases, returns, hide, memory_mb, use_bwrap)
    try:
        results = runner.run_all()
    except _Infra as exc:
        return SampleExecution(cases={}, infra_error=str(exc), notes=notes)
    return SampleExecution(
        cases=results,
        stderr=runner.log_tail,
        duration_s=time.monotonic() - started,
        notes=[*notes, f"compile {'cached' if built.cached else f'{built.duration_s:.2f}s'}"],
    )


def native_cases(problem: Problem, override_s: float | None) -> list[NativeCase]:
    """Each case's limit: measured (the Python reference's runtime) or the language default."""
    language = language_for(problem)
    measured = bool(problem.metadata.get("reference_durations"))
    out = []
    for case in problem.cases:
        if override_s is not None:
            limit = override_s
        elif measured and case.timeout_s:
            limit = max(case.timeout_s, language.case_timeout_s / 5)
        else:
            limit = language.case_timeout_s
        out.append(NativeCase(case.case_id, len(case.calls), limit))
    return out


def worst_case_s(problem: Problem) -> float:
    """The longest a sample can take: compiling, then every case failing and restarting."""
    language = language_for(problem)
    cases = native_cases(problem, None)
    return language.compile_timeout_s + sum(c.timeout_s + language.startup_s for c in cases)


class _Infra(Exception):
    """The sandbox itself failed (never the sample's fault)."""


class _Runner:
    def __init__(
        self,
        language: Any,
        folder: str,
        cases: list[NativeCase],
        returns: PyType,
        hide: tuple[str, ...],
        memory_mb: int,
        use_bwrap: bool,
    ):
        self.language = language
        self.folder = folder
        self.cases = cases
        self.returns = returns
        self.hide = hide
        self.memory_mb = memory_mb
        self.use_bwrap = use_bwrap
        self.log_tail = ""

    def run_all(self) -> dict[str, CaseExecution]:
        results: dict[str, CaseExecution] = {}
        start = 0
        while start < len(self.cases):
            got = self._run_from(start)
            results.update(got)
            start += len(got)
        return results

    def _run_from(self, start: int) -> dict[str, CaseExecution]:
        """Run the driver from case ``start``; at least one case's result comes back."""
        build = self.language.build()
        work = sandboxed.private_folder("codeeval-run-")
        logs = tempfile.mkdtemp(prefix="codeeval-log-")
        read_fd, write_fd = os.pipe()
        uid = sandboxed.run_uid()
        if os.getuid() == 0:  # Java reopens the pipe as /proc/self/fd/N: the user must own it
            os.fchown(write_fd, uid, uid)
        nonce = secrets.token_hex(16)
        budget = sum(c.timeout_s for c in self.cases[start:]) + self.language.startup_s
        limits = sandboxed.Limits(
            memory_mb=self.memory_mb,
            cpu_s=int(budget) + 2,
            max_processes=build.max_processes,
        )
        argv = [
            part.replace("{build}", sandboxed.BUILD)
            .replace("{start}", str(start))
            .replace("{fd}", str(write_fd))
            for part in build.run
        ]
        if not self.use_bwrap:
            # No bind mounts: the build is copied where the dropped user can reach it.
            copy = os.path.join(work, "b")
            shutil.copytree(self.folder, copy)
            argv = sandboxed.host_paths(argv, work, copy)
        cmd = sandboxed.command(
            argv,
            work=work,
            build=self.folder,
            hide=self.hide,
            keep=build.keep_paths,
            limits=limits,
            use_bwrap=self.use_bwrap,
            uid=uid,
        )
        log_path = os.path.join(logs, "out")
        results: dict[str, CaseExecution] = {}
        try:
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=log,
                    pass_fds=(write_fd,),
                    env={
                        **sandboxed.environment(sandboxed.WORK if self.use_bwrap else work),
                        **dict(build.env),
                    },
                    cwd=work,
                    start_new_session=True,
                )
            os.close(write_fd)
            write_fd = -1
            try:
                assert proc.stdin is not None
                proc.stdin.write(nonce.encode() + b"\n")
                proc.stdin.close()
            except OSError:
                pass
            results = self._collect(proc, read_fd, nonce, start)
            self.log_tail = _tail(log_path)
            if _sandbox_failed(self.log_tail, results):
                raise _Infra(f"the sandbox could not start the program: {self.log_tail[:300]}")
            if not results:
                raise _Infra(f"the sandbox returned nothing: {self.log_tail[-300:]}")
        finally:
            if write_fd >= 0:
                os.close(write_fd)
            os.close(read_fd)
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)
        return results

    def _collect(
        self, proc: subprocess.Popen[bytes], fd: int, nonce: str, start: int
    ) -> dict[str, CaseExecution]:
        results: dict[str, CaseExecution] = {}
        index = start
        buffer = b""
        last = time.monotonic()
        deadline = last + self.language.startup_s  # until the driver says it is ready
        ready = False
        eof = False
        try:
            while index < len(self.cases):
                if b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    frame = _parse(line, nonce)
                    case = self.cases[index]
                    now = time.monotonic()
                    if not ready:
                        if frame is None or not frame.get("ready"):
                            frame = None  # anything before the ready frame is forged
                        else:
                            ready, last = True, now
                            deadline = now + case.timeout_s
                            continue
                    outcome = self._outcome(frame, index, case, now - last)
                    if outcome is None:  # the end marker too early, or a bad frame
                        results[case.case_id] = CaseExecution(
                            case.case_id,
                            "crashed",
                            duration_s=now - last,
                            message="the program wrote a malformed or forged result frame",
                        )
                        return results
                    results[case.case_id] = outcome
                    index += 1
                    last = now
                    if index < len(self.cases):
                        deadline = now + self.cases[index].timeout_s
                    continue
                if eof:
                    break
                wait = deadline - time.monotonic()
                if wait <= 0:
                    case = self.cases[index]
                    limit = case.timeout_s if ready else self.language.startup_s
                    what = "" if ready else " (the program did not start)"
                    results[case.case_id] = CaseExecution(
                        case.case_id,
                        "timeout",
                        duration_s=time.monotonic() - last,
                        message=f"timed out after {limit:g} s{what}",
                    )
                    return results
                readable, _, _ = select.select([fd], [], [], min(wait, 1.0))
                if readable:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        eof = True
                        continue
                    buffer += chunk
                    if len(buffer) > MAX_FRAME_BYTES:
                        case = self.cases[index]
                        results[case.case_id] = CaseExecution(
                            case.case_id, "crashed", message="result too large"
                        )
                        return results
            if index < len(self.cases):
                # The program ended (or closed the pipe) before this case's frame.
                code = _wait(proc, deadline)
                case = self.cases[index]
                if code is None:
                    results[case.case_id] = CaseExecution(
                        case.case_id, "timeout", message=f"timed out after {case.timeout_s:g} s"
                    )
                else:
                    results[case.case_id] = CaseExecution(
                        case.case_id,
                        "crashed",
                        duration_s=time.monotonic() - last,
                        message=_exit_message(code),
                    )
            return results
        finally:
            sandboxed.kill_group(proc)
            proc.wait()

    def _outcome(
        self, frame: dict[str, Any] | None, index: int, case: NativeCase, duration: float
    ) -> CaseExecution | None:
        if frame is None or frame.get("c") != index:
            return None
        if "e" in frame:
            text = str(frame["e"])[:500]
            kind, _, message = text.partition(": ")
            if not message or " " in kind:
                kind, message = "exception", text
            return CaseExecution(
                case.case_id,
                "raised",
                exception={"type": kind, "message": message},
                duration_s=duration,
            )
        values = frame.get("v")
        if not isinstance(values, list) or len(values) != case.calls:
            return None
        try:
            decoded = [decode(v, self.returns, "returned value") for v in values]
        except DecodeError as exc:
            return CaseExecution(
                case.case_id, "crashed", duration_s=duration, message=f"wrong return type: {exc}"
            )
        return CaseExecution(case.case_id, "ok", values=decoded, duration_s=duration)


def _parse(line: bytes, nonce: str) -> dict[str, Any] | None:
    """A frame of this run, or None (wrong nonce, not JSON, wrong shape)."""
    try:
        frame = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(frame, dict) or frame.get("n") != nonce:
        return None
    keys = set(frame)
    if keys == {"n", "ready"}:
        return frame if frame["ready"] is True else None
    if keys not in ({"n", "c", "v"}, {"n", "c", "e"}) or type(frame["c"]) is not int:
        return None
    return frame


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    try:
        return proc.wait(timeout=max(0.05, min(deadline - time.monotonic(), 5.0)))
    except subprocess.TimeoutExpired:
        return None


def _sandbox_failed(log: str, results: dict[str, CaseExecution]) -> bool:
    """bubblewrap, prlimit or setpriv failed before the program started (their own message)."""
    if any(r.status != "crashed" for r in results.values()):
        return False
    return log.lstrip().startswith(("bwrap:", "prlimit:", "setpriv:"))


def _exit_message(code: int) -> str:
    if code > 128:  # bubblewrap reports a child killed by a signal as 128 + its number
        code = 128 - code
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"the program was killed by {name} before returning a value"
    return f"the program exited with status {code} before returning a value"


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
