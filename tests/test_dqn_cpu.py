"""CPU runs of trainers.dqn, scored by the real harness in the sandbox.

A tiny randomly initialised Llama (fast tier): collection, featurization, updates with finite
losses, target heads that move slowly toward the online heads, decoding on held-out problems,
metrics.jsonl, a checkpoint, and the training report. The packaged SmolLM2-135M through
``python -m trainers.dqn --config configs/dqn_he_cpu.yaml`` (slow tier).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness import cli
from harness.models import tiny_model
from suites import load_suite
from trainers.common.config import load_config
from trainers.common.logger import read_metrics
from trainers.dqn.config import DQNConfig
from trainers.dqn.trainer import DQNTrainer

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = [
    "dqn.collect_samples=2",
    "dqn.max_new_tokens=8",
    "dqn.max_steps=4",
    "dqn.batch_size=2",
    "dqn.eval_interval=2",
    "dqn.eval_num_samples=2",
    "dqn.eval_k=[1,2]",
    "dqn.tau=0.5",
    "logging.progress_bar=false",
]


def test_tiny_model_run_learns_offline_and_decodes(tmp_path: Path) -> None:
    cfg = load_config(
        DQNConfig, REPO / "configs" / "dqn_he_cpu.yaml", [*SMALL, f"output.dir={tmp_path}"]
    )
    model, tok = tiny_model(0)
    problems = load_suite("humaneval", "test[:3]", None)
    trainer = DQNTrainer(
        cfg, model=model, tokenizer=tok, train_problems=problems[:2], eval_problems=problems[2:]
    )
    frozen = {n: p.clone() for n, p in trainer.model.named_parameters()}
    target_before = [p.clone() for p in trainer.target.parameters()]
    records = trainer.train()

    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert read_metrics(tmp_path) == records
    for r in records:
        for key in ("loss", "td_loss", "cql_loss", "q_data_mean", "target_mean", "grad_norm"):
            assert math.isfinite(r[key]), key
        assert r["loss"] == pytest.approx(r["td_loss"] + 0.1 * r["cql_loss"], rel=1e-5)
    assert records[0]["episodes"] == 4  # 2 problems x 2 collected samples
    # the collected data is a results.jsonl with rewards: a later run can learn from it offline
    data = [json.loads(x) for x in (tmp_path / "data" / "results.jsonl").read_text().splitlines()]
    assert len(data) == 4 and all(isinstance(r["reward"], float) for r in data)
    assert {r["task_id"] for r in data} == {p.task_id for p in problems[:2]}
    # evaluation decoded the held-out problem with the learned advantages
    for step in (2, 4):
        ev = records[step - 1]["eval"]
        assert ev["problems"] == 1 and math.isfinite(ev["reward_mean"]) and "pass@2" in ev
    # the policy never moved; the target heads did, by Polyak steps
    assert all(torch.equal(frozen[n], p) for n, p in trainer.model.named_parameters())
    moved = [
        not torch.equal(a, b)
        for a, b in zip(target_before, trainer.target.parameters(), strict=True)
    ]
    assert any(moved)
    assert (tmp_path / "latest").read_text().strip() == "checkpoint-4"

    # learning again offline from the collected file gives the same episodes
    again = load_config(
        DQNConfig,
        REPO / "configs" / "dqn_he_cpu.yaml",
        [
            *SMALL,
            f"output.dir={tmp_path / 'offline'}",
            f"dqn.data={tmp_path / 'data' / 'results.jsonl'}",
        ],
    )
    offline = DQNTrainer(
        again, model=model, tokenizer=tok, train_problems=problems[:2], eval_problems=[]
    )
    assert offline.load_data() == trainer.episodes

    # the report of the run: losses, reward, completion length, evaluation pass@k
    assert cli.main(["report", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    for title in ("td_loss per step", "cql_loss per step", "evaluation pass@2 per step"):
        assert f"<title>{title}</title>" in page or title in page


def test_beta_zero_decodes_the_policy_itself_and_beta_changes_it() -> None:
    """Decoding with the same seed: beta 0 is the data policy (what collection sampled), and
    the shift changes the samples only through the learned Q."""
    from trainers.dqn.decode import decode

    model, tok = tiny_model(0)
    prompt = [tok("def add(a, b):", add_special_tokens=False)["input_ids"]]
    stops = {tok.eos_token_id}
    plain = decode(model, None, prompt, 3, 6, 0.0, 1.0, stops, 0, seed=5)
    again = decode(
        model,
        lambda h: torch.zeros(*h.shape[:-1], len(tok)),
        prompt,
        3,
        6,
        1.0,
        1.0,
        stops,
        0,
        seed=5,
    )
    assert plain == again  # a zero Q shifts nothing

    def favour(h: torch.Tensor) -> torch.Tensor:
        q = torch.zeros(*h.shape[:-1], model.get_output_embeddings().weight.shape[0])
        q[..., 42] = 100.0
        return q

    pushed = decode(model, favour, prompt, 3, 6, 1.0, 1.0, stops, 0, seed=5)
    assert all(t == 42 for sample in pushed[0] for t in sample)


@pytest.mark.slow
def test_smollm2_cpu_run_from_the_command_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainers.dqn",
            "--config",
            "configs/dqn_he_cpu.yaml",
            "--override",
            f"output.dir={tmp_path}",
            "dqn.max_steps=6",
            "dqn.eval_interval=6",
            "dqn.max_new_tokens=24",
            "dataset.train_split=test[:2]",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "done: 6 steps" in done.stdout
    records = read_metrics(tmp_path)
    assert len(records) == 6
    assert all(math.isfinite(r["loss"]) for r in records)
    assert "pass@1" in records[-1]["eval"]


def test_shared_prompt_passes_give_the_states_of_a_full_forward_pass() -> None:
    """featurize() reads a prompt once and repeats its cache for its completions; decode() does
    the same for its samples. Both must equal the plain computation."""
    from trainers.dqn.decode import decode
    from trainers.dqn.features import featurize

    model, tok = tiny_model(0)
    prompts = [[5, 6, 7, 8], [5, 6, 7, 8], [9, 10], [5, 6, 7, 8]]
    comps = [[11, 12, 13], [14], [15, 16], [17, 18, 19, 20]]
    got = featurize(model, prompts, comps, pad=0, batch_size=2)
    with torch.no_grad():
        for p, c, g in zip(prompts, comps, got, strict=True):
            hidden = model.base_model(input_ids=torch.tensor([p + c])).last_hidden_state[0]
            assert torch.allclose(g, hidden[len(p) - 1 : len(p) - 1 + len(c)], atol=1e-5)
    stops = {tok.eos_token_id}
    shared = decode(model, None, [[5, 6, 7], [9]], 2, 5, 0.0, 1.0, stops, 0, seed=3)
    plain = decode(model, None, [[5, 6, 7], [5, 6, 7], [9], [9]], 1, 5, 0.0, 1.0, stops, 0, seed=3)
    assert shared == [[plain[0][0], plain[1][0]], [plain[2][0], plain[3][0]]]
