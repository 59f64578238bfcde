"""Mining the fixture repository (tests/fixtures/mining_repo) end to end: the exact problems,
tiers and drops; the `codeeval mine` command; the suite in real pytest sessions with the
references, wrong answers and adversarial answers, all through the real sandbox."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.mining import MineOptions, mine
from harness.mining.snapshot import unpack
from harness.sandbox import bwrap_available
from suites import load_suite

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "mining_repo"

EXPECTED_TIERS = {
    "mining_repo/minipkg.durations:parse_duration": "tier2",
    "mining_repo/minipkg.durations:ratio": "tier0",
    "mining_repo/minipkg.mathx:gcd": "tier0",  # checked by its doctest
    "mining_repo/minipkg.shapes:Rect.__init__": "tier0",
    "mining_repo/minipkg.shapes:Rect.area": "tier0",
    "mining_repo/minipkg.shapes:Rect.scaled": "tier0",
    "mining_repo/minipkg.text:_clean": "tier0",
    "mining_repo/minipkg.text:first_char": "tier0",
    "mining_repo/minipkg.text:slugify": "tier1",
}
EXPECTED_DROPS = {
    "minipkg/text.py::placeholder": "trivial body (docstring, pass or ...)",
    "minipkg/text.py::shout": "no test executes its body",
    "minipkg/text.py::count_words": "no test tells the original body from one raising "
    "NotImplementedError",
    "minipkg/mathx.py::halve": "the tests that execute it fail on the original code",
}


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("mined")
    suite = folder / "mini.jsonl"
    report = mine(FIXTURE, suite, MineOptions())
    return {"suite": suite, "report": report, "records": _records(suite)}


def _records(suite: Path) -> dict[str, dict]:
    return {r["task_id"]: r for r in map(json.loads, suite.read_text().splitlines())}


def test_fixture_mines_to_exactly_the_expected_problems_tiers_and_drops(mined: dict) -> None:
    report = mined["report"]
    assert {r: x["tier"] for r, x in mined["records"].items()} == EXPECTED_TIERS
    assert {d.target_id: d.reason for d in report.drops} == EXPECTED_DROPS
    assert report.functions_found == len(EXPECTED_TIERS) + len(EXPECTED_DROPS)
    assert (report.tests_run, report.tests_failed) == (12, 1)
    features = mined["records"]["mining_repo/minipkg.durations:parse_duration"]["features"]
    assert features == {"lines": 15, "complexity": 6, "dependencies": 2, "checks": 3}
    gcd = mined["records"]["mining_repo/minipkg.mathx:gcd"]
    assert gcd["doctest"]  # its doctest, and test_ratio through ratio()
    assert gcd["tests"] == [
        "minipkg/mathx.py::minipkg.mathx.gcd",
        "tests/test_durations.py::test_ratio",
    ]
    saved = json.loads((mined["suite"].parent / "mini.report.json").read_text())
    assert saved["per_tier"] == {"tier0": 7, "tier1": 1, "tier2": 1}
    assert saved["drop_reasons"]["no test executes its body"] == 1


def test_checks_are_the_discriminating_tests_that_execute_the_function(mined: dict) -> None:
    slugify = mined["records"]["mining_repo/minipkg.text:slugify"]
    assert slugify["tests"] == [
        "tests/test_text.py::test_slugify_separator",
        "tests/test_text.py::test_slugify_words",
    ]
    clean = mined["records"]["mining_repo/minipkg.text:_clean"]  # reached through callers
    assert "tests/test_durations.py::test_parse_duration_units" in clean["tests"]


def test_prompt_has_repository_context_and_the_copy_has_no_body(mined: dict) -> None:
    slugify = mined["records"]["mining_repo/minipkg.text:slugify"]
    prompt = slugify["prompt"]
    assert "# import re" in prompt  # the module's imports
    assert "# def _clean(text):" in prompt  # a repository name it uses, header and docstring
    assert "# SEPARATORS = re.compile" in prompt
    assert 'Use `slugify("Hello World")`' in prompt  # the README paragraph naming it
    assert prompt.endswith(
        '    """Turn ``text`` into a URL slug: lower case words joined by ``sep``."""\n'
    )
    assert "SEPARATORS.split(_clean(text))" in slugify["canonical_solution"]
    assert "SEPARATORS.split(_clean(text))" not in prompt
    files = unpack(slugify["repository_zip"])
    assert "SEPARATORS.split" not in files["minipkg/text.py"].decode()
    assert (
        'raise NotImplementedError("codeeval: body removed")' in files["minipkg/text.py"].decode()
    )
    assert not [f for f in files if f.endswith(".pyc") or f.startswith("docs/") or f == "README.md"]
    area = mined["records"]["mining_repo/minipkg.shapes:Rect.area"]["prompt"]
    assert "Rect.area returns the area of the rectangle" in area  # docs/api.rst
    assert "class Rect:  # other members not shown\n    def area(self):\n" in area


def test_tiers_select_through_the_suite_registry(mined: dict) -> None:
    name = f"jsonl:{mined['suite']}"
    assert len(load_suite(name)) == 9
    assert len(load_suite(name, split="tier0")) == 7
    both = load_suite(name, split="tier1+tier2")  # concatenated in the order asked
    assert [p.entry_point for p in both] == ["slugify", "parse_duration"]


def _pytest(pytester: pytest.Pytester, suite: Path, *extra: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--llm-eval", f"jsonl:{suite}", "--llm-out", str(pytester.path / "out"),
        "-p", "no:codeeval_gate", *extra,
    )  # fmt: skip


def _rows(pytester: pytest.Pytester) -> dict[str, dict]:
    lines = (pytester.path / "out" / "results.jsonl").read_text().splitlines()
    return {(r["task_id"], r["sample_id"]): r for r in map(json.loads, lines)}


@pytest.mark.slow  # a whole mined suite end to end
def test_every_reference_passes_in_a_real_pytest_session(
    pytester: pytest.Pytester, mined: dict
) -> None:
    result = _pytest(
        pytester, mined["suite"], "--llm-samples", "canonical", "--llm-reward", "weighted"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    rows = _rows(pytester)
    assert len(rows) == 9 and all(r["status"] == "passed" for r in rows.values())
    assert all(c["weaker"] for r in rows.values() for c in r["cases"])
    assert all(r["reward"] > 0.9 and r["reward_parts"]["tests"] > 0 for r in rows.values())


SLUGIFY = "mining_repo/minipkg.text:slugify"
ANSWERS = {
    "right": "    words = SEPARATORS.split(_clean(text))\n    return sep.join(w for w in words if w)\n",
    "whole": "```python\ndef slugify(text, sep='-'):\n    import re\n"
    "    return sep.join(re.findall('[a-z0-9]+', text.lower()))\n```\n",
    "with_helper": "def aux(text):\n    return [w for w in SEPARATORS.split(_clean(text)) if w]\n\n\n"
    "def slugify(text, sep='-'):\n    return sep.join(aux(text))\n",  # MAGRPO's helper + main
    # a chat answer: the package's own imports (absolute and relative) and a new import
    "imports": "```python\nimport minipkg\nfrom .text import _clean\nimport string\n\n\n"
    "def slugify(text, sep='-'):\n    allowed = set(string.ascii_lowercase + string.digits)\n"
    "    cleaned = ''.join(c if c in allowed else ' ' for c in _clean(text))\n"
    "    return sep.join(cleaned.split())\n```\n",
    "wrong": "    return text.lower().replace(' ', sep)\n",
    "stub": "    raise NotImplementedError\n",
    "exit_early": "    import os\n    os._exit(0)\n",
    "sys_exit": "    import sys\n    sys.exit(0)\n",
    "patch_tests": (
        "    import sys\n"
        "    for name, mod in list(sys.modules.items()):\n"
        "        if 'test_' in name:\n"
        "            for attr in list(vars(mod)):\n"
        "                if attr.startswith('test_'):\n"
        "                    setattr(mod, attr, lambda *a, **k: None)\n"
        "    return 'patched'\n"
    ),
    "read_original": (
        "    import glob, os, minipkg.text as m\n"
        "    needle = 'SEPARATORS' + '.split(_clean'  # not in this body's own text\n"
        "    root = os.path.dirname(os.path.dirname(m.__file__))\n"
        "    for path in glob.glob(os.path.join(root, '**', '*'), recursive=True):\n"
        "        if path.endswith('.pyc'):\n"
        "            return 'found bytecode'\n"
        "        if os.path.isfile(path) and needle in open(path, errors='ignore').read():\n"
        "            words = getattr(SEPARATORS, 'split')(_clean(text))  # a right answer\n"
        "            return sep.join(w for w in words if w)\n"
        "    raise RuntimeError('the original body is nowhere to be read')\n"
    ),
}


def test_wrong_and_adversarial_answers_fail(pytester: pytest.Pytester, mined: dict) -> None:
    samples = pytester.path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": SLUGIFY, "sample_id": k, "completion": v}) + "\n"
            for k, v in ANSWERS.items()
        )
    )
    result = _pytest(
        pytester, mined["suite"], "--llm-samples", str(samples), "--llm-split", "tier1"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = _rows(pytester)
    status = {sample: rows[(SLUGIFY, sample)]["status"] for sample in ANSWERS}
    assert status == {
        "right": "passed",
        "whole": "passed",
        "with_helper": "passed",
        "imports": "passed",
        "wrong": "failed",
        "stub": "failed",
        "exit_early": "failed",
        "sys_exit": "failed",
        "patch_tests": "failed",
        "read_original": "failed",
    }
    early = rows[(SLUGIFY, "exit_early")]["cases"][0]["message"]
    assert "ended without a report" in early
    wrong = rows[(SLUGIFY, "wrong")]["cases"]
    assert [c["status"] for c in wrong] == ["failed", "passed"]  # per-test partial credit
    assert "test_slugify_separator: failed" in wrong[0]["message"]


@pytest.mark.slow  # the command end to end
def test_codeeval_mine_command(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = tmp_path / "suite.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "mine", str(FIXTURE), "-o", str(out), "-q"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "13 functions found, 9 problems emitted, 4 dropped" in done.stdout
    assert "tier2: 1" in done.stdout and "dropped (1): no test executes its body" in done.stdout
    assert len(out.read_text().splitlines()) == 9
    bad = subprocess.run(
        [sys.executable, "-m", "harness.cli", "mine", str(tmp_path / "nope"), "-o", str(out)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "nope: not a folder" in bad.stderr


@pytest.mark.bwrap
@pytest.mark.skipif(not bwrap_available(), reason="hiding folders needs bubblewrap")
def test_the_original_repository_is_hidden_from_candidates(pytester: pytest.Pytester) -> None:
    """A repository outside the folders the sandbox always hides (/var/tmp here): a candidate
    that opens its original module by absolute path finds nothing there."""
    outside = Path(tempfile.mkdtemp(prefix="codeeval-mining-", dir="/var/tmp"))
    try:
        repo = outside / "mining_repo"
        shutil.copytree(FIXTURE, repo)
        suite = pytester.path / "suite.jsonl"
        mine(repo, suite, MineOptions(select="text.py::slugify"))
        peek = (
            "    import os\n"
            f"    path = {str(repo / 'minipkg' / 'text.py')!r}\n"
            "    if os.path.exists(path) and 'SEPARATORS' + '.split(' in open(path).read():\n"
            "        words = getattr(SEPARATORS, 'split')(_clean(text))\n"
            "        return sep.join(w for w in words if w)\n"
            "    raise RuntimeError('the original repository is hidden')\n"
        )
        samples = pytester.path / "samples.jsonl"
        samples.write_text(json.dumps({"task_id": SLUGIFY, "completion": peek}) + "\n")
        result = _pytest(pytester, suite, "--llm-samples", str(samples))
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        (row,) = _rows(pytester).values()
        assert row["status"] == "failed"
        assert "the original repository is hidden" in row["cases"][0]["message"]
    finally:
        shutil.rmtree(outside, ignore_errors=True)
