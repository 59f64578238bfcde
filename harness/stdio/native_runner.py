"""C++, Java, Rust and JavaScript stdio programs: compile once, then run per test, warm.

The compile goes through the compiled languages' cache (:mod:`harness.languages.compile_cache`),
sandboxed; each test is then one start of the binary (or of node, or the JVM) by this worker's
warm sandbox (:mod:`harness.languages.launch`), one message each way, queued a few tests ahead:
a uid and a private folder of its own, resource limits and the filters, and everything it
started killed when the test ends. Its stdin is a
memory file holding the test's input; its stdout a memory file this trusted process made and
reads back once every process of the run is dead, so nothing written out of band, or after the
run, can count. Its size is capped by the file size limit (a write past it kills the program:
``SIGXFSZ``, an output limit verdict).
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import harness.languages.compile_cache as compile_cache
import harness.languages.launch as launch
import harness.languages.sandboxed as sandboxed
from harness.languages import get_language
from harness.languages.base import Build, Language
from harness.stdio.outcome import OUTPUT_LIMIT_BYTES, TestRun, starved

STDERR_TAIL = 2000
READ_AHEAD = 4  # tests queued in the sandbox beyond the one being judged
# Memory a runtime needs beyond the problem's limit: the JVM reserves its code cache and class
# space up front (its heap is capped at the problem's limit with -Xmx); node's heap likewise.
RUNTIME_SLACK_MB = {"cpp": 0, "rs": 0, "java": 768, "js": 512}
_JAVA_CLASS = re.compile(r"\bpublic\s+(?:final\s+)?class\s+([A-Za-z_]\w*)")
_ANY_CLASS = re.compile(r"\bclass\s+([A-Za-z_]\w*)")


class StdioBuild(Language):
    """A language's toolchain as a stdio program uses it: no driver, the program is ``main``."""

    def __init__(self, base: Language, source: str, memory_mb: int):
        self.base = base
        self.name = f"stdio-{base.name}"
        self.title = base.title
        self.compile_timeout_s = base.compile_timeout_s
        self.startup_s = base.startup_s
        self.memory_mb = memory_mb
        self.main_class = java_main_class(source) if base.name == "java" else "Main"

    def version(self) -> str:
        return self.base.version()

    def build(self) -> Build:
        base = self.base.build()
        driver_args = ("{start}", "{fd}")
        run = tuple(part for part in base.run if part not in driver_args)
        source_name = base.source_name
        compile_argv = base.compile
        if self.base.name == "java":
            source_name = f"{self.main_class}.java"
            compile_argv = tuple(
                source_name if part == base.source_name else part for part in base.compile or ()
            )
            run = tuple(
                f"-Xmx{self.memory_mb}m"
                if part.startswith("-Xmx")
                else self.main_class
                if part == "Main"
                else part
                for part in run
            )
        elif self.base.name == "js":
            run = tuple(
                f"--max-old-space-size={self.memory_mb}"
                if part.startswith("--max-old-space-size")
                else part
                for part in run
            )
        elif compile_argv is not None:  # C++ and Rust: judges compile with -O2
            compile_argv = tuple(
                "-O2" if part == "-O1" else "opt-level=2" if part == "opt-level=1" else part
                for part in compile_argv
            )
        return Build(
            source_name=source_name,
            compile=compile_argv,
            run=run,
            env=base.env,
            keep_paths=base.keep_paths,
            max_processes=base.max_processes,
        )


def java_main_class(source: str) -> str:
    """The class to run: the public one (javac wants it in its own file), else the top-level
    class that holds ``static void main``, else ``Main``."""
    public = _JAVA_CLASS.search(source)
    if public:
        return public.group(1)
    main_at = source.find("static void main")
    top_level = [
        found.group(1)
        for found in _ANY_CLASS.finditer(source, 0, max(main_at, 0))
        if source.count("{", 0, found.start()) == source.count("}", 0, found.start())
    ]
    return top_level[-1] if top_level else "Main"


@dataclass
class Prepared:
    """A program ready to run: its build folder (compiled) or source (interpreted)."""

    build: StdioBuild
    launcher: launch.WarmSandbox
    folder: str
    source: str
    compile_s: float
    cached: bool
    toolchain: Build | None = None  # build.build(), made once

    def steps(self) -> Build:
        if self.toolchain is None:
            self.toolchain = self.build.build()
        return self.toolchain


@dataclass(frozen=True)
class CompileFailure:
    message: str
    log: str
    timed_out: bool


def prepare(
    language: str, source: str, *, hide: tuple[str, ...], memory_mb: int
) -> Prepared | CompileFailure:
    """Compile ``source`` (cached by its text), or say why it did not compile.

    Raises :class:`launch.LaunchError` or ``compile_cache.CompileInfraError`` when the sandbox
    itself fails (an infrastructure error, never the program's).
    """
    build = StdioBuild(get_language(language), source, memory_mb)
    toolchain = build.build()
    use_bwrap = sandboxed.bubblewrap_usable()
    where = launch.launcher(hide, toolchain.keep_paths, use_bwrap, compile_cache.cache_root())
    if toolchain.compile is None:
        return Prepared(build, where, "", source, 0.0, True, toolchain)
    built = compile_cache.compiled(build, source, launcher=where)
    if not built.ok:
        return CompileFailure(built.message, built.log, built.timed_out)
    return Prepared(build, where, built.folder, source, built.duration_s, built.cached, toolchain)


def run_tests(
    prepared: Prepared,
    inputs: Sequence[str],
    time_limit_s: float,
    memory_mb: int,
    keep_going: Callable[[TestRun], bool],
) -> Generator[TestRun, None, None]:
    """Run the prepared program on each input in order, until ``keep_going`` says stop.

    Tests are queued a few ahead of the one being judged (the sandbox runs them one after
    another, each a fresh process, uid and folder): the spawner goes from one test to the next
    while this process judges. The window grows only while tests end normally, so a program
    that loops from the first test costs one time limit, and the tests queued behind a failed
    one are cancelled (the running one killed, the others never started)."""
    memory_mb += RUNTIME_SLACK_MB.get(prepared.build.base.name, 0)
    queue: list[_Queued] = []
    submitted, window = 0, 0
    try:
        for index, text in enumerate(inputs):
            while submitted < len(inputs) and len(queue) <= window:
                queue.append(_submit(prepared, inputs[submitted], time_limit_s, memory_mb))
                submitted += 1
            run = _collect(prepared, queue.pop(0))
            if starved(run, time_limit_s):  # once more: the machine may have been busy
                _drop(prepared, queue)  # its turn comes first
                queue, submitted = [], index + 1
                run = run_one(prepared, text, time_limit_s, memory_mb)
            yield run
            if not keep_going(run):
                return
            window = min(READ_AHEAD, window + 1) if run.end == "exited" else 0
    finally:
        _drop(prepared, queue)  # queued behind a failure: cancelled, never judged


def run_one(prepared: Prepared, text: str, time_limit_s: float, memory_mb: int) -> TestRun:
    """One start of the program with ``text`` on stdin; its output read after it ended."""
    return _collect(prepared, _submit(prepared, text, time_limit_s, memory_mb))


@dataclass
class _Queued:
    """A test submitted to the sandbox: its folder and its stdin, stdout and stderr."""

    folder: launch.Folder
    fds: list[int]
    submitted: float


def _submit(prepared: Prepared, text: str, time_limit_s: float, memory_mb: int) -> _Queued:
    build = prepared.steps()
    launcher = prepared.launcher
    uid = sandboxed.run_uid()
    folder = launcher.private(uid)
    fds: list[int] = []
    try:
        if build.compile is None:
            path = os.path.join(folder.host, build.source_name)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(prepared.source)
            os.chmod(path, 0o644)
            build_path = folder.inside
        else:
            build_path = launcher.build_path(prepared.folder, folder)
        fds.append(_memory_file("stdin", text.encode("utf-8")))
        fds.append(os.memfd_create("stdout"))
        fds.append(os.memfd_create("stderr"))
        limits = sandboxed.Limits(
            memory_mb=memory_mb,
            cpu_s=int(math.ceil(time_limit_s)) + 1,
            max_processes=build.max_processes,
            max_file_mb=OUTPUT_LIMIT_BYTES // (1024 * 1024),
        )
        argv = [
            part.replace(sandboxed.WORK, folder.inside).replace("{build}", build_path)
            for part in build.run
        ]
        launcher.submit(
            argv,
            cwd=folder,
            env={**sandboxed.environment(folder.inside), **dict(build.env)},
            limits=limits,
            uid=uid,
            fds=fds,
            timeout=time_limit_s + _startup_allowance(prepared),
        )
    except BaseException:
        for fd in fds:
            os.close(fd)
        launcher.remove(folder)
        raise
    return _Queued(folder, fds, time.monotonic())


def _collect(prepared: Prepared, queued: _Queued) -> TestRun:
    """The oldest submitted test's run: the spawner answers once every process of it is
    dead, so its output is read only then."""
    _, stdout, stderr = queued.fds
    try:
        done = prepared.launcher.collect()
        output = os.pread(stdout, OUTPUT_LIMIT_BYTES + 1, 0)
        tail = _tail(stderr)
    finally:
        for fd in queued.fds:
            os.close(fd)
        prepared.launcher.remove(queued.folder)
    code, usage = done.code, done.resources
    duration = done.wall_s or time.monotonic() - queued.submitted
    text_out = output.decode("utf-8", "replace")
    if code is None:
        return TestRun("timeout", text_out, duration_s=duration, stderr_tail=tail, resources=usage)
    if len(output) > OUTPUT_LIMIT_BYTES:
        return TestRun("output_limit", duration_s=duration, stderr_tail=tail, resources=usage)
    if code != 0 and _out_of_memory(tail):
        return TestRun(
            "memory", text_out, code=code, duration_s=duration, stderr_tail=tail, resources=usage
        )
    if code < 0:
        return TestRun(
            "signal", text_out, code=-code, duration_s=duration, stderr_tail=tail, resources=usage
        )
    return TestRun(
        "exited", text_out, code=code, duration_s=duration, stderr_tail=tail, resources=usage
    )


def _drop(prepared: Prepared, queue: list[_Queued]) -> None:
    """Cancel queued tests that will not be judged (the running one is killed, the others
    never start: a program that loops costs one time limit), and clean up after them."""
    if not queue:
        return
    try:
        prepared.launcher.cancel()
    except launch.LaunchError:
        pass  # the sandbox is gone, and its runs with it
    finally:
        for queued in queue:
            for fd in queued.fds:
                os.close(fd)
            prepared.launcher.remove(queued.folder)


def _startup_allowance(prepared: Prepared) -> float:
    """Wall time a runtime needs to start before the program reads its input (JVM, node)."""
    return {"java": 1.0, "js": 0.5}.get(prepared.build.base.name, 0.0)


def _out_of_memory(stderr: str) -> bool:
    """The runtime said it ran out of memory (the JVM, node, C++'s bad_alloc, Rust's abort)."""
    markers = ("OutOfMemoryError", "heap out of memory", "std::bad_alloc", "memory allocation of")
    return any(marker in stderr for marker in markers)


def _memory_file(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _tail(fd: int) -> str:
    size = os.fstat(fd).st_size
    return os.pread(fd, STDERR_TAIL, max(0, size - STDERR_TAIL)).decode("utf-8", "replace")
