"""Compile a program with its driver in the sandbox; keep the result by source hash.

The key is the language, its toolchain version, the build command and the full source (the
candidate's program and the driver), so the same completion is compiled once however often it
is evaluated (RL batches repeat themselves). Compile errors are kept too (they are as
deterministic as successes); timeouts and sandbox failures are not (they may be the load).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from typing import Any

import harness.languages.sandboxed as sandboxed
from harness.languages.base import Language
from harness.languages.launch import Folder, WarmSandbox, closed_dirs, empty_resources
from harness.languages.registry import language_for
from harness.languages.translate import Signature
from harness.languages.types import parse_type
from harness.paths import cache_dir
from harness.records import Problem
from harness.sandbox import bwrap

MAX_MESSAGE = 1500
MAX_ERROR_LINE = 400
RESULT_FILE = "result.json"


class CompileInfraError(RuntimeError):
    """The sandbox could not run the compiler (not the sample's fault). Decided only from
    what the candidate cannot write: the spawner's answer, never the compiler's output (it
    quotes the candidate's source: a ``#error bwrap: ...`` is a compile error)."""


@dataclass(frozen=True)
class Compiled:
    ok: bool
    folder: str  # the build folder: a cache entry
    message: str = ""
    log: str = ""
    timed_out: bool = False
    killed: bool = False  # the compiler died of a signal (a limit: memory, CPU)
    cached: bool = False
    duration_s: float = 0.0
    # The compiler's accounting (docs/formats.md, ``compile_*``); zeros when cached.
    resources: dict[str, Any] = dataclasses.field(default_factory=empty_resources)


def signature_of(problem: Problem) -> Signature:
    data = problem.metadata["signature"]
    params = tuple((name, parse_type(t)) for name, t in data["params"])
    return Signature(data["name"], params, parse_type(data["returns"]))


def case_arguments(problem: Problem) -> list[list[tuple[Any, ...]]]:
    """Each case's calls as Python argument tuples (stored as literal text in metadata)."""
    stored = problem.metadata["call_args"]
    return [
        [tuple(ast.literal_eval(a) for a in call) for call in stored[case.case_id]]
        for case in problem.cases
    ]


_drivers: dict[tuple[str, str, str], str] = {}


def _driver(problem: Problem) -> str:
    """The problem's driver (generated once per problem and process)."""
    key = (problem.suite, problem.task_id, problem.fingerprint())
    text = _drivers.get(key)
    if text is None:
        if len(_drivers) > 2048:
            _drivers.clear()
        language = language_for(problem)
        text = _drivers[key] = language.driver(signature_of(problem), case_arguments(problem))
    return text


def full_source(problem: Problem, program: str) -> str:
    """The program the compiler sees: the candidate's program, then the generated driver."""
    return program.rstrip("\n") + "\n" + _driver(problem)


def source_key(language: Language, source: str) -> str:
    """The cache key. The sandbox's mode is part of it: a toolchain sees a different machine
    with and without bubblewrap, so a compile error seen in one mode says nothing of the other."""
    build = language.build()
    mode = "bwrap" if bwrap.bwrap_available() else "nobwrap"
    payload = json.dumps(
        [language.name, language.version(), mode, build.compile, build.run, source]
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def cache_root() -> str:
    return str(cache_dir() / "languages")


def entry_path(language: Language, source: str) -> str:
    key = source_key(language, source)
    return os.path.join(cache_root(), language.name, key[:2], key)


def compiled(language: Language, source: str, *, launcher: WarmSandbox) -> Compiled:
    """The build of ``source``: from the cache, or compiled now by ``launcher`` (sandboxed)."""
    final = entry_path(language, source)
    hit = _read_result(final)
    if hit is not None:
        return hit
    build = language.build()
    assert build.compile is not None, f"{language.name} has no compile step"
    parent = os.path.dirname(final)
    if not os.path.isdir(parent):
        # Closed folders (enter, not list): a run reaches its own build by its hash only.
        for folder in (cache_root(), os.path.dirname(parent), parent):
            closed_dirs(folder)
    uid = sandboxed.run_uid()
    # Compiled where it is kept (in the warm sandbox): the build becomes the cache entry by a
    # rename, not a copy (a Rust binary is megabytes).
    folder = launcher.compile_folder(parent, uid)
    started = time.monotonic()
    try:
        path = os.path.join(folder.host, build.source_name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        os.chmod(path, 0o644)
        result = _run_compiler(language, folder, launcher, uid, started)
        if not result.ok and (result.timed_out or result.killed):
            # Not kept: a timeout or a kill (memory, CPU) may be this machine's load.
            return result
        meta = {"ok": result.ok, "message": result.message, "log": result.log[-4000:]}
        _write_result(folder.host, meta)
        launcher.keep(folder, final)
        return dataclasses.replace(result, folder=final)
    finally:
        shutil.rmtree(folder.host, ignore_errors=True)  # gone already when it was kept


def _run_compiler(
    language: Language, folder: Folder, launcher: WarmSandbox, uid: int, started: float
) -> Compiled:
    build = language.build()
    assert build.compile is not None
    limits = sandboxed.Limits(
        memory_mb=2048,
        cpu_s=int(language.compile_timeout_s) + 5,
        max_processes=max(build.max_processes, 64),
        max_file_mb=256,
    )
    log = os.memfd_create("codeeval-compile")
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        run = launcher.start(
            build.compile,
            cwd=folder,
            env={**sandboxed.environment(folder.inside), **dict(build.env)},
            limits=limits,
            uid=uid,
            fds=(devnull, log, log),
        )
        os.close(devnull)
        devnull = -1
        code = run.wait(language.compile_timeout_s)
        resources = run.finish()
        text = _read(log)
    finally:
        os.close(log)
        if devnull >= 0:
            os.close(devnull)
    duration = time.monotonic() - started
    done = functools.partial(
        Compiled, folder="", log=text, duration_s=duration, resources=resources
    )
    if code is None:
        message = f"compilation timed out after {language.compile_timeout_s:g} s"
        return done(False, message=message, timed_out=True)
    if code == 0:
        return done(True)
    if code < 0 or code > 128:  # a signal (a shell would report 128 + its number)
        number = -code if code < 0 else code - 128
        message = f"the compiler was killed by signal {number} (a memory or CPU limit)"
        return done(False, message=message, killed=True)
    first = _first_error(text) or f"the compiler exited with status {code}"
    return done(False, message=f"compile error: {first}"[:MAX_MESSAGE])


def _write_result(folder: str, meta: dict[str, Any]) -> None:
    """``RESULT_FILE`` in ``folder``, which the compile's uid could write (its processes are
    dead by now): whatever it left under that name is removed, never followed or opened."""
    dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        try:
            os.unlink(RESULT_FILE, dir_fd=dirfd)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            shutil.rmtree(os.path.join(folder, RESULT_FILE))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with os.fdopen(os.open(RESULT_FILE, flags, 0o644, dir_fd=dirfd), "w") as fh:
            json.dump(meta, fh)
    finally:
        os.close(dirfd)


def _first_error(text: str) -> str:
    """The first error and the two lines after it. A linker's command line (hundreds of
    characters of arguments) is left out: the linker's own error follows it."""
    lines = [
        line.rstrip()
        for line in text.splitlines()
        if line.strip() and len(line) <= MAX_ERROR_LINE and "note: some arguments" not in line
    ]
    for i, line in enumerate(lines):
        if "error" in line.lower():
            return " | ".join(lines[i : i + 3])
    return " | ".join(lines[:3])


def _read(fd: int) -> str:
    return os.pread(fd, 64 * 1024, 0).decode("utf-8", "replace")


def _read_result(folder: str) -> Compiled | None:
    try:
        with open(os.path.join(folder, RESULT_FILE)) as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    return Compiled(bool(meta["ok"]), folder, meta["message"], meta.get("log", ""), cached=True)
