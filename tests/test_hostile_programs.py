"""Programs whose shape or size is the attack: the trusted side parses and analyzes every
candidate's program (syntax, structure, radon, bandit, style, the feedback text), and Python's
parser raises MemoryError or RecursionError on some texts, not only SyntaxError. None of them
may stop a run, lose a row or earn a reward part it did not."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.analyzers import TOO_LONG, Subject, run_analyzers
from harness.analyzers.cache import AnalyzerCache
from harness.analyzers.syntax import check_syntax
from harness.program_ast import MAX_ANALYZED_CHARS, parse_failure, parse_program
from harness.rewardapi import RewardEngine

# name -> a body of ``add(a, b)`` nested ``n`` deep; what CPython 3.11's parser does with it
# at the sizes below is in the comment.
SHAPES = {
    "parens": lambda n: "    return " + "(" * n + "a + b" + ")" * n,  # SyntaxError past 200
    "lambdas": lambda n: "    f = " + "lambda: " * n + "1\n    return a + b",  # MemoryError
    "minus": lambda n: "    return " + "-" * n + "a + b",  # MemoryError
    "plus_chain": lambda n: "    return a + b" + " + 0" * n,  # RecursionError
    "calls": lambda n: "    f = a" + "()" * n + "\n    return a + b",  # RecursionError
    "attributes": lambda n: "    x = a" + ".real" * n + "\n    return a + b",  # RecursionError
    "nots": lambda n: "    x = " + "not " * n + "a\n    return a + b",  # parses, compile fails
    "null_byte": lambda n: "    return a + b\0" * max(1, n // 1000),  # ValueError
}
HOSTILE_SIZES = {"parens": 100_000, "lambdas": 3_000, "minus": 100_000, "plus_chain": 100_000}
HOSTILE_SIZES |= {"calls": 100_000, "attributes": 100_000, "nots": 2_000, "null_byte": 1_000}

ADD = {
    "prompt": "def add(a, b):\n",
    "tests": "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n",
    "entry_point": "add",
    "reference": "def add(a, b):\n    return a + b\n",
}


def program(shape: str, n: int) -> str:
    return ADD["prompt"] + SHAPES[shape](n) + "\n"


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(SHAPES)), st.integers(min_value=1, max_value=120_000))
def test_parsing_a_program_never_raises(shape: str, n: int) -> None:
    text = program(shape, n)
    tree, failure = parse_program(text), parse_failure(text)
    assert (tree is None) == (failure is not None)
    if tree is not None:
        assert isinstance(tree, ast.Module)
    else:
        line, col, message = failure  # type: ignore[misc]
        assert message


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_syntax_report_says_why_a_hostile_program_does_not_parse(shape: str) -> None:
    report = check_syntax(program(shape, HOSTILE_SIZES[shape]))
    assert report["ok"] is False and report["message"]
    if shape == "nots":  # the parser takes it; the tools that walk it by recursion cannot
        assert "too deep to analyze" in report["message"]


def test_a_program_past_the_bound_is_not_analyzed_and_earns_no_analyzer_part(
    tmp_path: Path,
) -> None:
    long = "def add(a, b):\n    return a + b\n" + "x = 1\n" * (MAX_ANALYZED_CHARS // 6)
    short = "def add(a, b):\n    return a + b\n"
    subjects = [Subject({"program": text}, None, text) for text in (long, short)]
    names = ["syntax", "structure", "radon", "bandit", "style"]
    reports = run_analyzers(subjects, names, cache=AnalyzerCache(tmp_path / "cache.sqlite"))
    assert all(reports[0][name] == TOO_LONG for name in names)
    assert reports[1]["syntax"]["ok"] is True and "error" not in reports[1]["radon"]
    assert parse_program(long) is None and "too long" in parse_failure(long)[2]  # type: ignore[index]


@pytest.mark.parametrize("preset", ["weighted", "binary", "code_levels"])
def test_hostile_programs_are_scored_beside_an_honest_one(preset: str) -> None:
    """Through the reward engine (what the trainers and ``codeeval serve`` call): one row per
    item, in order, the honest sample still passes, and no hostile one earns the syntax part."""
    shapes = sorted(SHAPES)
    items = [{"completion": SHAPES[s](HOSTILE_SIZES[s]) + "\n", "problem": ADD} for s in shapes]
    items.append({"completion": "    return a + b\n", "problem": ADD})
    with RewardEngine(reward=preset, workers=0) as engine:
        rows = engine.score(items)
    assert len(rows) == len(items)
    assert rows[-1]["status"] == "passed"
    for shape, row in zip(shapes, rows, strict=False):
        assert isinstance(row["reward"], float), (shape, row.get("error"))
        assert row["status"] != "passed" or shape == "nots", shape  # the child compiles it
        syntax = row["analyzers"]["syntax"]
        assert not syntax.get("ok"), (shape, syntax)
        assert row["reward"] < rows[-1]["reward"] or shape == "nots", shape  # a right answer


def test_a_tree_too_deep_for_bandit_is_not_handed_to_it() -> None:
    """2,000 ``not`` s parse, and bandit's visitors overflow on them. Before, bandit skipped the
    file, a skipped file read as "no issues" (``eval`` beside it earned the security credit),
    and the RecursionError inside bandit left this process unable to deep-copy a syntax tree
    (plus generation, in the same worker, failed next)."""
    hidden = SHAPES["nots"](2_000) + "\n    eval('1')\n"
    with RewardEngine(reward="weighted", workers=0) as engine:
        row, plain = engine.score(
            [
                {"completion": hidden, "problem": ADD},
                {"completion": "    eval('1')\n    return a + b\n", "problem": ADD},
            ]
        )
    assert row["status"] == "passed"  # the sandbox's compiler takes it
    assert "issues" not in row["analyzers"]["bandit"]
    assert row["reward_parts"]["quality"] == 0.0 < plain["reward_parts"]["quality"]
    tree = ast.parse(Path(ast.__file__).read_text())
    assert ast.dump(copy.deepcopy(tree)) == ast.dump(tree)
