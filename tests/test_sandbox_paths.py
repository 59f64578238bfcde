"""The trusted side never follows a path the candidate controls.

The child's folder is the candidate's: it may replace any file there with a symbolic link to a
root-only file, a FIFO, a hard link, or fill it with a tree the server then has to remove.
The server runs as root; none of that may put a secret into the results, block the server, or
leave a folder behind. The secrets are our own: a root-only 0600 file with a random marker,
and a marker in the fork server's own environment (``/proc/<server>/environ``).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox.sandbox import Sandbox as _Sandbox

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="the attacks need a root server")

CASE = (CaseRequest("c", "compare", calls=("candidate()",), timeout_s=5.0),)
SECRET = "cevsecret" + uuid.uuid4().hex[:16]
ENV_SECRET = "cevenv" + uuid.uuid4().hex[:16]


@pytest.fixture(scope="module")
def secret_file() -> Iterator[Path]:
    """A root-only file outside /tmp (the sandbox's /tmp is its own)."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path("/root")
    folder = base / f"cev-secret-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755)
    path = folder / "secret"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    yield path
    path.unlink()
    folder.rmdir()


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool, secret_file: Path) -> Iterator[Sandbox]:
    original = _Sandbox._env

    def env(self: _Sandbox) -> dict[str, str]:
        return {**original(self), "CEV_SERVER_SECRET": ENV_SECRET}

    _Sandbox._env = env  # the server's environment holds a secret of its own
    try:
        with Sandbox(SandboxSettings(use_bwrap=use_bwrap, max_output_bytes=1 << 16)) as sb:
            yield sb
    finally:
        _Sandbox._env = original


def _leaks(result) -> list[str]:
    text = json.dumps(
        {
            "stdout": result.stdout,
            "stderr": result.stderr,
            "infra": result.infra_error,
            "cases": {
                cid: [c.status, c.message, c.values, c.exception] for cid, c in result.cases.items()
            },
        },
        default=str,
    )
    return [s for s in (SECRET, ENV_SECRET) if s in text]


def _run(sandbox: Sandbox, program: str, secret: Path, budget: float = 10.0):
    source = f"SECRET = {str(secret)!r}\n{program}"
    start = time.monotonic()
    result = sandbox.run(SampleRequest(source, "f", CASE, budget_s=budget))
    return result, time.monotonic() - start


REPLACE = """
import os
def f():
    for name in ('stdout', 'stderr'):
        try:
            os.unlink(name)
        except OSError:
            pass
        {make}
    return 'ok'
"""
ATTACKS = {
    "symlink_to_root_only_file": "os.symlink(SECRET, name)",
    "symlink_to_server_environ": "os.symlink('/proc/%d/environ' % os.getppid(), name)",
    "symlink_to_server_environ_by_pid_1": "os.symlink('/proc/1/environ', name)",
    "hard_link_to_root_only_file": "os.link(SECRET, name)",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_output_files_replaced_by_links_leak_nothing(
    sandbox: Sandbox, secret_file: Path, attack: str
) -> None:
    program = REPLACE.replace(
        "{make}",
        "try:\n            " + ATTACKS[attack] + "\n        except OSError:\n            pass",
    )
    result, _ = _run(sandbox, program, secret_file)
    assert _leaks(result) == []


def test_a_fifo_for_an_output_file_does_not_block(sandbox: Sandbox, secret_file: Path) -> None:
    program = REPLACE.replace("{make}", "os.mkfifo(name)")
    result, took = _run(sandbox, program, secret_file, budget=5.0)
    assert took < 10.0, f"the server was blocked for {took:.1f}s"
    assert result.infra_error is None, result.infra_error
    assert result.cases["c"].values == ["ok"]


def test_output_is_still_captured(sandbox: Sandbox, secret_file: Path) -> None:
    program = "import sys\ndef f():\n    print('to out')\n    print('to err', file=sys.stderr)\n    return 1\n"
    result, _ = _run(sandbox, program, secret_file)
    assert "to out" in result.stdout and "to err" in result.stderr


DEEP = """
import os
def f():
    for _ in range(DEPTH):
        os.mkdir('d')
        os.chdir('d')
    open('answer', 'w').write('x')
    return 'deep'
"""


def test_a_deep_tree_is_removed_without_breaking_the_server(
    sandbox: Sandbox, secret_file: Path
) -> None:
    result, _ = _run(sandbox, "DEPTH = 3000\n" + DEEP, secret_file, budget=20.0)
    assert result.infra_error is None, result.infra_error
    assert result.cases["c"].values == ["deep"]
    after = sandbox.run(SampleRequest("def f():\n    return 2\n", "f", CASE))
    assert after.infra_error is None and after.cases["c"].values == [2]
    assert sandbox.restarts == 0


LOCKED = """
import os
def f():
    os.makedirs('a/b/c')
    open('a/b/c/file', 'w').write('x')
    os.symlink(SECRET, 'a/b/link')
    os.symlink('/', 'a/root')
    for d in ('a/b/c', 'a/b', 'a'):
        os.chmod(d, 0)
    os.chmod('.', 0o555)
    return os.getcwd()
"""


def test_a_locked_folder_is_removed_and_links_are_not_followed(
    sandbox: Sandbox, secret_file: Path, use_bwrap: bool
) -> None:
    result, _ = _run(sandbox, LOCKED, secret_file)
    assert result.infra_error is None, result.infra_error
    (folder,) = result.cases["c"].values
    assert secret_file.read_text().strip() == SECRET  # the link's target is untouched
    # The folder is gone: a later sample (same server, same /tmp) cannot find it.
    probe = f"import os\ndef f():\n    return os.path.lexists({folder!r})\n"
    after = sandbox.run(SampleRequest(probe, "f", CASE))
    assert after.cases["c"].values == [False]
    if not use_bwrap:
        assert not os.path.lexists(folder)
