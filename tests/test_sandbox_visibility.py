"""The interpreter stays visible to the sandboxed child wherever it lives, and the probe says so.

Real virtualenvs, real bubblewrap, real fork servers: a venv under ``/tmp`` (the sandbox's own
``/tmp`` is a fresh tmpfs), a venv inside a 0700 home made from an interpreter under another
0700 folder (the child runs as an unprivileged uid of its own when the tests run as root), and
the probe that stops a run with one message when the sandbox cannot run candidates. The venv
tests run in both modes: without bubblewrap the interpreter is read through Landlock's view.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import SandboxSettings, bwrap_available
from harness.sandbox import bwrap as bw
from harness.sandbox.uids import UID_BASE

REPO = Path(__file__).resolve().parents[1]
needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap does not work here")


@pytest.fixture
def mode(sandbox_mode: str) -> str:
    """Both sandbox modes, for this process and the venvs' drivers it starts."""
    return sandbox_mode


def _own_uid(uid: int) -> bool:
    """As root, the child runs as a leased uid, never root's or a shared one (nobody)."""
    return os.getuid() != 0 or uid >= UID_BASE


# Run by a venv's interpreter: one sample in the real sandbox, the result as JSON on stdout.
DRIVER = """
import json, sys
from harness.sandbox import CaseRequest, SampleRequest, Sandbox
program, entry = json.loads(sys.stdin.read())
case = CaseRequest("c", "compare", calls=("candidate()",), timeout_s=60.0)
with Sandbox() as sb:
    res = sb.run(SampleRequest(program, entry, (case,), budget_s=120.0))
c = res.cases["c"]
print(json.dumps({"bwrap": sb.uses_bwrap, "infra": res.infra_error, "status": c.status,
                  "values": c.values, "exception": c.exception, "message": c.message,
                  "stderr": res.stderr}))
"""

# Imports every standard-library module it is given; run outside and inside the sandbox.
IMPORT_ALL = """
import importlib, os, sys
NAMES = {names!r}
def probe():
    ok, failed = [], {{}}
    for name in NAMES:
        try:
            importlib.import_module(name)
            ok.append(name)
        except BaseException as exc:
            failed[name] = type(exc).__name__ + ": " + str(exc)[:200]
    return {{"uid": os.getuid(), "ok": ok, "failed": failed}}
"""

# Side effects on import (a browser, a poem) or GUI toolkits: never imported.
NEVER = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"}


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside ``/tmp`` (inside the sandbox ``/tmp`` is empty anyway)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    if base is None:
        pytest.skip("no writable folder outside /tmp")
    path = Path(tempfile.mkdtemp(prefix="codeeval-vis-", dir=base))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _venv(path: Path, system_site: bool) -> Path:
    args = [sys.executable, "-m", "venv", "--without-pip", str(path)]
    if system_site:
        args.insert(3, "--system-site-packages")
    subprocess.run(args, check=True, timeout=120)
    return path / "bin" / "python"


def _env(home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(REPO)  # the harness itself; the sandbox hides the repository
    if home is not None:
        env["HOME"] = str(home)
    return env


def _sandboxed(python: Path, program: str, entry: str, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [str(python), "-c", DRIVER],
        input=json.dumps([program, entry]),
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_venv_under_tmp_runs_samples(tmp_path: Path, mode: str) -> None:
    python = _venv(tmp_path / "venv", system_site=False)
    program = (
        "import csv, io, os, sqlite3, unittest\n"
        "def f():\n"
        "    rows = list(csv.reader(io.StringIO('a,b')))\n"
        "    one = sqlite3.connect(':memory:').execute('select 1').fetchone()[0]\n"
        "    return [rows, one, unittest.TestCase.__name__, os.getuid()]\n"
    )
    out = _sandboxed(python, program, "f", _env())
    assert out["bwrap"] is (mode == "bwrap")
    assert out["infra"] is None, out
    assert out["status"] == "ok", out
    rows, one, name, uid = out["values"][0]
    assert (rows, one, name) == ([["a", "b"]], 1, "TestCase")
    assert _own_uid(uid)


def test_venv_in_closed_home_sees_the_whole_stdlib(tmp_path: Path, mode: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o700)
    python = _venv(home / "venv", system_site=True)
    env = _env(home)
    names = sorted(set(sys.stdlib_module_names) - NEVER)
    if importlib.util.find_spec("numpy") is not None:
        names.append("numpy")
    program = IMPORT_ALL.format(names=names)
    outside = subprocess.run(
        [str(python), "-c", program + "\nimport json\nprint(json.dumps(probe()))"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=300,
    )
    assert outside.returncode == 0, outside.stderr
    plain = json.loads(outside.stdout.strip().splitlines()[-1])
    assert {"csv", "sqlite3", "unittest", "decimal"} <= set(plain["ok"])
    assert len(plain["ok"]) > 100  # the whole standard library, not a handful
    # The sandboxed child imports only what imported outside (same order, same side effects).
    inside = _sandboxed(python, IMPORT_ALL.format(names=plain["ok"]), "probe", env)
    assert inside["infra"] is None, inside
    assert inside["status"] == "ok", inside
    seen = inside["values"][0]
    assert _own_uid(seen["uid"])
    assert seen["failed"] == {}
    assert sorted(seen["ok"]) == sorted(plain["ok"])


def test_probe_passes_here(mode: str) -> None:
    from harness.sandbox.probe import check_sandbox

    result = check_sandbox(SandboxSettings())
    assert result.uses_bwrap is (mode == "bwrap")
    assert _own_uid(result.uid)
    assert {"csv", "sqlite3", "unittest"} <= set(result.modules)
    assert check_sandbox(SandboxSettings()) is result  # cached per process and settings


@needs_bwrap
def test_probe_stops_when_the_interpreter_is_hidden() -> None:
    from harness.sandbox.probe import SandboxUnusable, check_sandbox

    hide = (os.path.realpath(sys.executable),)  # the server cannot even start
    with pytest.raises(SandboxUnusable) as info:
        check_sandbox(SandboxSettings(hide_paths=hide))
    message = str(info.value)
    assert "bubblewrap" in message and "execvp" in message, message
    assert "CODEEVAL_SANDBOX=nobwrap" in message
    with pytest.raises(SandboxUnusable) as again:  # the failure is cached too
        check_sandbox(SandboxSettings(hide_paths=hide))
    assert str(again.value) == message


def test_probe_stops_when_a_stdlib_module_is_hidden(mode: str) -> None:
    import csv

    from harness.sandbox.probe import SandboxUnusable, check_sandbox

    settings = SandboxSettings(hide_paths=(os.path.realpath(csv.__file__),))
    with pytest.raises(SandboxUnusable) as info:
        check_sandbox(settings)
    assert "csv" in str(info.value)


@needs_bwrap
def test_nobwrap_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.sandbox import Sandbox

    monkeypatch.setenv("CODEEVAL_SANDBOX", "nobwrap")
    assert bwrap_available() is False
    with Sandbox(SandboxSettings()) as sb:
        assert not sb.uses_bwrap
    monkeypatch.delenv("CODEEVAL_SANDBOX")
    assert bwrap_available() is True


@needs_bwrap
def test_hidden_paths_stay_hidden_next_to_a_rebound_venv(outside_tmp: Path) -> None:
    # A venv inside a hidden folder is bound back; the folder's other files are not.
    secret_dir = outside_tmp / "data"
    secret_dir.mkdir()
    (secret_dir / "answers.txt").write_text("42")
    python = _venv(secret_dir / "venv", system_site=False)
    code = (
        "import json, sys\n"
        "from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings\n"
        f"settings = SandboxSettings(hide_paths=({str(secret_dir)!r},))\n"
        "prog = 'import os\\ndef f():\\n    return [sorted(os.listdir(%r)), os.path.exists(%r)]\\n'"
        f" % ({str(secret_dir)!r}, {str(REPO / 'pyproject.toml')!r})\n"
        "case = CaseRequest('c', 'compare', calls=('candidate()',), timeout_s=30.0)\n"
        "with Sandbox(settings) as sb:\n"
        "    res = sb.run(SampleRequest(prog, 'f', (case,)))\n"
        "print(json.dumps([res.infra_error, res.cases['c'].values]))\n"
    )
    done = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=_env(), timeout=300
    )
    assert done.returncode == 0, done.stderr
    infra, values = json.loads(done.stdout.strip().splitlines()[-1])
    assert infra is None
    assert values == [[["venv"], False]]


@needs_bwrap
def test_mount_plan_orders_parents_first(outside_tmp: Path) -> None:
    closed = outside_tmp / "closed"
    (closed / "a" / "py" / "lib").mkdir(parents=True)
    closed.chmod(0o700)
    home = outside_tmp / "home"
    (home / "venv").mkdir(parents=True)
    args = bw.mount_plan(
        hidden=[str(home)], keep=[str(closed / "a" / "py"), str(home / "venv")], drop=True
    )
    ops = [(args[i], args[i + 1]) for i in range(len(args) - 1) if args[i].startswith("--")]
    assert ("--tmpfs", str(closed)) in ops  # a real 0700 folder on the way is covered
    assert ("--ro-bind", str(closed / "a" / "py")) in ops
    assert ("--dir", str(closed / "a")) in ops  # made by bubblewrap on the way: 0755
    assert ("--ro-bind", str(home / "venv")) in ops
    targets = [b for a, b in ops if a in ("--tmpfs", "--ro-bind", "--dir")]
    depth = [t.count("/") for t in targets]
    assert depth == sorted(depth)
    where = args.index(str(closed / "a"))
    assert args[where - 3 : where] == ["--perms", "0755", "--dir"]
