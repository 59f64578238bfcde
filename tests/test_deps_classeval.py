"""ClassEval's allow-list end to end: an unfetched overlay is a data defect that names the
command; a fetched one makes the problems runnable, and evaluate() puts it on the child's path."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import suites.classeval as classeval
from harness.deps.overlay import MARKER, ROOT_ENV, SITE, canonical, overlay_dir, ready_site
from harness.evaluate import evaluate
from harness.records import CheckCase, Problem, Sample

NEED_DEPS = ("ClassEval_34", "ClassEval_38", "ClassEval_69")  # docx, openpyxl, PyPDF2+reportlab


def lay_out(root: Path, allowlist: dict[str, str], modules: dict[str, str]) -> Path:
    """An overlay as `codeeval deps fetch` leaves it (its packages written here, not by pip:
    test_deps.py fetches for real)."""
    folder = overlay_dir(allowlist, root)
    for name, source in modules.items():
        (folder / SITE / name).mkdir(parents=True)
        (folder / SITE / name / "__init__.py").write_text(source)
    (folder / MARKER).write_text(json.dumps({"allowlist": canonical(allowlist)}))
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder / SITE


@pytest.fixture(scope="module")
def records(shared_data: Path) -> dict[str, dict]:
    data = json.loads((shared_data / "ClassEval_data.json").read_text())
    wanted = {*NEED_DEPS, "ClassEval_0", "ClassEval_44", "ClassEval_52"}
    return {r["task_id"]: r for r in data if r["task_id"] in wanted}


def load(records: dict[str, dict]) -> dict[str, Problem]:
    """The problems of ``records``, made as the suite's loader makes them."""
    return {t: classeval.problem_from_record(r, t) for t, r in records.items()}


@pytest.fixture
def deps_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # Under the shared /tmp (not pytest's 0700 folder), so that nobody can read it without
    # bubblewrap too; the warning is given once per process, so it is re-armed here.
    root = Path(tempfile.mkdtemp(prefix="codeeval-test-deps-"))
    monkeypatch.setenv(ROOT_ENV, str(root))
    monkeypatch.setattr(classeval, "_warned", [])
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_unfetched_allowed_modules_are_defects_that_name_the_command(
    records: dict[str, dict], deps_root: Path
) -> None:
    with pytest.warns(UserWarning, match="run `codeeval deps fetch classeval` once"):
        problems = load(records)
    for task in NEED_DEPS:
        (defect,) = problems[task].defects
        assert "codeeval deps fetch classeval" in defect
        assert "deps_overlay" not in problems[task].metadata
    # Not on the allow-list: no command to suggest.
    assert "deps fetch" not in problems["ClassEval_52"].defects[0]


def test_a_fetched_overlay_makes_the_problems_runnable(
    records: dict[str, dict], deps_root: Path
) -> None:
    modules = {m: "" for m in classeval.DEPENDENCIES}
    site = lay_out(deps_root, classeval.DEPENDENCIES, modules)
    problems = load(records)
    for task in NEED_DEPS:
        assert problems[task].defects == ()
        assert problems[task].metadata["deps_overlay"] == str(site)
    # bs4 is fetched, gensim is not allowed: only gensim is left.
    (defect,) = problems["ClassEval_44"].defects
    assert "gensim" in defect and "bs4" not in defect
    assert "deps_overlay" not in problems["ClassEval_0"].metadata  # needs nothing


def test_evaluate_runs_a_problem_with_its_overlay(deps_root: Path, tmp_path: Path) -> None:
    allow = {"tinylib": "tinylib==1.0"}
    site = lay_out(deps_root, allow, {"tinylib": "VALUE = 'one'\n"})
    assert ready_site(allow) == site

    def problem(metadata: dict) -> Problem:
        case = CheckCase(
            "c0", "assert f() == 'one'", "compare", calls=("f()",), check="v[0] == 'one'"
        )
        return Problem(
            suite="tiny", task_id="tiny/0", prompt="", entry_point="f", cases=(case,),
            reference="", candidate_names=("f",), metadata=metadata,
        )  # fmt: skip

    program = "import tinylib\ndef f():\n    return tinylib.VALUE\n"
    sample = [Sample("tiny/0", f"```python\n{program}```", "0")]
    with_overlay = evaluate([problem({"deps_overlay": str(site)})], sample, out_dir=tmp_path / "a")
    without = evaluate([problem({})], sample, out_dir=tmp_path / "b")
    assert with_overlay[0]["status"] == "passed", with_overlay[0]["cases"]
    assert without[0]["status"] == "failed"
    assert "No module named 'tinylib'" in without[0]["cases"][0]["message"]


@pytest.mark.slow  # ClassEval's real packages, fetched once with `codeeval deps fetch classeval`
def test_classeval_references_that_need_packages_pass(records: dict[str, dict]) -> None:
    if ready_site(classeval.DEPENDENCIES) is None:
        pytest.skip("run `codeeval deps fetch classeval` (network) for this test")
    problems = [p for t, p in load(records).items() if t in NEED_DEPS]
    samples = [Sample(p.task_id, p.reference, "ref") for p in problems]
    rows = evaluate(problems, samples)
    assert {r["task_id"]: r["status"] for r in rows} == dict.fromkeys(NEED_DEPS, "passed")
