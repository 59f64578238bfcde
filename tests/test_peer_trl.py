"""TRL 1.16.0's GRPOTrainer with the adapter, run as docs/reward_api.md writes it.

The documented block runs as it is (in a scratch folder: it writes ``out/``): SmolLM2-135M
and its tokenizer from the registry's offline GGUF, two HumanEval problems, one real GRPO step
on the CPU, TRL's own reward call into ``TRLReward``. Slow: a real model trains a step.
(TRL's calling convention, its event loop and masking are in test_rewardapi_trl.py.)
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

trl = pytest.importorskip("trl", reason="make setup installs TRL 1.16.0")


def documented_block() -> str:
    text = (ROOT / "docs" / "reward_api.md").read_text()
    section = text[text.index("## TRL\n") : text.index("## verl\n")]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    return match.group(1)


def test_the_documented_block_names_the_checked_version() -> None:
    text = (ROOT / "docs" / "reward_api.md").read_text()
    section = text[text.index("## TRL\n") : text.index("## verl\n")]
    assert f"TRL {trl.__version__}" in section
    assert "load_model(" in documented_block()  # how to get a local model's tokenizer


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_the_documented_grpo_setup_runs_as_written(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(documented_block(), "docs/reward_api.md#trl", "exec"), namespace)
    trainer, reward, tokenizer = namespace["trainer"], namespace["reward"], namespace["tokenizer"]
    logs = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert "rewards/codeeval/mean" in logs
    assert math.isfinite(float(logs.get("loss", logs.get("train_loss"))))
    assert tokenizer.eos_token == "<|im_end|>"  # SmolLM2's own tokenizer, from the local GGUF
    assert len(reward.last_rows) == 2 and {r["task_id"] for r in reward.last_rows} <= {
        "HumanEval/0",
        "HumanEval/1",
    }
    assert all(r["reward"] in (0.0, 1.0) for r in reward.last_rows)
    reward.close()
