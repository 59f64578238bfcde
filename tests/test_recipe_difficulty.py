"""Difficulty filtering: the band, the curriculum, the cached file the trainers read, the
`codeeval difficulty` command on real problems, and TRL's recipe options through GRPO."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import difficulty as dif
from harness.cli import main as cli_main
from harness.records import Problem
from trainers.common.config import ConfigError, load_config
from trainers.magrpo.config import MAGRPOConfig


def _problem(tid: str) -> Problem:
    return Problem("humaneval", tid, "p", "f", (), "")


TABLE = {
    "a": dif.Difficulty(0, 8, 0.0),
    "b": dif.Difficulty(1, 8, 0.2),
    "c": dif.Difficulty(4, 8, 0.6),
    "d": dif.Difficulty(8, 8, 1.0),
    "e": dif.Difficulty(4, 8, 0.5),
}


def test_band_keeps_sometimes_solved_and_reports_unmeasured() -> None:
    problems = [_problem(t) for t in ("a", "b", "c", "d", "e", "x")]
    kept, unmeasured = dif.select(problems, TABLE, 0.0, 1.0)
    assert [p.task_id for p in kept] == ["b", "c", "e"] and unmeasured == ["x"]
    kept, _ = dif.select(problems, TABLE, None, 0.5)  # no lower bound: the never solved stay
    assert [p.task_id for p in kept] == ["a", "b"]
    kept, _ = dif.select(problems, TABLE, 0.2, None)
    assert [p.task_id for p in kept] == ["c", "d", "e"]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(0, 8), min_size=1, max_size=20),
    st.sampled_from([None, 0.0, 0.25]),
    st.sampled_from([None, 0.75, 1.0]),
)
def test_band_is_exactly_the_open_interval(
    passed: list[int], low: float | None, high: float | None
) -> None:
    table = {str(i): dif.Difficulty(k, 8, 0.0) for i, k in enumerate(passed)}
    kept, _ = dif.select([_problem(t) for t in table], table, low, high)
    for tid, d in table.items():
        inside = (low is None or d.pass_rate > low) and (high is None or d.pass_rate < high)
        assert (tid in {p.task_id for p in kept}) == inside


def test_curriculum_orders_by_pass_rate_with_seeded_ties() -> None:
    problems = [_problem(t) for t in ("a", "b", "c", "d", "e")]
    easy = [p.task_id for p in dif.curriculum(problems, TABLE, "easy_first", 0)]
    assert easy[0] == "d" and set(easy[1:3]) == {"c", "e"} and easy[3:] == ["b", "a"]
    hard = [p.task_id for p in dif.curriculum(problems, TABLE, "hard_first", 0)]
    assert hard[:2] == ["a", "b"] and hard[-1] == "d"
    assert easy == [p.task_id for p in dif.curriculum(problems, TABLE, "easy_first", 0)]
    assert [p.task_id for p in dif.curriculum(problems, TABLE, "none", 0)] == list("abcde")


def test_summarize_counts_passes_and_rewards() -> None:
    rows = [
        {"task_id": "a", "passed": True, "reward": 1.0},
        {"task_id": "a", "passed": False, "reward": 0.5},
        {"task_id": "b", "passed": False, "reward": None},
        {"task_id": "b", "passed": False, "reward": 0.0},
    ]
    got = dif.summarize(rows, 2)
    assert got["a"] == dif.Difficulty(1, 2, 0.75) and got["a"].pass_rate == 0.5
    assert got["b"].pass_rate == 0.0
    assert dif.band_counts({**got, "c": dif.Difficulty(2, 2, 1.0)}) == {
        "never": 1, "sometimes": 1, "always": 1,
    }  # fmt: skip


def test_cache_lookup_and_training_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path))
    meta = {"suite": "mbpp", "split": "train", "model": "org/m", "n": 4}
    few = dif.default_path("mbpp", "train[:10]", "org/m", 4, 0.8, 64, 0)
    dif.write_table(few, {"a": dif.Difficulty(0, 4, 0.0)}, meta)
    many = dif.default_path("mbpp", "train", "org/m", 8, 0.8, 64, 0)
    dif.write_table(many, TABLE, {**meta, "n": 8})
    assert few.parent == many.parent and "org--m" in str(many)
    assert dif.find_cached("mbpp", "train[5:]", "org/m") == many  # most samples wins
    assert dif.read_table(many) == TABLE

    dataset = SimpleNamespace(
        difficulty="cache",
        suite="mbpp",
        train_split="train",
        min_pass_rate=0.0,
        max_pass_rate=1.0,
        curriculum="easy_first",
    )
    problems = [_problem(t) for t in ("a", "b", "c", "d")]
    got = dif.training_problems(problems, dataset, "org/m", 0)
    assert [p.task_id for p in got] == ["c", "b"]
    dataset.difficulty = None
    assert dif.training_problems(problems, dataset, "org/m", 0) == problems
    dataset.difficulty = str(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError, match="codeeval difficulty"):
        dif.training_problems(problems, dataset, "org/m", 0)
    dataset.difficulty, dataset.min_pass_rate = "cache", 0.9
    with pytest.raises(ValueError, match="widen the band"):
        dif.training_problems(problems, dataset, "org/m", 0)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("dataset.min_pass_rate=1.5", "min_pass_rate"),
        ("dataset.max_pass_rate=0.0", "band"),
        ("dataset.curriculum=easy_first", "dataset.difficulty"),
    ],
)
def test_dataset_rejects_impossible_bands(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(MAGRPOConfig, None, [override])


def test_magrpo_trainer_keeps_the_curriculum_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trainer's epoch order is the curriculum's, not a shuffle of it."""
    from trainers.magrpo.trainer import MAGRPOTrainer

    cfg = load_config(
        MAGRPOConfig,
        None,
        ["dataset.difficulty=x.json", "dataset.curriculum=easy_first", "dataset.shuffle=true"],
    )
    fake = SimpleNamespace(config=cfg, train_problems=[1, 2, 3, 4, 5])
    assert MAGRPOTrainer._order(fake, 0) == [0, 1, 2, 3, 4]  # type: ignore[arg-type]
    cfg.dataset.curriculum = "none"
    assert MAGRPOTrainer._order(fake, 0) != [0, 1, 2, 3, 4]  # type: ignore[arg-type]


def test_grpo_passes_the_recipe_to_trl(tmp_path: Path) -> None:
    from trainers.grpo.config import parse_args
    from trainers.grpo.trainer import recipe_rewards, to_trl_args

    base = ["--config", "configs/grpo_he_cpu.yaml", "--override", f"output.dir={tmp_path}"]
    plain = to_trl_args(parse_args(base))
    assert plain.epsilon_high == 0.28 and plain.mask_truncated_completions is False
    assert plain.reward_weights is None and plain.loss_type == "dapo"
    cfg = parse_args(
        [*base, "grpo.max_new_tokens=10", "grpo.overlong_buffer=4", "grpo.overlong_penalty=0.5",
         "grpo.mask_truncated_completions=true", "grpo.num_iterations=2", "grpo.scale_rewards=none",
         "dataset.difficulty=x.json", "dataset.curriculum=hard_first"]
    )  # fmt: skip
    args = to_trl_args(cfg)
    assert args.mask_truncated_completions and args.num_iterations == 2
    assert args.reward_weights == [1.0, 0.5] and args.scale_rewards == "none"
    assert args.shuffle_dataset is False  # the curriculum's order survives
    (punish,) = recipe_rewards(cfg)
    assert punish([[1] * 5, [1] * 8, [1] * 10]) == pytest.approx([0.0, -0.5, -1.0])
    with pytest.raises(ConfigError, match="overlong_buffer"):
        parse_args([*base, "grpo.max_new_tokens=10", "grpo.overlong_buffer=10"])


@pytest.mark.slow  # a model samples every problem: 18 s
def test_difficulty_command_on_real_problems(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """SmolLM2 (packaged) on two HumanEval problems: a file the trainers read, reused."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    out = tmp_path / "d.json"
    argv = ["difficulty", "--suite", "humaneval", "--split", "test[:2]", "--model",
            "smollm2-135m", "-n", "2", "--max-new-tokens", "24", "--backend", "transformers",
            "--device", "cpu", "-o", str(out)]  # fmt: skip
    assert cli_main(argv) == 0
    data = json.loads(out.read_text())
    assert data["n"] == 2 and data["split"] == "test" and data["model"] == "smollm2-135m"
    assert set(data["problems"]) == {"HumanEval/0", "HumanEval/1"}
    for row in data["problems"].values():
        assert row["n"] == 2 and 0 <= row["passed"] <= 2
        assert row["pass_rate"] == row["passed"] / 2
    first = out.stat().st_mtime_ns
    capsys.readouterr()
    assert cli_main(argv) == 0  # everything cached: nothing measured, no model loaded
    assert "(0 measured now)" in capsys.readouterr().out
    assert json.loads(out.read_text())["problems"] == data["problems"]
    assert out.stat().st_mtime_ns >= first
    more = list(argv)
    more[more.index("-n") + 1] = "3"
    with pytest.raises(ValueError, match="other settings"):
        cli_main(more)  # the file was measured with n=2: never mixed
