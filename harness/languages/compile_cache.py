"""Compile a program with its driver inside the sandbox; keep the result by source hash.

The key is the language, its toolchain version, the build command and the full source (the
candidate's program and the driver), so the same completion is compiled once however often it
is evaluated (RL batches repeat themselves). Compile errors are kept too (they are as
deterministic as successes); timeouts and sandbox failures are not (they may be the load).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from harness.languages import sandboxed
from harness.languages.base import Language
from harness.languages.registry import language_for
from harness.languages.translate import Signature
from harness.languages.types import parse_type
from harness.paths import cache_dir
from harness.records import Problem

MAX_MESSAGE = 1500
RESULT_FILE = "result.json"


class CompileInfraError(RuntimeError):
    """The sandbox could not run the compiler (not the sample's fault)."""


@dataclass(frozen=True)
class Compiled:
    ok: bool
    folder: str  # the build folder (the sandbox binds it read-only at /tmp/b)
    message: str = ""
    log: str = ""
    timed_out: bool = False
    killed: bool = False  # the compiler died of a signal (a limit: memory, CPU)
    cached: bool = False
    duration_s: float = 0.0


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
    build = language.build()
    payload = json.dumps([language.name, language.version(), build.compile, build.run, source])
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def cache_root() -> str:
    return str(cache_dir() / "languages")


def compiled(
    language: Language, source: str, *, hide: tuple[str, ...] = (), use_bwrap: bool = True
) -> Compiled:
    """The build of ``source``: from the cache, or compiled now in the sandbox."""
    key = source_key(language, source)
    final = os.path.join(cache_root(), language.name, key[:2], key)
    hit = _read_result(final)
    if hit is not None:
        return hit
    build = language.build()
    os.makedirs(os.path.dirname(final), exist_ok=True)
    if use_bwrap:
        # Compiled where it is kept: the build becomes the cache entry by a rename, not a copy
        # (a Rust binary is megabytes). The sandbox reaches it through its bind mount.
        work = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(final))
        os.chmod(work, 0o777)
    else:  # no bind mounts: a folder the dropped user can reach by its path
        work = sandboxed.private_folder("codeeval-build-")
    logs = tempfile.mkdtemp(prefix="codeeval-log-")
    started = time.monotonic()
    try:
        with open(os.path.join(work, build.source_name), "w", encoding="utf-8") as fh:
            fh.write(source)
        os.chmod(os.path.join(work, build.source_name), 0o644)
        if build.compile is None:
            result = Compiled(True, final)
        else:
            result = _run_compiler(language, work, logs, hide, use_bwrap, started)
        if not result.ok and (result.timed_out or result.killed):
            # Not kept: a timeout or a kill (memory, CPU) may be this machine's load.
            return Compiled(False, "", result.message, result.log, timed_out=result.timed_out)
        if use_bwrap:
            staging = work
        else:
            staging = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(final))
            for name in os.listdir(work):
                shutil.move(os.path.join(work, name), os.path.join(staging, name))
        os.chmod(staging, 0o755)
        meta = {"ok": result.ok, "message": result.message, "log": result.log[-4000:]}
        with open(os.path.join(staging, RESULT_FILE), "w") as fh:
            json.dump(meta, fh)
        _make_readable(staging)
        try:
            os.rename(staging, final)
        except OSError:  # another worker got there first: its build is the same
            shutil.rmtree(staging, ignore_errors=True)
        return Compiled(
            result.ok, final, result.message, result.log, duration_s=time.monotonic() - started
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)


def _run_compiler(
    language: Language, work: str, logs: str, hide: tuple[str, ...], use_bwrap: bool, started: float
) -> Compiled:
    build = language.build()
    assert build.compile is not None
    limits = sandboxed.Limits(
        memory_mb=2048,
        cpu_s=int(language.compile_timeout_s) + 5,
        max_processes=max(build.max_processes, 64),
        max_file_mb=256,
    )
    argv = list(build.compile)
    if not use_bwrap:
        argv = sandboxed.host_paths(argv, work, None)
    cmd = sandboxed.command(
        argv,
        work=work,
        build=None,
        hide=hide,
        keep=build.keep_paths,
        limits=limits,
        use_bwrap=use_bwrap,
        uid=sandboxed.run_uid(),
    )
    log_path = os.path.join(logs, "compile")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={
                **sandboxed.environment(sandboxed.WORK if use_bwrap else work),
                **dict(build.env),
            },
            cwd=work,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=language.compile_timeout_s)
        except subprocess.TimeoutExpired:
            sandboxed.kill_group(proc)
            proc.wait()
            text = _read(log_path)
            return Compiled(
                False,
                "",
                f"compilation timed out after {language.compile_timeout_s:g} s",
                text,
                timed_out=True,
            )
    text = _read(log_path)
    if text.lstrip().startswith(("bwrap:", "prlimit:", "setpriv:")):
        raise CompileInfraError(f"the sandbox could not start the compiler: {text[:300]}")
    if code == 0:
        return Compiled(True, "", log=text)
    if code < 0 or code > 128:  # a signal (bubblewrap reports 128 + its number)
        number = -code if code < 0 else code - 128
        message = f"the compiler was killed by signal {number} (a memory or CPU limit)"
        return Compiled(False, "", message, text, killed=True)
    first = _first_error(text) or f"the compiler exited with status {code}"
    return Compiled(False, "", f"compile error: {first}"[:MAX_MESSAGE], text)


def _first_error(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if "error" in line.lower():
            return " | ".join(lines[i : i + 3])
    return " | ".join(lines[:3])


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""


def _read_result(folder: str) -> Compiled | None:
    try:
        with open(os.path.join(folder, RESULT_FILE)) as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    return Compiled(bool(meta["ok"]), folder, meta["message"], meta.get("log", ""), cached=True)


def _make_readable(folder: str) -> None:
    """The build is run by ``nobody`` from a read-only bind: everything must be readable."""
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            path = os.path.join(root, name)
            os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
