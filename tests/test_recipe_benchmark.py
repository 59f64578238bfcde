"""The held-out benchmark's recipe parts: what makes each A/B arm, the difficulty bands, and
the recipe configs themselves."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from trainers.common.config import load_config
from trainers.grpo.config import GRPORunConfig
from trainers.magrpo.config import MAGRPOConfig, MAGRPOSettings

ROOT = Path(__file__).resolve().parents[1]


def _heldout():
    spec = importlib.util.spec_from_file_location("heldout", ROOT / "benchmarks" / "heldout.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ARGS = SimpleNamespace(buffer=4, generations=8, updates_per_rollout=4, difficulty="cache")


def test_arms_differ_only_in_the_recipe() -> None:
    heldout = _heldout()
    plain = load_config(MAGRPOConfig, heldout.CONFIG, heldout.arm_overrides(ARGS, False))
    recipe = load_config(MAGRPOConfig, heldout.CONFIG, heldout.arm_overrides(ARGS, True))
    defaults = MAGRPOSettings()
    for key in heldout.RECIPE_KEYS:
        assert getattr(plain.magrpo, key) == getattr(defaults, key), key
    assert plain.magrpo.minibatch_size == 0 and plain.dataset.difficulty is None
    r = recipe.magrpo
    assert (r.dynamic_sampling, r.loss_aggregation, r.overlong) == (True, "token", "mask")
    assert (r.epsilon_low, r.epsilon_high, r.beta) == (0.2, 0.28, 0.0)
    assert r.minibatch_size == 8  # 32 sequences per agent, 4 updates per rollout
    assert recipe.dataset.difficulty == "cache"
    assert (recipe.dataset.min_pass_rate, recipe.dataset.max_pass_rate) == (0.0, 1.0)
    # everything outside the recipe is the same in both arms
    for section in ("model", "reward", "external"):
        assert getattr(plain, section) == getattr(recipe, section)
    no_filter = heldout.arm_overrides(SimpleNamespace(**{**vars(ARGS), "difficulty": None}), True)
    assert "dataset.difficulty=null" in no_filter


def test_bands_and_their_report() -> None:
    heldout = _heldout()
    assert [heldout.band_of(r) for r in (0.0, 0.1, 0.5, 0.9, 1.0)] == [
        "never", "low", "high", "high", "always",
    ]  # fmt: skip
    arm = {
        "scores": {
            "before": {"a": [0.0, False], "b": [1.0, True], "c": [0.0, False]},
            "after": {"a": [1.0, True], "b": [1.0, True], "c": [0.0, False]},
        }
    }
    report = heldout.band_report({"recipe": arm}, {"a": 0.0, "b": 1.0, "c": 0.25, "z": 0.75})
    assert report["never"] == {"problems": 1, "recipe": {"before": 0.0, "after": 1.0}}
    assert report["always"]["recipe"] == {"before": 1.0, "after": 1.0}
    assert report["low"]["problems"] == 1 and report["high"]["problems"] == 0
    assert report["high"]["recipe"] == {"before": None, "after": None}


@pytest.mark.parametrize("name", ["magrpo_mbpp_recipe.yaml", "magrpo_mbpp_recipe_cpu.yaml"])
def test_magrpo_recipe_configs_load(name: str) -> None:
    cfg = load_config(MAGRPOConfig, ROOT / "configs" / name, [])
    assert cfg.magrpo.dynamic_sampling and cfg.magrpo.loss_aggregation == "token"
    assert cfg.magrpo.epsilon_high == 0.28 and cfg.magrpo.beta == 0.0
    assert cfg.dataset.suite == "mbpp" and cfg.dataset.train_split.startswith("train")
    assert not cfg.dataset.eval_split or cfg.dataset.eval_split.startswith("test")
    if name == "magrpo_mbpp_recipe.yaml":
        assert cfg.model.name == "qwen2.5-coder-1.5b" and cfg.model.rollout_backend == "vllm"
        assert cfg.dataset.difficulty == "cache"


@pytest.mark.parametrize("name", ["grpo_mbpp_recipe.yaml", "grpo_mbpp_recipe_cpu.yaml"])
def test_grpo_recipe_configs_load(name: str) -> None:
    cfg = load_config(GRPORunConfig, ROOT / "configs" / name, [])
    g = cfg.grpo
    assert g.mask_truncated_completions and g.epsilon_high == 0.28 and g.beta == 0.0
    assert g.loss_type == "dapo" and g.scale_rewards == "none"
