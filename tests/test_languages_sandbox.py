"""The warm sandbox of compiled languages (harness.languages.launch) and its accounting.

Real bubblewrap, a real spawner: each test starts programs in it (a shell for the isolation
properties, node for the accounting of a sample) and checks what the kernel shows. The
accounting of every language through ``execute`` and a pytest session's rows is here too; C++,
Java and Rust compile, so they are in the slow tier.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from shutil import which
from typing import Any

import pytest

from harness.languages import compile_cache, launch, sandboxed, starter
from harness.sandbox import bwrap_available

NEEDS_BWRAP = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here")
MODES = [pytest.param(True, id="bwrap", marks=NEEDS_BWRAP), pytest.param(False, id="nobwrap")]
MIB = 1024 * 1024
ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="runs drop to their own uid as root")


@pytest.fixture(params=MODES)
def sandbox(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[launch.WarmSandbox]:
    box = launch.WarmSandbox((), (), str(tmp_path / "cache"), request.param)
    yield box
    box.close()


def sh(box: launch.WarmSandbox, script: str, timeout: float = 20.0) -> tuple[int | None, str, dict]:
    """Run ``sh -c script`` as a fresh uid in a fresh private folder: (code, output, usage)."""
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
        code = run.wait(timeout)
        usage = run.finish()
        return code, os.pread(log, 1 << 16, 0).decode(), usage
    finally:
        os.close(log)
        os.close(devnull)
        box.remove(folder)


@ROOT_ONLY
def test_each_run_has_its_own_uid_and_a_private_folder(sandbox: launch.WarmSandbox) -> None:
    script = "id -u; pwd; stat -c '%u %a' .; ls .. 2>&1; echo x > mine && echo wrote"
    first, second = sh(sandbox, script), sh(sandbox, script)
    uid1, cwd1, stat1, listing1, wrote1 = first[1].split("\n")[:5]
    uid2, cwd2 = second[1].split("\n")[:2]
    assert first[0] == 0 and wrote1 == "wrote"
    assert int(uid1) >= sandboxed.UID_BASE and uid1 != uid2 and cwd1 != cwd2
    assert stat1 == f"{uid1} 700"
    assert "Permission denied" in listing1  # the others' folders cannot be listed
    assert not os.path.exists(os.path.join(sandbox.runs, os.path.basename(cwd1)))


@ROOT_ONLY
def test_the_view_is_read_only_hidden_and_offline(sandbox: launch.WarmSandbox) -> None:
    if not sandbox.use_bwrap:
        pytest.skip("without bubblewrap the view is the host's")
    repository = Path(__file__).resolve().parents[1]
    script = (
        f"cat {repository}/pyproject.toml 2>/dev/null && echo 'read the repository'; "
        "for p in /tmp/x /dev/shm/x /usr/x /tmp/cache/x /tmp/runs/x; do "
        '  (echo y > "$p") 2>/dev/null && echo "wrote $p"; done; '
        "kill -9 1 2>/dev/null && echo 'killed 1'; "
        "tail -n +3 /proc/net/dev | cut -d: -f1"
    )
    code, out, _ = sh(sandbox, script)
    assert code == 0 and "read" not in out and "wrote" not in out and "killed" not in out
    assert [line.strip() for line in out.splitlines()] == ["lo"]  # no network but loopback
    assert sh(sandbox, "echo alive")[1] == "alive\n"  # the spawner survived


@ROOT_ONLY
def test_what_a_run_leaves_behind_is_killed_and_counted(sandbox: launch.WarmSandbox) -> None:
    # A daemon in its own session, still burning CPU when the run ends.
    script = "setsid sh -c 'while :; do :; done' & sleep 0.5; id -u"
    code, out, usage = sh(sandbox, script)
    uid = out.strip()
    assert code == 0
    alive = subprocess.run(["ps", "-o", "pid=", "-u", uid], capture_output=True, text=True)
    assert alive.stdout.strip() == ""
    assert usage["cpu_user_s"] + usage["cpu_system_s"] > 0.02  # the daemon's share counts


def test_a_run_past_its_limit_is_killed_whole(sandbox: launch.WarmSandbox) -> None:
    uid = sandboxed.run_uid()
    folder = sandbox.private(uid)
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        run = sandbox.start(
            ["/bin/sh", "-c", "sleep 100 & sleep 100 & while :; do :; done"],
            cwd=folder,
            env=sandboxed.environment(folder.inside),
            limits=sandboxed.Limits(),
            uid=uid,
            fds=(devnull, devnull, devnull),
        )
        assert run.wait(0.3) is None
        usage = run.finish()
    finally:
        os.close(devnull)
        sandbox.remove(folder)
    assert usage["cpu_user_s"] + usage["cpu_system_s"] > 0.01
    if launch.DROP_UID:
        alive = subprocess.run(["ps", "-o", "pid=", "-u", str(uid)], capture_output=True)
        assert alive.stdout.strip() == b""


@ROOT_ONLY
@pytest.mark.skipif(which("ipcmk") is None, reason="ipcmk (util-linux) is not installed")
def test_ipc_objects_do_not_outlive_their_run(sandbox: launch.WarmSandbox) -> None:
    """Refused (the seccomp filter, where the Python sandbox's module is there) or removed
    when the run ends; counted by their owner (without bubblewrap the host's namespace may
    hold others' objects)."""
    mine = 'ipcs -m -q | grep -c " {uid} " || true'
    script = f"ipcmk -M 4096 -p 0666; ipcmk -Q -p 0666; id -u; {mine.format(uid='$(id -u)')}"
    code, out, _ = sh(sandbox, script)
    uid, count = out.split()[-2:]
    refused = out.count("Operation not permitted")
    assert code == 0 and int(count) + refused == 2, out
    assert sh(sandbox, mine.format(uid=uid))[1].strip() == "0"


def test_limits_hold(sandbox: launch.WarmSandbox) -> None:
    limits = {
        line[:26].strip(): line[26:].split()[0]
        for line in sh(sandbox, "cat /proc/self/limits")[1].splitlines()[1:]
    }
    assert limits["Max data size"] == str(1024 * MIB)
    assert limits["Max processes"] == "64" and limits["Max open files"] == "256"
    assert limits["Max file size"] == str(16 * MIB) and limits["Max core file size"] == "0"
    assert limits["Max msgqueue size"] == "0" and limits["Max cpu time"] == "30"
    bomb = sh(sandbox, "i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done 2>&1 | head -1")
    assert "fork" in bomb[1].lower() or "resource" in bomb[1].lower(), bomb[1]


def test_a_spawn_works_when_the_prepared_child_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the native starter every start is a fork of the spawner, prepared ahead."""
    monkeypatch.setenv(starter.ENV_SWITCH, "fork")
    box = launch.WarmSandbox((), (), str(tmp_path / "cache"), False)  # the spawner is proc
    try:
        assert sh(box, "echo one")[1] == "one\n"
        for _ in range(200):  # forked right after the end of the run was answered
            prepared = [
                int(pid)
                for pid in os.listdir("/proc")
                if pid.isdigit() and _parent(pid) == box.proc.pid
            ]
            if prepared:
                break
            time.sleep(0.01)
        assert len(prepared) == 1  # the next program's process, forked while nothing runs
        os.kill(prepared[0], 9)
        while _state(prepared[0]) not in ("Z", ""):  # dead (its socket closed), not reaped
            time.sleep(0.01)
        assert sh(box, "echo two")[1] == "two\n"  # forked at the spawn instead
    finally:
        box.close()


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return ""
    return stat[stat.rindex(b")") + 2 :].split()[0].decode()


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return 0
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def test_a_spawn_the_spawner_refuses_is_an_infrastructure_error(
    sandbox: launch.WarmSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer to a spawn is read with the next request: a refusal still surfaces."""
    monkeypatch.setattr(launch, "_limits", lambda limits: {"no such limit": 1})
    with pytest.raises(launch.LaunchError, match="no such limit"):
        sh(sandbox, "echo never")
    monkeypatch.undo()
    assert sh(sandbox, "echo after")[1] == "after\n"  # the sandbox goes on


def test_the_spawner_refuses_to_run_outside_a_pid_namespace() -> None:
    spawner = Path(launch.__file__).with_name("spawner.py")
    done = subprocess.run([sys.executable, str(spawner), "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "PID 1" in done.stderr  # kill(-1) would reach the host


@NEEDS_BWRAP
def test_a_sandbox_per_thread_and_setting(tmp_path: Path) -> None:
    import threading

    cache = str(tmp_path / "cache")
    first = launch.launcher((), (), True, cache)
    assert launch.launcher((), (), True, cache) is first
    assert launch.launcher(("/nonexistent",), (), True, cache) is not first
    other: list[Any] = []
    thread = threading.Thread(target=lambda: other.append(launch.launcher((), (), True, cache)))
    thread.start()
    thread.join()
    assert other[0] is not first
    assert launch.launcher((), (), False, cache).use_bwrap is False
    # A cache folder deleted and made again is a new folder: the old bind would not see it.
    shutil.rmtree(cache)
    os.makedirs(cache)
    assert not first.alive()
    assert launch.launcher((), (), True, cache) is not first


def test_the_cache_folders_cannot_be_listed(sandbox: launch.WarmSandbox) -> None:
    assert os.stat(sandbox.cache).st_mode & 0o777 == 0o711


# -- the two ways a run starts: the native starter, or a fork of the spawner ------------------
SPAWNS = ["native", "fork"]
NEEDS_STARTER = pytest.mark.skipif(starter.path() is None, reason="no C compiler to build it")


def _box(tmp_path: Path, use_bwrap: bool, spawn: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    if spawn == "fork":
        monkeypatch.setenv(starter.ENV_SWITCH, "fork")
    elif starter.path() is None:
        pytest.skip("the native starter could not be built here (no C compiler)")
    return launch.WarmSandbox((), (), str(tmp_path / "cache"), use_bwrap)


@ROOT_ONLY
@pytest.mark.parametrize("spawn", SPAWNS)
@pytest.mark.parametrize("use_bwrap", MODES)
def test_a_run_is_confined_the_same_whichever_way_it_starts(
    use_bwrap: bool, spawn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own uid and no groups, no capabilities, no_new_privs, the seccomp filter, the
    kernel's first choice when memory runs out, its own session, only fds 0-2, the limits."""
    box = _box(tmp_path, use_bwrap, spawn, monkeypatch)
    script = (
        "grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Amb)|NoNewPrivs|Seccomp):' /proc/self/status;"
        " cat /proc/self/oom_score_adj; echo $$; cut -d' ' -f6 /proc/self/stat; ls /proc/self/fd;"
        " grep -E 'processes|data size' /proc/self/limits"
    )
    try:
        code, out, _ = sh(box, script)
    finally:
        box.close()
    assert code == 0, out
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    uid = fields["Uid"].split()
    assert len(set(uid)) == 1 and int(uid[0]) >= sandboxed.UID_BASE
    assert fields["Gid"].split() == uid and fields["Groups"].strip() == ""
    for caps in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(fields[caps], 16) == 0, (caps, fields[caps])
    assert fields["NoNewPrivs"].strip() == "1" and fields["Seccomp"].strip() == "2"
    rest = [line for line in out.splitlines() if ":" not in line]
    limits = {line[:26].strip(): line[26:].split()[:2] for line in rest if line.startswith("Max")}
    oom, shell, session, *fds = [line for line in rest if not line.startswith("Max")]
    assert oom == "1000"
    assert session == shell  # the shell leads its own session (cut is its child)
    assert sorted(fds) == ["0", "1", "2", "3"]  # 3: ls's own listing of the folder
    assert limits == {"Max data size": [str(1 << 30)] * 2, "Max processes": ["64", "64"]}


@pytest.mark.parametrize("spawn", SPAWNS)
def test_without_bubblewrap_a_run_reads_and_writes_only_its_view(
    spawn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Landlock's allow-list, enforced by the run itself before its exec: a world-readable
    folder outside it cannot be read, nor anything written outside the run folders."""
    if not os.path.isdir("/var/tmp") or not os.access("/var/tmp", os.W_OK):
        pytest.skip("no writable /var/tmp")
    outside = Path(tempfile.mkdtemp(prefix="codeeval-view-", dir="/var/tmp"))
    try:
        outside.chmod(0o755)
        (outside / "secret").write_text("secret\n")
        (outside / "secret").chmod(0o644)
        box = _box(tmp_path, False, spawn, monkeypatch)
        try:
            code, out, _ = sh(
                box,
                f"cat {outside}/secret; ls {outside}; echo x > /var/tmp/codeeval-planted-$$;"
                " echo x > mine && cat mine",
            )
        finally:
            box.close()
        assert not list(Path("/var/tmp").glob("codeeval-planted-*"))
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    if "secret\n" in out and not _landlock():
        pytest.skip("this kernel has no Landlock: the machine's files are readable")
    assert "secret\n" not in out and "x\n" in out, out  # its own folder stays writable


def _landlock() -> bool:
    from harness.sandbox.inside import seccomp

    return seccomp.landlock_abi() > 0


@NEEDS_STARTER
@pytest.mark.parametrize("use_bwrap", MODES)
def test_the_native_starter_starts_programs_without_forking_the_spawner(
    use_bwrap: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork of the spawner's Python image (its page tables, copy-on-write faults and the
    teardown at the exec) cost a start ~2 ms of CPU: with the starter no process is prepared
    beside the spawner, and each run's parent is the spawner itself."""
    box = _box(tmp_path, use_bwrap, "native", monkeypatch)
    try:
        code, out, _ = sh(box, "cut -d' ' -f4 /proc/self/stat; cat /proc/$PPID/cmdline")
        spawner = box.proc.pid if not use_bwrap else int(_children(box.proc.pid)[0])
        time.sleep(0.2)  # a fork of the spawner would be prepared by now
        beside = _children(spawner)
    finally:
        box.close()
    assert code == 0 and "spawner.py" in out.replace("\0", " "), out
    assert beside == [], beside


def _children(pid: int) -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == pid]


@pytest.mark.parametrize("spawn", SPAWNS)
@pytest.mark.parametrize("use_bwrap", MODES)
def test_a_step_before_the_exec_that_fails_is_the_spawners_answer(
    use_bwrap: bool, spawn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that is not there: the start fails before the exec, an infrastructure error
    from the status pipe, never the program's output; the sandbox goes on."""
    box = _box(tmp_path, use_bwrap, spawn, monkeypatch)
    uid = sandboxed.run_uid()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        gone = launch.Folder("/nonexistent/run", "/nonexistent/run")
        box.submit(
            ["/bin/true"], cwd=gone, env=sandboxed.environment(gone.inside),
            limits=sandboxed.Limits(), uid=uid, fds=(devnull, devnull, devnull), timeout=5,
        )  # fmt: skip
        with pytest.raises(launch.LaunchError, match="spawner: cannot start /bin/true"):
            box.collect()
        assert sh(box, "echo after")[1] == "after\n"
    finally:
        os.close(devnull)
        box.close()


# -- accounting of a sample -------------------------------------------------------------------
def _problem(language: str) -> Any:
    from suites.registry import load_suite

    return {p.task_id: p for p in load_suite(f"humaneval-{language}")}[f"{language}/HumanEval/53"]


def _execute(language: str, body: str) -> dict[str, Any]:
    from harness.completions import assemble_program
    from harness.languages.runner import execute

    problem = _problem(language)
    execution = execute(problem, assemble_program(problem, body).program, timeout_override_s=20)
    assert execution.infra_error is None, execution.infra_error
    bad = {k: c.message for k, c in execution.cases.items() if c.status != "ok"}
    assert not bad, (bad, execution.stderr[-2000:])
    return execution.resources


# add(x, y) in each language, with work done in the first case (x == 0): a CPU loop of a fixed
# amount of work (~0.3 s or more here), or ~200 MB written (120 MB for the JVM's 256 MB heap).
ADD = {
    "js": "  {work}\n  return x + y;\n}}\n",
    "cpp": "  if (x == 0) {{ {work} }}\n  return x + y;\n}}\n",
    "java": "        if (x == 0) {{ {work} }}\n        return x + y;\n    }}\n}}\n",
    "rs": "    if x == 0 {{ {work} }}\n    x + y\n}}\n",
}
BUSY = {  # xorshift: a serial chain an optimizer cannot shorten
    "js": "if (x === 0) { let h = 1; for (let i = 0; i < 3e8; i++) h = (h * 31 + i) | 0; if (h === 42) return -1; }",
    "cpp": "unsigned long h = 1 + y; for (long i = 0; i < 300000000L; i++) { h ^= h << 13; h ^= h >> 7; h ^= h << 17; h += i; } if (h == 42) return -1;",
    "java": "long h = 1 + y; for (long i = 0; i < 300000000L; i++) { h ^= h << 13; h ^= h >>> 7; h ^= h << 17; h += i; } if (h == 42) return -1;",
    "rs": "let mut h: u64 = 1 + y as u64; for i in 0..300_000_000u64 { h ^= h << 13; h ^= h >> 7; h ^= h << 17; h = h.wrapping_add(i); } if h == 42 { return -1; }",
}
ALLOC = {
    "js": "if (x === 0) { const b = Buffer.alloc(200 * 1024 * 1024, 1); if (b[12345] === 7) return -1; }",
    "cpp": "std::vector<char> v(200L << 20, 1); if (v[12345] == 7) return -1;",
    "java": "byte[] v = new byte[120 << 20]; java.util.Arrays.fill(v, (byte) 1); if (v[12345] == 7) return -1;",
    "rs": "let v = vec![1u8; 200 << 20]; if v[12345] == 7 { return -1; }",
}
WRITE = {
    "js": "if (x === 0) require('fs').writeFileSync('out.bin', Buffer.alloc(5 * 1024 * 1024, 1));",
    "cpp": 'std::string s(5L << 20, 1); FILE* f = fopen("out.bin", "wb"); fwrite(s.data(), 1, s.size(), f); fclose(f);',
    "java": 'try { java.nio.file.Files.write(java.nio.file.Path.of("out.bin"), new byte[5 << 20]); } catch (Exception e) { return -1; }',
    "rs": 'std::fs::write("out.bin", vec![1u8; 5 << 20]).unwrap();',
}


def _accounting(language: str) -> None:
    def run(work: str) -> dict[str, Any]:
        return _execute(language, ADD[language].format(work=work))

    plain, busy, alloc, write = (
        run(""),
        run(BUSY[language]),
        run(ALLOC[language]),
        run(WRITE[language]),
    )
    assert busy["cpu_user_s"] >= 0.2 and busy["cpu_user_s"] >= plain["cpu_user_s"] + 0.15
    peak = 120 if language == "java" else 200
    assert alloc["max_rss_kib"] >= plain["max_rss_kib"] + (peak - 20) * 1024
    assert plain["max_rss_kib"] < peak * 1024
    assert write["wchar"] >= 5 * MIB and plain["wchar"] < 64 * 1024
    # A memory file system: the 5 MiB the candidate wrote to its folder never reach a disk.
    # (A page or two of a runtime's own may, elsewhere: a JVM's, once, under a loaded CI.)
    assert write["write_bytes"] < MIB and plain["write_bytes"] < 64 * 1024
    for usage in (plain, busy, alloc, write):
        assert set(launch.empty_resources()) <= set(usage)
        if language != "js":
            assert usage["compile_cpu_user_s"] > 0 and usage["compile_max_rss_kib"] > 0
        else:
            assert usage["compile_cpu_user_s"] == 0


@pytest.mark.parametrize("use_bwrap", MODES)
def test_js_accounting_of_a_run(use_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if which("node") is None:
        pytest.skip("node is not installed")
    if not use_bwrap:
        monkeypatch.setenv("CODEEVAL_SANDBOX", "nobwrap")
    _accounting("js")


@pytest.mark.slow
@pytest.mark.parametrize("language", ["cpp", "java", "rs"])
def test_accounting_of_a_compiled_run(
    language: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.languages.registry import get_language

    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path))  # compiled now, in an empty cache

    try:
        get_language(language).version()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    _accounting(language)
    # The cache's folders can be entered, not listed; its builds are root's and read-only.
    root = Path(compile_cache.cache_root())
    for folder in (root, root / language, *(root / language).iterdir()):
        assert folder.stat().st_mode & 0o777 == 0o711, folder
    for entry in (root / language).glob("*/*"):
        assert entry.stat().st_uid == os.getuid() and entry.stat().st_mode & 0o777 == 0o755
        for item in entry.iterdir():
            assert item.stat().st_uid == os.getuid() and not item.stat().st_mode & 0o022


def test_rows_of_a_session_carry_the_run_and_compile_accounting(
    pytester: pytest.Pytester,
) -> None:
    if which("node") is None:
        pytest.skip("node is not installed")
    body = ADD["js"]
    rows = [
        {"task_id": "js/HumanEval/53", "sample_id": name, "completion": body.format(work=work)}
        for name, work in (("plain", ""), ("busy", BUSY["js"]), ("alloc", ALLOC["js"]))
    ]
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval-js", "--llm-samples", str(samples), "--llm-out", "out",
        "--llm-timeout", "20", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    by_id = {
        r["sample_id"]: r for r in map(json.loads, (pytester.path / "out/results.jsonl").open())
    }
    execution = {k: r["execution"] for k, r in by_id.items()}
    assert execution["busy"]["cpu_user_s"] >= execution["plain"]["cpu_user_s"] + 0.15
    assert execution["alloc"]["max_rss_kib"] >= execution["plain"]["max_rss_kib"] + 180 * 1024
    for row in execution.values():
        assert row["max_rss_kb"] == row["max_rss_kib"] > 0
        assert row["wchar"] > 0 and row["compile_cpu_user_s"] == 0.0
