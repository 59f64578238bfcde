"""Mining a real PyPI project (inflection 0.5.1's sdist, with its tests), in the slow tier.

The sdist is never vendored: ``python benchmarks/mining.py`` downloads and unpacks it into
``$CODEEVAL_CACHE/mining``; without it this test skips and says how to get it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.evaluate import evaluate
from harness.mining import MineOptions, mine
from harness.paths import cache_dir
from harness.records import Sample
from suites import load_suite

pytestmark = pytest.mark.slow


def _sdist(name: str) -> Path:
    folder = cache_dir() / "mining" / "src" / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is missing: run `python benchmarks/mining.py` once (needs PyPI)")
    return folder


def test_inflection_mines_into_every_tier_and_its_references_pass(tmp_path: Path) -> None:
    suite = tmp_path / "inflection.jsonl"
    report = mine(_sdist("inflection-0.5.1"), suite, MineOptions())
    assert report.functions_found == 13
    assert len(report.problems) == 12
    assert report.drop_counts() == {"no test executes its body": 1}
    assert set(report.tier_counts()) == {"tier0", "tier1", "tier2"}
    hardest = load_suite(f"jsonl:{suite}", split="tier2")
    rows = evaluate(hardest, [Sample(p.task_id, p.reference, "ref") for p in hardest])
    assert [r["status"] for r in rows] == ["passed"] * len(hardest)
    wrong = [Sample(p.task_id, "    return None\n", "none") for p in hardest]
    assert all(r["status"] == "failed" for r in evaluate(hardest, wrong))


@pytest.mark.usefixtures("one_torch_thread")
def test_magrpo_trains_on_a_mined_tier(tmp_path: Path) -> None:
    """configs/magrpo_mined_cpu.yaml on the fixture repository's tier0: finite losses, rewards
    from the mined checks, metrics written (the helper's aux joins the module copy)."""
    import math

    from trainers.common.config import load_config
    from trainers.common.logger import read_metrics
    from trainers.magrpo.config import MAGRPOConfig
    from trainers.magrpo.trainer import MAGRPOTrainer

    repo = Path(__file__).resolve().parents[1]
    suite = tmp_path / "mined.jsonl"
    mine(repo / "tests" / "fixtures" / "mining_repo", suite, MineOptions())
    overrides = [
        f"dataset.suite=jsonl:{suite}", "dataset.train_split=tier0[:1]", "magrpo.max_steps=1",
        "magrpo.max_new_tokens=32", "magrpo.eval_interval=0", "logging.progress_bar=false",
        "output.save_final_model=false", f"output.dir={tmp_path / 'run'}",
    ]  # fmt: skip
    config = load_config(MAGRPOConfig, repo / "configs" / "magrpo_mined_cpu.yaml", overrides)
    trainer = MAGRPOTrainer(config)
    records = trainer.train()
    assert [r["step"] for r in records] == [1]
    assert all(math.isfinite(records[0][a.name]["loss"]) for a in trainer.agents)
    assert read_metrics(tmp_path / "run") == records
