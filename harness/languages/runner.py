"""Compile a sample's program with its driver and run every case, sandboxed; decode the values.

:func:`execute` is what the harness calls instead of the Python fork server for a problem with
``metadata["language"]``: it returns the same :class:`SampleExecution`, so the trusted pytest
process judges compiled languages with the same generated check functions, messages and
partial credit as Python (:mod:`harness.pipeline.verdicts`).

A run starts the driver at case ``start``; it writes one frame per case on an inherited pipe
(:mod:`harness.languages.base`). The channel accepts exactly one sequence: the start frame, one
frame per case from ``start`` on, in order, of the right shape and with this run's nonce, then
the end marker. The driver runs in the candidate's process and the candidate can read the
nonce, so any deviation before the end marker (a frame before the start, a duplicate, a frame
out of order, a malformed one) is the candidate's: the whole sample fails as ``corrupted
result channel``, never an infrastructure error. Nothing after the end marker is read: the
run is killed at once (waiting for a program to exit cost JavaScript ~15% of a sample), and
nothing written after the end could change a verdict anyway. When
the program dies, exits early or runs past a case's limit, that case fails (crashed / timeout)
and a new run starts at the next case, so one crash never loses the other cases. Nothing the
program prints counts, and nothing it prints decides an infrastructure error: only the
spawner's own answers do (:mod:`harness.languages.spawner`'s status pipe).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import time
from dataclasses import dataclass
from typing import Any

import harness.languages.compile_cache as compile_cache
import harness.languages.launch as launch
import harness.languages.sandboxed as sandboxed
from harness.languages.registry import language_for
from harness.languages.types import DecodeError, PyType, parse_type
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
    build = language.build()
    try:
        where = launch.launcher(hide, build.keep_paths, use_bwrap, compile_cache.cache_root())
        if build.compile is None:  # interpreted: the run parses the source (see _Runner)
            built = compile_cache.Compiled(True, "")
        else:
            built = compile_cache.compiled(language, source, launcher=where)
    except (compile_cache.CompileInfraError, launch.LaunchError) as exc:
        return SampleExecution(cases={}, infra_error=str(exc), notes=notes)
    compile_usage = {f"compile_{k}": v for k, v in built.resources.items()}
    if not built.ok:
        status = "timeout" if built.timed_out else "crashed"
        return _unbuilt(cases, status, built.message, built.log, started, notes, compile_usage)
    returns = parse_type(problem.metadata["signature"]["returns"])
    runner = _Runner(language, where, built.folder, source, cases, returns, memory_mb)
    try:
        results = runner.run_all()
    except launch.LaunchError as exc:
        return SampleExecution(cases={}, infra_error=str(exc), notes=notes)
    if runner.parse_error is not None:  # the run that found it is accounted as a run
        usage = {**runner.resources, **compile_usage}
        return _unbuilt(
            cases, "crashed", runner.parse_error, runner.log_tail, started, notes, usage
        )
    if build.compile is not None:
        notes.append(f"compile {'cached' if built.cached else f'{built.duration_s:.2f}s'}")
    return SampleExecution(
        cases=results,
        stderr=runner.log_tail,
        duration_s=time.monotonic() - started,
        max_rss_kb=int(runner.resources["max_rss_kib"]),
        notes=notes,
        resources={**runner.resources, **compile_usage},
    )


def _unbuilt(
    cases: list[NativeCase],
    status: str,
    message: str,
    log: str,
    started: float,
    notes: list[str],
    usage: dict[str, Any],
) -> SampleExecution:
    """Every case failed by a program that did not compile (or, interpreted, parse)."""
    results = {c.case_id: CaseExecution(c.case_id, status, message=message) for c in cases}
    resources = {**launch.empty_resources(), **usage}
    return SampleExecution(
        cases=results,
        stderr=log,
        duration_s=time.monotonic() - started,
        max_rss_kb=int(resources["max_rss_kib"]),
        notes=[*notes, "compile failed"],
        resources=resources,
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


class _Corrupted(Exception):
    """The result channel deviated from the one sequence a driver writes (the sample's fault:
    the driver shares its process with the candidate, so any deviation is the candidate's)."""


class _Runner:
    def __init__(
        self,
        language: Any,
        launcher: launch.WarmSandbox,
        folder: str,
        source: str,
        cases: list[NativeCase],
        returns: PyType,
        memory_mb: int,
    ):
        self.language = language
        self.launcher = launcher
        self.folder = folder  # the build (compiled languages)
        self.source = source  # the program (interpreted languages: written into each run)
        self.cases = cases
        self.returns = returns
        self.memory_mb = memory_mb
        self.log_tail = ""
        self.ready = False
        self.parse_error: str | None = None
        self.resources = launch.empty_resources()

    def run_all(self) -> dict[str, CaseExecution]:
        results: dict[str, CaseExecution] = {}
        start = 0
        while start < len(self.cases):
            try:
                got = self._run_from(start)
            except _Corrupted as exc:
                # The channel is the candidate's process's: one deviation and no frame of
                # the sample can be trusted, earlier runs' included.
                message = f"corrupted result channel: {exc}"
                return {
                    c.case_id: CaseExecution(c.case_id, "crashed", message=message)
                    for c in self.cases
                }
            if start == 0 and not self.ready:
                # An interpreted program that never started may not have parsed: that is its
                # compile error (the syntax part of a reward), and no later run would parse.
                self.parse_error = self.language.parse_error(self.log_tail)
                if self.parse_error is not None:
                    return {}
            results.update(got)
            start += len(got)
        return results

    def _run_from(self, start: int) -> dict[str, CaseExecution]:
        """Run the driver from case ``start``; at least one case's result comes back."""
        build = self.language.build()
        uid = sandboxed.run_uid()
        folder = self.launcher.private(uid)
        fds: list[int] = []
        try:
            if build.compile is None:
                path = os.path.join(folder.host, build.source_name)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(self.source)
                os.chmod(path, 0o644)
                build_path = folder.inside
            else:
                build_path = self.launcher.build_path(self.folder, folder)
            read_fd, write_fd = os.pipe()
            fds += [read_fd, write_fd]
            if os.getuid() == 0:  # Java reopens the pipe as /proc/self/fd/N: the user must own it
                os.fchown(write_fd, uid, uid)
            nonce = secrets.token_hex(16)
            stdin_read, stdin_write = os.pipe()
            fds += [stdin_read, stdin_write]
            os.write(stdin_write, nonce.encode() + b"\n")  # a line fits in the pipe's buffer
            os.close(stdin_write)
            fds.remove(stdin_write)
            log = os.memfd_create("codeeval-run")
            fds.append(log)
            budget = sum(c.timeout_s for c in self.cases[start:]) + self.language.startup_s
            limits = sandboxed.Limits(
                memory_mb=self.memory_mb,
                cpu_s=int(budget) + 2,
                max_processes=build.max_processes,
            )
            argv = [
                part.replace(sandboxed.WORK, folder.inside)
                .replace("{build}", build_path)
                .replace("{start}", str(start))
                .replace("{fd}", str(launch.CHANNEL_FD))
                for part in build.run
            ]
            run = self.launcher.start(
                argv,
                cwd=folder,
                env={**sandboxed.environment(folder.inside), **dict(build.env)},
                limits=limits,
                uid=uid,
                fds=(stdin_read, log, log, write_fd),
            )
            for fd in (stdin_read, write_fd):  # the program holds them now
                os.close(fd)
                fds.remove(fd)
            try:
                results = self._collect(run, read_fd, nonce, start)
            finally:
                launch.add_resources(self.resources, run.finish())
                self.log_tail = _tail(log)
        finally:
            for fd in fds:
                os.close(fd)
            self.launcher.remove(folder)
        return results

    def _collect(
        self, run: launch.Run, fd: int, nonce: str, start: int
    ) -> dict[str, CaseExecution]:
        """Read the frames of a run started at case ``start``: the results. The only sequence accepted is the ready frame, one frame per case
        from ``start`` in order, then the end marker; anything else raises :class:`_Corrupted`
        (a crash, an early exit or a timeout only ends the run at that case)."""
        results: dict[str, CaseExecution] = {}
        index = start
        buffer = b""
        last = time.monotonic()
        deadline = last + self.language.startup_s  # until the driver says it is ready
        ready = False
        eof = False
        while True:
            if b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                frame = _parse(line, nonce)
                now = time.monotonic()
                if frame is None:
                    raise _Corrupted("a malformed frame, or one without this run's nonce")
                if not ready:
                    if "ready" not in frame:
                        raise _Corrupted("a frame before the driver started")
                    ready, last = True, now
                    self.ready = True
                    deadline = now + self._limit(index)
                    continue
                if "ready" in frame:
                    raise _Corrupted("a second start frame")
                if index == len(self.cases):
                    if "done" not in frame:
                        raise _Corrupted("a frame after the last case")
                    return results
                case = self.cases[index]
                if "done" in frame:
                    raise _Corrupted(f"the end marker before case {index}")
                if frame["c"] != index:
                    raise _Corrupted(f"a frame for case {frame['c']} where case {index} was due")
                results[case.case_id] = self._outcome(frame, case, now - last)
                index += 1
                last = now
                deadline = now + self._limit(index)
                continue
            if eof:
                break
            wait = deadline - time.monotonic()
            if wait <= 0:
                if index == len(self.cases):
                    raise _Corrupted("no end marker after the last case")
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
                if len(buffer) > MAX_FRAME_BYTES and b"\n" not in buffer:
                    if index == len(self.cases):
                        raise _Corrupted("a frame after the last case")
                    case = self.cases[index]
                    results[case.case_id] = CaseExecution(
                        case.case_id, "crashed", message="result too large"
                    )
                    return results
        if index == len(self.cases):  # every case came, the end marker did not
            raise _Corrupted("the channel ended without the end marker")
        # The program ended (or closed the pipe) before this case's frame.
        code = run.wait(max(0.05, min(deadline - time.monotonic(), 5.0)))
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

    def _limit(self, index: int) -> float:
        """How long the frame after case ``index - 1`` may take (the end marker: the last
        case's limit; the driver writes it at once)."""
        return self.cases[min(index, len(self.cases) - 1)].timeout_s

    def _outcome(self, frame: dict[str, Any], case: NativeCase, duration: float) -> CaseExecution:
        if "e" in frame:
            text = frame["e"][:500]
            kind, _, message = text.partition(": ")
            if not message or " " in kind:
                kind, message = "exception", text
            return CaseExecution(
                case.case_id,
                "raised",
                exception={"type": kind, "message": message},
                duration_s=duration,
            )
        values = frame["v"]
        if len(values) != case.calls:
            raise _Corrupted(f"{len(values)} values for a case of {case.calls} calls")
        try:
            decoded = [self.language.decode_result(v, self.returns) for v in values]
        except RecursionError:  # nested deeper than any declared type
            return CaseExecution(
                case.case_id, "crashed", duration_s=duration, message="wrong return type"
            )
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
    if keys in ({"n", "ready"}, {"n", "done"}):
        return frame if frame.get("ready", frame.get("done")) is True else None
    if keys not in ({"n", "c", "v"}, {"n", "c", "e"}) or type(frame["c"]) is not int:
        return None
    if not isinstance(frame.get("v", []), list) or not isinstance(frame.get("e", ""), str):
        return None
    return frame


def _exit_message(code: int) -> str:
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"the program was killed by {name} before returning a value"
    return f"the program exited with status {code} before returning a value"


def _tail(fd: int) -> str:
    size = os.fstat(fd).st_size
    return os.pread(fd, TAIL_BYTES, max(0, size - TAIL_BYTES)).decode("utf-8", "replace")
