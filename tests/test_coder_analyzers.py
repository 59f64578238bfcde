"""The coder's analyzers on fixtures with hand-checked answers (real mypy, jedi, sandbox)."""

from __future__ import annotations

import pytest

from harness.coder.analyzers import Completion, make_analyzers
from harness.coder.analyzers.hallucination import HallucinationAnalyzer, module_uses
from harness.coder.analyzers.mypy_check import MypyAnalyzer
from harness.coder.analyzers.signature import SignatureAnalyzer
from harness.coder.analyzers.tests_run import TestsAnalyzer


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))


def test_signature_finds_a_stdlib_call_whose_arguments_do_not_fit():
    code = "import json\nimport math\n\n"
    completion = (
        "text = json.dumps({'a': 1}, 2)\nroot = math.sqrt(4)\nok = json.dumps([], indent=2)\n"
    )
    (result,) = SignatureAnalyzer().analyze([Completion(code, completion)])
    assert result.type == "critical"
    assert not result.passed and result.score == -1.0
    (mismatch,) = result.details["mismatches"]
    assert mismatch["call"] == "json.dumps({'a': 1}, 2)" and mismatch["line"] == 4
    assert mismatch["error"] == "too many positional arguments"
    assert "dumps(obj: Any, *, skipkeys: bool=False" in result.message  # the signature is given


def test_signature_judges_functions_of_the_program_and_missing_arguments():
    code = "def area(width: float, height: float) -> float:\n    return width * height\n\n"
    (result,) = SignatureAnalyzer().analyze(
        [Completion(code, "a = area(3)\nb = area(3, height=4)\n")]
    )
    assert result.score == -1.0
    (mismatch,) = result.details["mismatches"]
    assert mismatch["call"] == "area(3)"
    assert mismatch["error"] == "missing a required argument: 'height'"
    assert mismatch["signatures"] == ["area(width: float, height: float) -> float"]


def test_signature_passes_fitting_calls_and_ignores_the_users_own_code():
    code = "import math\nmath.sqrt(1, 2)\n"  # the user's mistake, not the model's
    (result,) = SignatureAnalyzer().analyze([Completion(code, "x = math.pow(2, 3)\n")])
    assert result.passed and result.score == 0.0 and result.message == ""


def test_hallucination_finds_a_made_up_attribute_of_a_real_module_with_the_closest_names():
    code = "import os\nimport json as j\n"
    completion = "p = os.path.joinn('a', 'b')\ns = j.dumpz({})\nq = os.path.join('a')\n"
    (result,) = HallucinationAnalyzer().analyze([Completion(code, completion)])
    assert not result.passed and result.score == -2.0
    names = result.details["names"]
    assert [n["name"] for n in names] == ["os.path.joinn", "j.dumpz"]
    assert names[0]["closest"][0] == "join"
    assert names[1]["closest"][0] in ("dump", "dumps")
    assert "`os.path.joinn` (line 3) does not exist. Did you mean: join" in result.message


def test_hallucination_reports_missing_modules_and_from_imports():
    completion = "from collections import OrderedDictt\nimport no_such_module_xyz\n"
    (result,) = HallucinationAnalyzer().analyze([Completion("", completion)])
    assert [n["name"] for n in result.details["names"]] == [
        "collections.OrderedDictt",
        "no_such_module_xyz",
    ]
    assert result.details["names"][0]["closest"][0] == "OrderedDict"


def test_hallucination_does_not_judge_names_the_program_rebinds():
    tree = __import__("ast").parse("import os\nos = object()\nos.whatever\n")
    assert module_uses(tree) == [("os", (), "os", 1)]  # the import, not ``os.whatever``
    (result,) = HallucinationAnalyzer().analyze(
        [Completion("import os\n", "os = object()\nos.whatever\n")]
    )
    assert result.passed


def test_mypy_reports_errors_of_the_completion_only():
    code = 'bad: int = "user"\n'
    (result,) = MypyAnalyzer().analyze([Completion(code, 'x: int = "a"\ny: str = "b"\n')])
    assert not result.passed and result.score == -1.0
    (error,) = result.details["errors"]
    assert error["line"] == 2 and error["code"] == "assignment"
    assert result.details["ignored_user_code_errors"] == 1
    assert "Incompatible types in assignment" in result.message


def test_parsing_analyzers_fail_a_completion_that_does_not_parse():
    candidate = Completion("def f():\n", "    return (\n")
    for analyzer in make_analyzers(["mypy", "signature", "hallucination"]):
        (result,) = analyzer.analyze([candidate])
        assert not result.passed and result.details["syntax_error"]
        assert "does not parse" in result.message


def test_the_tests_analyzer_runs_the_problems_checks_in_the_sandbox():
    from suites import load_suite

    problem = load_suite("humaneval", split="test[:3]")[2]  # truncate_number
    good = Completion(problem.prompt, "    return number % 1.0\n", problem)
    wrong = Completion(problem.prompt, "    return number\n", problem)
    no_tests = Completion("x = 1\n", "y = 2\n")
    ok, bad, none = TestsAnalyzer().analyze([good, wrong, no_tests])
    assert ok.passed and ok.score == 0.0 and ok.details["status"] == "passed"
    assert not bad.passed and bad.details["status"] == "failed"
    assert bad.score == pytest.approx(bad.details["passed_cases"] / bad.details["cases"] - 1)
    assert "tests pass. Failing:" in bad.message
    assert none.passed and none.details == {"tests": None}


def test_unknown_analyzer_names_are_refused():
    with pytest.raises(ValueError, match="unknown analyzer 'pylint'"):
        make_analyzers(["pylint"])
