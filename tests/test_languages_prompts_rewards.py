"""Translated problems prompt in their own language and score with the parts that exist."""

from __future__ import annotations

from typing import Any

import pytest

from harness.models.base import build_prompt
from harness.records import Problem
from harness.reward import score_rows


@pytest.fixture(scope="module")
def problems() -> dict[str, Problem]:
    from suites.registry import load_suite

    found = {}
    for language in ("js", "rs", "java"):
        found |= {p.task_id: p for p in load_suite(f"humaneval-{language}")}
    return found


def test_completion_prompt_is_the_stub_with_the_languages_stops(problems: dict[str, Any]) -> None:
    prompt = build_prompt(problems["rs/HumanEval/13"], "completion", ("<|endoftext|>",))
    assert prompt.text.endswith("fn greatest_common_divisor(a: i64, b: i64) -> i64 {\n")
    assert "def " not in prompt.text and "\n}" in prompt.stop and "<|endoftext|>" in prompt.stop
    java = build_prompt(problems["java/HumanEval/13"], "completion")
    assert java.stop == ("\n    }\n",) and "class Problem {" in java.text


def test_chat_prompt_asks_for_the_language_not_python(problems: dict[str, Any]) -> None:
    python_instruction = "Complete the following Python function: {prompt}"
    prompt = build_prompt(problems["js/HumanEval/13"], "chat", (), python_instruction)
    content = prompt.messages[0]["content"]
    assert "JavaScript function" in content and "```javascript\n/**" in content
    assert "Python" not in content
    assert prompt.entry_point is None  # any closed block ends the answer


def _row(problem: Problem, statuses: list[str], message: str = "") -> dict[str, Any]:
    cases = [
        {"case_id": c.case_id, "status": s, "message": message, "weaker": False, "duration_s": 0}
        for c, s in zip(problem.cases, statuses, strict=False)
    ]
    return {
        "suite": problem.suite,
        "task_id": problem.task_id,
        "sample_id": "s",
        "status": "passed" if set(statuses) == {"passed"} else "failed",
        "passed": set(statuses) == {"passed"},
        "error_kind": None,
        "cases": cases,
        "completion": "",
        "program": problem.prompt + "  return 1;\n}\n",
    }


def test_weighted_reward_names_the_parts_no_analyzer_gives(problems: dict[str, Any]) -> None:
    problem = problems["rs/HumanEval/13"]
    n = len(problem.cases)
    good = _row(problem, ["passed"] * n)
    broken = _row(problem, ["failed"] * n, "compile error: error[E0308]: mismatched types")
    scored = score_rows([good, broken], {problem.task_id: problem}, "weighted")
    assert scored[0]["reward_parts"] == {"syntax": 0.2, "execution": 0.3, "tests": 0.3}
    assert scored[0]["reward"] == pytest.approx(0.8) and scored[0]["reward_range"] == [0.0, 0.8]
    assert set(scored[0]["reward_missing"]) == {"quality", "efficiency"}
    assert "no Rust analyzer" in scored[0]["reward_missing"]["quality"]
    assert scored[0]["analyzers"]["radon"] == {"missing": "no radon analyzer for Rust"}
    assert scored[1]["analyzers"]["syntax"]["ok"] is False
    assert scored[1]["analyzers"]["syntax"]["message"].startswith("compile error: error[E0308]")
    assert scored[1]["reward_parts"]["syntax"] == 0.0


def test_level_presets_are_masked_not_zero(problems: dict[str, Any]) -> None:
    problem = problems["rs/HumanEval/13"]
    row = _row(problem, ["passed"] * len(problem.cases))
    scored = score_rows([row], {problem.task_id: problem}, "code_levels_single")[0]
    assert scored["reward"] is None and scored["reward_missing"]
