"""Suite registry and adapters: counts, splits, fields, defects, JSONL problems files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.pipeline.checks import split_check
from harness.records import Problem
from suites import SuiteError, known_suites, load_splits, load_suite, register_suite
from suites.jsonl_suite import JsonlSuiteError, load_jsonl
from suites.mbpp import problem_from_record
from suites.splits import SplitFallbackWarning

DATA = Path(__file__).parents[1] / ".." / "shared" / "data"
FIXTURES = Path(__file__).parent / "fixtures"
needs_data = pytest.mark.skipif(
    not (DATA / "mbpp.jsonl").is_file(), reason=f"benchmark mirror missing at {DATA}"
)


# --- registry -------------------------------------------------------------------------------


def test_known_suites_and_unknown_name() -> None:
    names = known_suites()
    assert {"humaneval", "mbpp", "mbpp-sanitized", "coophumaneval", "classeval"} <= set(names)
    with pytest.raises(SuiteError) as info:
        load_suite("humanevil")
    message = str(info.value)
    assert "humanevil" in message
    for name in ("humaneval", "mbpp", "mbpp-sanitized", "jsonl:PATH"):
        assert name in message
    assert isinstance(info.value, ValueError)


def test_register_suite_callable_and_lazy_missing_module() -> None:
    problem = Problem("tiny", "tiny/0", "def f():\n", "f", (), "def f():\n    return 1\n")
    register_suite("tiny-test-suite", lambda: [problem])
    assert load_suite("tiny-test-suite") == [problem]
    register_suite("ghost-test-suite", "suites.no_such_module_here:load")
    with pytest.raises(SuiteError, match="no_such_module_here"):
        load_suite("ghost-test-suite")
    # A broken lazy entry does not break the others.
    assert load_suite("tiny-test-suite", "test[:1]") == [problem]
    with pytest.raises(SuiteError, match="module:function"):
        register_suite("bad", "no_colon")


def test_bad_split_spec_is_a_suite_error() -> None:
    with pytest.raises(SuiteError, match="humaneval.*malformed split spec"):
        load_suite("humaneval", "test[5]")


# --- HumanEval ------------------------------------------------------------------------------


def test_humaneval_problems() -> None:
    problems = load_suite("humaneval")
    assert len(problems) == 164
    first = problems[0]
    assert first.task_id == "HumanEval/0" and first.suite == "humaneval"
    assert first.entry_point == "has_close_elements"
    assert first.prompt.startswith("from typing import List")
    assert first.reference.startswith(first.prompt) and len(first.reference) > len(first.prompt)
    assert first.candidate_names == ("candidate",)
    assert "def check(candidate)" in first.metadata["test_source"]
    assert len(first.cases) == 7 and all(c.mode == "compare" for c in first.cases)
    assert not any(p.defects for p in problems)
    assert all(p.cases for p in problems)


def test_humaneval_splits_and_fallback() -> None:
    assert len(load_suite("humaneval", "test[:10%]")) == 16
    assert [p.task_id for p in load_suite("humaneval", "test[160:]")] == [
        f"HumanEval/{i}" for i in range(160, 164)
    ]
    with pytest.warns(SplitFallbackWarning):
        assert len(load_suite("humaneval", "train[:3]")) == 3


# --- MBPP -----------------------------------------------------------------------------------


@needs_data
def test_mbpp_counts_and_splits() -> None:
    full = load_splits("mbpp", DATA)
    assert sum(len(v) for v in full.values()) == 974
    assert {k: len(v) for k, v in full.items()} == {
        "train": 374,
        "test": 500,
        "validation": 90,
        "prompt": 10,
    }
    test = load_suite("mbpp", data_dir=DATA)
    assert len(test) == 500
    assert test[0].task_id == "Mbpp/11" and test[-1].task_id == "Mbpp/510"
    assert [p.task_id for p in load_suite("mbpp", "test[:3]", DATA)] == [
        "Mbpp/11",
        "Mbpp/12",
        "Mbpp/13",
    ]
    assert len(load_suite("mbpp", "test[50:]", DATA)) == 450
    assert load_suite("mbpp", "train[10:20]", DATA)[0].task_id == "Mbpp/611"
    sanitized = load_splits("mbpp-sanitized", DATA)
    assert sum(len(v) for v in sanitized.values()) == 427
    assert len(load_suite("mbpp-sanitized", data_dir=DATA)) == 257


@needs_data
def test_data_dir_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEEVAL_DATA_DIR", str(DATA))
    assert len(load_suite("mbpp-sanitized", "test[:5]")) == 5


def test_missing_mirror_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=str(tmp_path / "mbpp.jsonl")):
        load_suite("mbpp", data_dir=tmp_path)


@needs_data
def test_mbpp_problem_fields() -> None:
    problem = load_suite("mbpp", "test[:1]", DATA)[0]
    assert problem.suite == "mbpp" and problem.entry_point == "remove_Occ"
    assert problem.candidate_names == ("remove_Occ",)
    assert problem.prompt.startswith(
        "You are an expert Python programmer, and here is your task: Write a python function"
    )
    assert 'assert remove_Occ("hello","l") == "heo"' in problem.prompt
    assert 'remove_Occ("abcda","a")' not in problem.prompt  # only the first test is shown
    assert problem.metadata["text"].startswith("Write a python function to remove first")
    assert problem.metadata["prompt_kind"] == "text"
    assert "\r" not in problem.reference
    assert [c.mode for c in problem.cases] == ["compare"] * 3
    assert problem.cases[0].calls == ("remove_Occ('hello', 'l')",)


@needs_data
def test_mbpp_setup_code_and_several_candidates() -> None:
    by_id = {p.task_id: p for v in load_splits("mbpp", DATA).values() for p in v}
    tree = by_id["Mbpp/927"]  # test_setup_code builds trees of the reference's Node class
    assert "root = Node(1)" in tree.cases[0].prelude
    assert all(c.mode == "sandbox" for c in tree.cases)
    assert by_id["Mbpp/601"].candidate_names == ("max_chain_length", "Pair")
    sanitized = {p.task_id: p for v in load_splits("mbpp-sanitized", DATA).values() for p in v}
    with_imports = [p for p in sanitized.values() if p.metadata["test_imports"]]
    assert with_imports and all(p.program_setup.startswith("import ") for p in with_imports)
    assert all(p.test_setup.startswith("import ") for p in with_imports)


@needs_data
def test_no_false_defects_in_the_mirrors() -> None:
    for name in ("mbpp", "mbpp-sanitized"):
        flagged = [
            (p.task_id, p.defects) for v in load_splits(name, DATA).values() for p in v if p.defects
        ]
        assert flagged == []


def fixture_problems() -> dict[int, Problem]:
    records = json.loads((FIXTURES / "suites_sanitized_defects.json").read_text())
    return {r["task_id"]: problem_from_record(r, "mbpp-sanitized", sanitized=True) for r in records}


def test_defects_flag_task_5_name_mismatch() -> None:
    problem = fixture_problems()[5]
    assert problem.entry_point == "count_domino_fillings"
    assert any("'count_ways'" in d and "count_domino_fillings" in d for d in problem.defects)


def test_defects_parse_missing_modules_unknown_names() -> None:
    problems = fixture_problems()
    assert any("reference code does not parse: line 1" in d for d in problems[12].defects)
    missing = " ".join(problems[13].defects)
    assert "'numpy_but_not_installed'" in missing and "'another_missing_module'" in missing
    unknown = " ".join(problems[14].defects)
    assert "'helper_nobody_defines'" in unknown
    assert "'cube', which the prompt never mentions" in unknown
    assert problems[15].defects == ()
    assert problems[15].entry_point == "root"


def test_sanitized_loader_reads_a_mirror_folder(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "suites_sanitized_defects.json", tmp_path / "sanitized-mbpp.json")
    splits = load_splits("mbpp-sanitized", tmp_path)
    assert [p.task_id for p in splits["prompt"]] == ["Mbpp/5"]
    assert [p.task_id for p in splits["test"]] == ["Mbpp/12", "Mbpp/13", "Mbpp/14", "Mbpp/15"]


# --- JSONL problems -------------------------------------------------------------------------

GOOD = {
    "task_id": "mine/0",
    "prompt": "def add(a, b):\n    '''Add.'''\n",
    "entry_point": "add",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n",
    "canonical_solution": "    return a + b\n",
}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_suite_loads(tmp_path: Path) -> None:
    second = {**GOOD, "task_id": "mine/1"}
    del second["canonical_solution"]
    path = write_lines(tmp_path / "p.jsonl", [json.dumps(GOOD), "", json.dumps(second)])
    problems = load_suite(f"jsonl:{path}")
    assert [p.task_id for p in problems] == ["mine/0", "mine/1"]
    assert problems[0].suite == f"jsonl:{path}"
    assert problems[0].reference == GOOD["prompt"] + GOOD["canonical_solution"]
    assert problems[1].reference == ""
    assert len(problems[0].cases) == 2
    assert problems[0].test_setup == split_check(GOOD["test"])[0]


@pytest.mark.parametrize(
    "line, field, message",
    [
        ("{not json", None, "not valid JSON"),
        ("[1, 2]", None, "expected a JSON object"),
        (
            json.dumps({k: v for k, v in GOOD.items() if k != "entry_point"}),
            "entry_point",
            "missing",
        ),
        (json.dumps({**GOOD, "prompt": 3}), "prompt", "expected a string, got int"),
        (json.dumps({**GOOD, "test": "assert True"}), "test", "def check"),
        (
            json.dumps({**GOOD, "test": "def check(candidate):\n  assert ("}),
            "test",
            "does not parse",
        ),
        (json.dumps({**GOOD, "entry_point": "not a name"}), "entry_point", "not a Python name"),
        (json.dumps({**GOOD, "canonical_solution": ["x"]}), "canonical_solution", "expected"),
        (json.dumps(GOOD), "task_id", "repeats line 1"),
    ],
)
def test_jsonl_errors_name_file_line_field(
    tmp_path: Path, line: str, field: str | None, message: str
) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps(GOOD), line])
    with pytest.raises(JsonlSuiteError) as info:
        load_suite(f"jsonl:{path}")
    error = info.value
    assert (error.file, error.line, error.field) == (str(path), 2, field)
    assert f"{path}:2" in str(error) and message in str(error)
    if field:
        assert f": {field}:" in str(error)


def test_jsonl_empty_or_missing_file(tmp_path: Path) -> None:
    with pytest.raises(JsonlSuiteError, match="holds no problems"):
        load_jsonl(write_lines(tmp_path / "empty.jsonl", [""]))
    with pytest.raises(JsonlSuiteError, match="cannot read"):
        load_jsonl(tmp_path / "absent.jsonl")
    with pytest.raises(SuiteError, match="needs a path"):
        load_suite("jsonl:")
    bad = tmp_path / "bytes.jsonl"
    bad.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\xfe\n")
    with pytest.raises(JsonlSuiteError, match=r"bytes.jsonl:2: not valid UTF-8"):
        load_jsonl(bad)
