"""harness.deps: allow-lists, `codeeval deps fetch` from a local wheel folder, and the overlay
seen read-only by real sandboxes (no network: the wheels are built here, by hand)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main as codeeval
from harness.deps.fetch import FetchError, fetch
from harness.deps.overlay import MARKER, ROOT_ENV, overlay_dir, ready_site
from harness.deps.pins import PinError, format_allowlist, parse_allowlist, read_allowlist
from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings


def build_wheel(folder: Path, dist: str, version: str, modules: dict[str, str]) -> Path:
    """A pure-Python wheel of ``modules`` (top-level name -> source), as pip expects one."""
    norm = dist.replace("-", "_")
    info = f"{norm}-{version}.dist-info"
    files = {f"{name}/__init__.py": source for name, source in modules.items()}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: codeeval-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/top_level.txt"] = "".join(f"{m}\n" for m in modules)
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{norm}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    build_wheel(folder, "tinylib", "1.0.0", {"tinylib": "VALUE = 'one'\n"})
    build_wheel(folder, "tinylib", "2.0.0", {"tinylib": "VALUE = 'two'\n"})
    return folder


@pytest.fixture(scope="module")
def overlay(wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(root, site) of a fetched overlay with tinylib 1.0.0, through the real command."""
    # Under the shared /tmp, not pytest's 0700 folder: without bubblewrap the child (nobody)
    # reads the overlay where it lies.
    root = Path(tempfile.mkdtemp(prefix="codeeval-test-deps-"))
    allow = tmp_path_factory.mktemp("allow") / "allow.txt"
    allow.write_text("tinylib: tinylib==1.0.0  # a tiny test package\n")
    args = ["deps", "fetch", "--allowlist", str(allow), "--root", str(root)]
    assert codeeval([*args, "--find-links", str(wheels), "--no-index"]) == 0
    site = ready_site({"tinylib": "tinylib==1.0.0"}, root)
    assert site is not None
    yield root, site
    shutil.rmtree(root, ignore_errors=True)


# -- allow-lists ---------------------------------------------------------------------------
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
dists = st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,5})?", fullmatch=True)
versions = st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True)


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(names, st.tuples(dists, versions), max_size=6))
def test_allowlists_round_trip(entries: dict[str, tuple[str, str]]) -> None:
    # A distribution gets one version, as the parser insists.
    first: dict[str, str] = {}
    allow = {n: f"{d}=={first.setdefault(d, v)}" for n, (d, v) in entries.items()}
    parsed = parse_allowlist(format_allowlist(allow))
    assert parsed == dict(sorted(allow.items()))
    assert parse_allowlist(format_allowlist(parsed)) == parsed


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("bs4 beautifulsoup4==4.12.3\n", "f.txt:1: expected 'import_name: dist==version'"),
        ("\n# c\nbs4: beautifulsoup4>=4\n", "f.txt:3: bs4: 'beautifulsoup4>=4' is not pinned"),
        ("bs4: beautifulsoup4==4.*\n", "is not pinned"),
        ("bs4: beautifulsoup4==4.1\nbs4: beautifulsoup4==4.1\n", "f.txt:2: import name 'bs4'"),
        ("bs-4: beautifulsoup4==4.1\n", "f.txt:1: import name 'bs-4' is not a top-level"),
        ("a: x==1\nb: x==2\n", "f.txt: b: x is pinned to two versions"),
        ("a: x[extra]==1\n", "no URLs, extras or markers"),
        ("a: ==1\n", "is not a requirement"),
    ],
)
def test_bad_allowlists_name_file_line_and_field(text: str, where: str) -> None:
    with pytest.raises(PinError, match=None) as caught:
        parse_allowlist(text, "f.txt")
    assert where in str(caught.value)


def test_an_unreadable_allowlist_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PinError, match="nope.txt: cannot read"):
        read_allowlist(tmp_path / "nope.txt")


# -- fetch -----------------------------------------------------------------------------------
@pytest.mark.slow  # pip: seconds per install
def test_fetch_installs_the_pinned_version_readable_by_all(overlay: tuple[Path, Path]) -> None:
    root, site = overlay
    assert (site / "tinylib" / "__init__.py").read_text() == "VALUE = 'one'\n"
    marker = json.loads((site.parent / MARKER).read_text())
    assert marker["installed"] == ["tinylib==1.0.0"]
    for here, _dirs, files in os.walk(site.parent):
        assert os.stat(here).st_mode & 0o005 == 0o005
        assert all(os.stat(os.path.join(here, f)).st_mode & 0o004 for f in files)
    assert not [p for p in root.iterdir() if p.name.startswith(".fetch-")]


@pytest.mark.slow  # pip: seconds per install
def test_another_pin_is_another_overlay(overlay: tuple[Path, Path], wheels: Path) -> None:
    root, one = overlay
    two = fetch({"tinylib": "tinylib==2.0.0"}, root=root, find_links=[str(wheels)], no_index=True)
    assert two != one and (two / "tinylib" / "__init__.py").read_text() == "VALUE = 'two'\n"
    assert ready_site({"tinylib": "tinylib==1.0.0"}, root) == one  # untouched


@pytest.mark.slow  # pip: seconds per install
def test_a_failed_fetch_leaves_nothing_and_says_why(tmp_path: Path, wheels: Path) -> None:
    allow = {"tinylib": "tinylib==9.9.9"}
    with pytest.raises(FetchError, match="tinylib==9.9.9"):
        fetch(allow, root=tmp_path, find_links=[str(wheels)], no_index=True)
    assert not overlay_dir(allow, tmp_path).exists()
    assert [p.name for p in tmp_path.iterdir()] == []
    assert ready_site(allow, tmp_path) is None


def test_the_command_reports_errors_in_one_line(tmp_path: Path, capsys) -> None:
    assert codeeval(["deps", "fetch"]) == 2
    assert "name a suite" in capsys.readouterr().err
    assert codeeval(["deps", "show", "no-such-suite"]) == 2
    assert "unknown suite 'no-such-suite'" in capsys.readouterr().err
    assert codeeval(["deps", "show", "classeval", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "(not fetched)" in out and "docx: python-docx==" in out


# -- the sandbox sees the overlay, read-only ---------------------------------------------------
@pytest.fixture(scope="module")
def laid_out() -> Iterator[tuple[Path, Path]]:
    """(root, site) of an overlay laid out by hand (fast; fetch itself is tested above)."""
    root = Path(tempfile.mkdtemp(prefix="codeeval-test-deps-"))
    site = root / "k" / "site"
    (site / "tinylib").mkdir(parents=True)
    (site / "tinylib" / "__init__.py").write_text("VALUE = 'one'\n")
    for folder in (root, root / "k", site, site / "tinylib"):
        folder.chmod(0o755)
    (site / "tinylib" / "__init__.py").chmod(0o644)
    yield root, site
    shutil.rmtree(root, ignore_errors=True)


def run_with_overlay(root: Path, site: Path, use_bwrap: bool) -> tuple[Any, Any]:
    """One sample that imports tinylib, with and without the overlay on its path."""
    program = textwrap_program()
    cases = (
        CaseRequest("value", "compare", calls=("candidate()",), timeout_s=5),
        CaseRequest("write", "compare", calls=("try_write(tinylib.__file__)",), timeout_s=5),
    )
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        with_deps = box.run(SampleRequest(program, "f", cases, budget_s=15, deps_path=str(site)))
        without = box.run(SampleRequest(program, "f", cases, budget_s=15))
    assert with_deps.infra_error is None
    assert with_deps.cases["value"].values == ["one"], with_deps.cases["value"]
    if use_bwrap:  # mounted read-only; without bubblewrap only file modes protect it
        assert with_deps.cases["write"].values == ["refused"]
    failed = without.cases["value"]
    assert failed.status == "raised" and "No module named 'tinylib'" in failed.message
    return with_deps, without


def test_the_sandbox_imports_from_the_overlay_only_when_asked(
    laid_out: tuple[Path, Path], use_bwrap: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROOT_ENV, str(laid_out[0]))
    run_with_overlay(*laid_out, use_bwrap)


@pytest.mark.slow  # pip
def test_a_fetched_overlay_is_importable_in_the_sandbox(
    overlay: tuple[Path, Path], use_bwrap: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROOT_ENV, str(overlay[0]))
    run_with_overlay(*overlay, use_bwrap)


def textwrap_program() -> str:
    return (
        "import tinylib\n"
        "def f():\n"
        "    return tinylib.VALUE\n"
        "def try_write(path):\n"
        "    try:\n"
        "        open(path, 'a').write('x')\n"
        "    except OSError:\n"
        "        return 'refused'\n"
        "    return 'written'\n"
    )
