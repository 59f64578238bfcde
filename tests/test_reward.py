"""harness.reward: config loading and hand-computed rewards for fixed rows, per preset."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.analyzers import AnalyzerCache
from harness.records import CheckCase, Problem
from harness.reward import RewardConfigError, least_reward, load_reward_config, score_rows
from harness.reward.presets import LOWEST

REPO = Path(__file__).resolve().parents[1]

PROMPT = 'def solve(xs):\n    """Sum of xs."""\n'


def problem(entry: str = "solve", prompt: str = PROMPT, n: int = 4, **metadata: Any) -> Problem:
    cases = tuple(
        CheckCase(f"case_{i}", f"assert candidate([{i}]) == {i}", "compare") for i in range(n)
    )
    return Problem("toy", "toy/1", prompt, entry, cases, "    return sum(xs)\n", metadata=metadata)


def row(program: str, statuses: list[str], messages: list[str] | None = None, **extra: Any) -> dict:
    messages = messages or [""] * len(statuses)
    cases = [
        {"case_id": f"case_{i}", "status": s, "message": m, "weaker": False, "duration_s": 0.004}
        for i, (s, m) in enumerate(zip(statuses, messages, strict=True))
    ]
    status = "passed" if all(s == "passed" for s in statuses) else "failed"
    return {
        "suite": "toy", "task_id": "toy/1", "sample_id": "0", "status": status,
        "passed": status == "passed", "error_kind": None, "cases": cases, "completion": "",
        "program": textwrap.dedent(program), "execution": {"max_rss_kb": 20000}, **extra,
    }  # fmt: skip


@pytest.fixture
def cache(tmp_path: Path) -> AnalyzerCache:
    return AnalyzerCache(tmp_path / "cache.sqlite")


def score(r: dict, p: Problem, preset: str, cache: AnalyzerCache) -> dict:
    [out] = score_rows([r], {p.task_id: p}, load_reward_config(preset), cache=cache)
    assert sum(out["reward_parts"].values()) + load_reward_config(preset).shift == pytest.approx(
        out["reward"]
    )
    return out


SOLVE = "def solve(xs):\n    return sum(xs)\n"


# ---------------------------------------------------------------- config loading


def test_presets_load_from_the_yaml_files_with_their_keys() -> None:
    weighted = load_reward_config("weighted")
    assert weighted.source.endswith("configs/rewards/weighted.yaml")
    assert weighted.params["evaluation"]["code_quality"]["max_complexity"] == 10
    assert weighted.needs_coverage and weighted.test_timeout == 5 and weighted.memory_limit == 512
    assert not load_reward_config("binary").needs_coverage
    assert load_reward_config("code_levels").shift == -4.0
    assert load_reward_config("code_levels_single").shift == -2.1
    assert load_reward_config("class_levels").shift == -6.0
    path = REPO / "configs" / "rewards" / "binary.yaml"
    assert load_reward_config(str(path)).preset == "binary"


def test_bad_configs_name_the_file_and_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("preset: weighted\nevaluation: {syntax_weight: -1}\n")
    with pytest.raises(RewardConfigError, match=r"bad.yaml: evaluation.syntax_weight"):
        load_reward_config(str(bad))
    bad.write_text("preset: nope\n")
    with pytest.raises(RewardConfigError, match=r"bad.yaml: preset 'nope'"):
        load_reward_config(str(bad))
    with pytest.raises(RewardConfigError, match="not a preset"):
        load_reward_config("no_such_reward")


def custom_reward(row: dict, problem: Problem, analyzers: dict, params: dict) -> dict:
    return {"pass": analyzers["tests"]["pass_fraction"], "bonus": params["bonus"]}


def two_args(row: dict, problem: Problem) -> float:
    return 0.0


def test_user_aggregator_by_dotted_path(tmp_path: Path, cache: AnalyzerCache) -> None:
    good = tmp_path / "mine.yaml"
    good.write_text(f"aggregator: {__name__}:custom_reward\nparams: {{bonus: 0.25}}\nshift: 1\n")
    p = problem()
    out = score(row(SOLVE, ["passed", "failed", "passed", "passed"]), p, str(good), cache)
    assert out["reward_parts"] == {"pass": 0.75, "bonus": 0.25}
    assert out["reward"] == pytest.approx(2.0)
    bad = tmp_path / "wrong_arity.yaml"
    bad.write_text(f"aggregator: {__name__}:two_args\n")
    with pytest.raises(RewardConfigError, match=r"wrong_arity.yaml: aggregator .*two_args"):
        load_reward_config(str(bad))


# ---------------------------------------------------------------- binary and weighted


def test_binary(cache: AnalyzerCache) -> None:
    p = problem()
    ok = score(row(SOLVE, ["passed"] * 4), p, "binary", cache)
    bad = score(row(SOLVE, ["passed", "failed", "passed", "passed"]), p, "binary", cache)
    assert (ok["reward"], ok["reward_parts"], ok["reward_range"]) == (1.0, {"tests": 1.0}, [0, 1])
    assert (bad["reward"], bad["reward_parts"]) == (0.0, {"tests": 0.0})


def test_weighted_by_hand(cache: AnalyzerCache) -> None:
    # 2 passed, 1 wrong answer (ran), 1 raised (did not run to an answer); the sample takes
    # 4 ms per passed case, the reference 2 ms: speed 0.5. Clean code: quality 1.
    p = problem(reference_durations={f"case_{i}": 0.002 for i in range(4)})
    r = row(
        SOLVE,
        ["passed", "failed", "failed", "passed"],
        ["", "assert 3 == 2", "Failed: candidate raised ZeroDivisionError: division by zero", ""],
    )
    out = score(r, p, "weighted", cache)
    assert out["reward_parts"] == pytest.approx(
        {
            "syntax": 0.2,
            "execution": 0.3 * 3 / 4,
            "tests": 0.3 * 2 / 4,
            "quality": 0.1,
            "efficiency": 0.1 * 0.5,
        }  # fmt: skip
    )
    assert out["reward"] == pytest.approx(0.725)
    assert out["reward_range"] == [0.0, 1.0]
    assert out["analyzers"]["tests"]["exceptions"] == {
        "AssertionError": 1,
        "ZeroDivisionError": 1,
    }


def test_weighted_quality_counts_complexity_style_and_security(cache: AnalyzerCache) -> None:
    # unused import (F401) + `import os` on one line with another (E401): 2 style findings ->
    # 0.8; eval: bandit B307 MEDIUM -> 0.5; complexity 1 -> 1. quality = 0.1 * 2.3 / 3.
    program = "import os, sys\n\n\ndef solve(xs):\n    return eval(str(sum(xs)))\n"
    out = score(row(program, ["passed"] * 4), problem(), "weighted", cache)
    assert out["analyzers"]["style"]["codes"] == {"E401": 1, "F401": 2}
    assert [i["test_id"] for i in out["analyzers"]["bandit"]["issues"]] == ["B307"]
    assert out["reward_parts"]["quality"] == pytest.approx(0.1 * (1 + 0.7 + 0.5) / 3)


def test_infrastructure_errors_are_masked_not_zero(cache: AnalyzerCache) -> None:
    r = row(SOLVE, ["error"] * 4)
    r.update(status="error", error_kind="infra")
    out = score_rows([r], {"toy/1": problem()}, load_reward_config("weighted"), cache=cache)[0]
    assert out["reward"] is None and out["reward_parts"] == {}
    assert "syntax" in out["analyzers"]


def test_a_failing_analyzer_is_an_error_entry_not_a_lost_row(
    cache: AnalyzerCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # ruff cannot be found
    monkeypatch.setattr("harness.analyzers.style.sys.executable", "/nonexistent/python")
    out = score(row(SOLVE, ["passed"] * 4), problem(), "weighted", cache)
    assert "error" in out["analyzers"]["style"]
    assert out["reward"] is not None


@pytest.mark.parametrize("preset", ["binary", "weighted", "code_levels", "class_levels"])
def test_least_reward_is_the_low_end_of_each_preset_s_range(preset, cache) -> None:
    """What the service gives a response past its size limit: the range's low end, shifted,
    as a scored row reports it."""
    out = score(row("def solve(xs):\n    return 0\n", ["failed"] * 4), problem(), preset, cache)
    config = load_reward_config(preset)
    assert least_reward(preset) == out["reward_range"][0] == LOWEST[preset] + config.shift
    assert out["reward"] >= least_reward(preset)


def test_least_reward_of_a_custom_aggregator_is_its_declared_range(tmp_path: Path) -> None:
    declared = tmp_path / "declared.yaml"
    declared.write_text(
        f"aggregator: {__name__}:custom_reward\nparams: {{reward_range: [-2, 3]}}\nshift: 1\n"
    )
    undeclared = tmp_path / "undeclared.yaml"
    undeclared.write_text(f"aggregator: {__name__}:custom_reward\n")
    assert least_reward(str(declared)) == -1.0
    assert least_reward(str(undeclared)) is None
