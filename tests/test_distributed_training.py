"""Training in several processes: sharding, gradient averaging, and real 2-process runs.

Fast: how a step's prompts are dealt over ranks (hypothesis), the launcher's environment, the
parameter digest. Slow: real ``accelerate launch`` and ``torchrun`` runs (2 processes, gloo on
CPU) of MAGRPO, PPO and TRL's GRPO on a tiny random Llama, scored by the real harness: every
rank holds bit-identical parameters after every step (each rank writes its own digest), rank 0
alone logs and saves, and a run stopped after 2 steps and resumed continues on the same shards
to the same parameters as an uninterrupted 4-step run.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.common import distributed as dist

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ fast: sharding


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 40),
    per_rank=st.integers(1, 5),
    world=st.integers(1, 6),
    seed=st.integers(0, 10),
)
def test_an_epoch_deals_every_prompt_once_and_every_rank_the_same_count(
    n: int, per_rank: int, world: int, seed: int
) -> None:
    import random

    order = list(range(n))
    random.Random(seed).shuffle(order)
    size = per_rank * world  # prompts per step over all ranks, as the trainers take them
    seen: Counter[int] = Counter()
    padded = 0
    for start in range(0, n, size):
        chunk = order[start : start + size]
        shares = [dist.rank_share(chunk, r, world, order) for r in range(world)]
        assert len({len(s) for s in shares}) == 1  # the same number of all-reduces per rank
        assert 1 <= len(shares[0]) <= per_rank
        dealt = [x for s in shares for x in s]
        pad = len(dealt) - len(chunk)
        padded += pad
        # the padding: the epoch's order from its start, cyclically
        assert Counter(dealt) == Counter(chunk) + Counter(order[i % n] for i in range(pad))
        seen.update(chunk)
    assert seen == Counter(range(n))  # every prompt exactly once per epoch, padding aside
    assert padded < world  # only the last chunk is padded
    if world == 1:
        assert dist.rank_share(order, 0, 1, order) == order


def test_rank_share_rejects_a_rank_outside_the_world() -> None:
    with pytest.raises(ValueError, match="0 <= rank < world"):
        dist.rank_share([1, 2], 2, 2, [1, 2])


def test_the_launcher_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert dist.env_world() == dist.Distributed(0, 1, 0)
    # no launcher variables: nothing is initialized, one process as before
    assert dist.init_distributed() == dist.Distributed(0, 1, 0)
    assert not torch.distributed.is_initialized()
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    place = dist.env_world()
    assert (place.rank, place.world_size, place.local_rank, place.is_main) == (3, 4, 1, False)
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ValueError, match="RANK=4 WORLD_SIZE=4"):
        dist.env_world()
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(ValueError, match="RANK='one' is not an integer"):
        dist.env_world()


def test_accelerate_plain_launcher_on_cpu_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # what accelerate's plain launcher leaves: no WORLD_SIZE, ACCELERATE_USE_CPU set
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACCELERATE_USE_CPU", "False")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="--multi_gpu --num_processes N"):
        assert dist.init_distributed().world_size == 1


def test_params_digest_sees_one_ulp() -> None:
    a = torch.linspace(-1, 1, 50)
    b = a.clone()
    assert dist.params_digest([("w", a)]) == dist.params_digest([("w", b)])
    b[7] = torch.nextafter(b[7], torch.tensor(2.0))
    assert dist.params_digest([("w", a)]) != dist.params_digest([("w", b)])
    assert dist.params_digest([("w", a)]) != dist.params_digest([("v", a)])
    assert dist.mean_numbers([{"x": 1.0, "n": {"y": 2}}, {"x": 3.0, "n": {"y": 4}}]) == {
        "x": 2.0,
        "n": {"y": 3.0},
    }


def test_grpo_refuses_fewer_prompts_than_one_batch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # TRL drops a short batch: 1 problem for 2 prompts per step would train 0 steps, silently
    # (under 2 processes the same happens with prompts_per_step 1: TRL counts the processes)
    from suites import load_suite
    from trainers.common.config import ConfigError, load_config
    from trainers.grpo.config import GRPORunConfig
    from trainers.grpo.trainer import build_trainer, check_enough_prompts

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    overrides = ["grpo.prompts_per_step=2", f"output.dir={tmp_path}"]
    cfg = load_config(GRPORunConfig, str(REPO / "configs" / "grpo_he_cpu.yaml"), overrides)
    one = load_suite("humaneval", "test[:1]", None)
    with pytest.raises(ConfigError, match="1 usable problem.*one generation batch takes 2"):
        build_trainer(cfg, problems=one, reward_fn=lambda **kw: [0.0], policy=object())
    check_enough_prompts(2, 2)  # a whole batch is enough


# ------------------------------------------------------------------ slow: real processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launch(launcher: str, module_or_script: list[str], args: list[str], cwd: Path) -> str:
    """Run 2 processes under ``accelerate launch`` or ``torchrun``; returns the output."""
    port = str(_free_port())
    if launcher == "accelerate":
        # On a machine without GPUs accelerate's plain launcher starts ONE process whatever
        # --num_processes says; --multi_gpu selects its torchrun-based launcher (gloo here).
        head = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
        head += ["--num_processes", "2", "--num_machines", "1", "--main_process_port", port]
        head += ["--mixed_precision", "no", "--dynamo_backend", "no"]
    else:
        head = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
        head += ["--master_port", port]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [*head, *module_or_script, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


def _ranks(out: Path) -> list[list[dict[str, Any]]]:
    files = sorted((out / "ranks").glob("rank-*.jsonl"))
    assert [f.name for f in files] == ["rank-0.jsonl", "rank-1.jsonl"]
    return [[json.loads(x) for x in f.read_text().splitlines()] for f in files]


def _assert_in_sync(ranks: list[list[dict[str, Any]]], steps: list[int]) -> None:
    """Each rank's own digest per step: equal across ranks, and moving step to step."""
    for records in ranks:
        assert [r["step"] for r in records] == steps
    for a, b in zip(*ranks, strict=True):
        assert a["params"] == b["params"], f"step {a['step']}: ranks differ"
    digests = [r["params"] for r in ranks[0]]
    assert len(set(digests)) == len(digests), "parameters did not move every step"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama (hidden 32, 2 layers) with SmolLM2's tokenizer, as a local model."""
    from harness.models import tiny_model

    folder = tmp_path_factory.mktemp("tiny-llama")
    model, tok = tiny_model(0, hidden=32)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _magrpo_args(tiny: Path, out: Path, steps: int, resume: bool = False) -> list[str]:
    return [
        "--config",
        str(REPO / "configs" / "magrpo_he_cpu.yaml"),
        "--override",
        f"model.name={tiny}",
        "dataset.train_split=test[:3]",  # 2 per step over 2 ranks: the 2nd chunk is padded
        "magrpo.num_epochs=2",
        f"magrpo.max_steps={steps}",
        "magrpo.max_new_tokens=6",
        "magrpo.learning_rate=1e-2",
        # a random model's samples all score alike: raw advantages of a shifted reward move
        "magrpo.advantage_mode=raw",
        "reward.shift=-0.5",
        "magrpo.eval_interval=2",
        f"output.dir={out}",
        "output.save_final_model=false",
        "logging.progress_bar=false",
        *(["output.resume_from=latest"] if resume else []),
    ]


@pytest.mark.slow
def test_magrpo_two_processes_stay_identical_and_resume_on_the_same_shards(
    tiny_folder: Path, tmp_path: Path
) -> None:
    full, part = tmp_path / "full", tmp_path / "part"
    module = ["-m", "trainers.magrpo"]
    printed = _launch("accelerate", module, _magrpo_args(tiny_folder, full, 4), tmp_path)
    assert printed.count("done: 4 steps") == 1  # rank 0 alone reports

    ranks = _ranks(full)
    _assert_in_sync(ranks, [1, 2, 3, 4])
    for step in range(4):  # each rank its own prompt; an epoch (2 steps) covers all 3
        assert ranks[0][step]["task_ids"] != ranks[1][step]["task_ids"]
    for epoch in (0, 1):
        dealt = {t for r in ranks for rec in r[2 * epoch : 2 * epoch + 2] for t in rec["task_ids"]}
        assert dealt == {"HumanEval/0", "HumanEval/1", "HumanEval/2"}
    metrics = [json.loads(x) for x in (full / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]  # one writer
    assert [("eval" in m) for m in metrics] == [False, True, False, True]
    for m, r in zip(metrics, ranks[0], strict=True):
        assert m["distributed"] == {"processes": 2, "params_sha256": r["params"]}
        assert m["turn_1"]["joint_actions"] == 4  # 2 ranks x 1 prompt x G=2, gathered
    checkpoint = full / "checkpoint-4"
    assert (checkpoint / "state.pt").is_file() and (checkpoint / "rng-rank1.pt").is_file()

    # torchrun works the same. A run stopped after step 2 (its checkpoint-2, as rank 0 and
    # rank 1 wrote it) and resumed to step 4 continues on the same shards to the same bits.
    part.mkdir()
    shutil.copytree(full / "checkpoint-2", part / "checkpoint-2")
    (part / "latest").write_text("checkpoint-2\n")
    _launch("torchrun", module, _magrpo_args(tiny_folder, part, 4, resume=True), tmp_path)
    resumed = _ranks(part)
    for a, b in zip(ranks, resumed, strict=True):
        assert [(r["step"], r["task_ids"]) for r in a[2:]] == [
            (r["step"], r["task_ids"]) for r in b
        ]
        assert [r["params"] for r in a[2:]] == [r["params"] for r in b]  # bit-identical
    logged = [json.loads(x)["step"] for x in (part / "metrics.jsonl").read_text().splitlines()]
    assert logged == [3, 4]


@pytest.mark.slow
def test_ppo_two_processes_with_a_central_critic(tiny_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "ppo"
    args = [
        "--config",
        str(REPO / "configs" / "ppo_he_cpu.yaml"),
        "--override",
        f"model.name={tiny_folder}",
        "ppo.num_agents=2",
        "ppo.critic=central",
        "ppo.max_new_tokens=6",
        "ppo.minibatch_size=1",  # 2 optimizer steps per agent per step, each all-reduced
        f"output.dir={out}",
    ]
    printed = _launch("torchrun", ["-m", "trainers.ppo"], args, tmp_path)
    assert printed.count('"steps": 2') == 1
    ranks = _ranks(out)
    _assert_in_sync(ranks, [1, 2])
    assert [r["task_ids"] for r in ranks[0]] == [["HumanEval/0"]] * 2  # no shuffle: 2 prompts
    assert [r["task_ids"] for r in ranks[1]] == [["HumanEval/1"]] * 2  # dealt over 2 ranks
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    assert all(m["critic"]["value_loss"] > 0 for m in metrics)
    assert (out / "checkpoint-2" / "rng-rank1.pt").is_file()


GRPO_DRIVER = """
import json, os, sys
from transformers import TrainerCallback
from trainers.common import distributed
from trainers.common.config import load_config
from trainers.grpo.config import GRPORunConfig
from trainers.grpo.trainer import build_trainer
from suites import load_suite

cfg = load_config(GRPORunConfig, sys.argv[1], sys.argv[2:])
rank = int(os.environ["RANK"])
scored, digests = [], []

def varied(prompts, completions, task_id, **kwargs):
    # a reward that differs within a group, so the loss has a gradient (a random model's
    # code all scores alike); records what this rank scored
    scored.append(sorted(set(task_id)))
    return [float(len(set(c if isinstance(c, str) else str(c)))) for c in completions]

class Digest(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        digests.append(distributed.params_digest(run.policy.named_trainable()))

run = build_trainer(cfg, problems=load_suite("humaneval", "test[:2]", None), reward_fn=varied)
run.trainer.add_callback(Digest())
digests.append(distributed.params_digest(run.policy.named_trainable()))
run.trainer.train()
path = os.path.join(cfg.output.dir, f"grpo-rank{rank}.json")
json.dump({"digests": digests, "scored": scored,
           "processes": run.trainer.accelerator.num_processes}, open(path, "w"))
"""


@pytest.mark.slow
def test_grpo_two_processes_through_trl(tiny_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "grpo"
    driver = tmp_path / "grpo_driver.py"
    driver.write_text(textwrap.dedent(GRPO_DRIVER))
    args = [
        str(REPO / "configs" / "grpo_he_cpu.yaml"),
        f"model.name={tiny_folder}",
        "model.device=auto",  # accelerate's choice: the case that used to count 1 process
        "grpo.max_new_tokens=6",
        "grpo.max_steps=2",
        "grpo.learning_rate=1e-2",
        f"output.dir={out}",
    ]
    _launch("accelerate", [str(driver)], args, tmp_path)
    ranks = [json.loads((out / f"grpo-rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["processes"] for r in ranks] == [2, 2]
    # the same start (seeded before the adapter is made), then the same bits after every step
    assert ranks[0]["digests"] == ranks[1]["digests"]
    assert len(set(ranks[0]["digests"])) == 3, "parameters did not move every step"
    # TRL deals each step's 2 prompts (G=2 completions each) over the ranks: one prompt per rank
    # per step, scored where it was sampled
    for r in ranks:
        assert len(r["scored"]) == 2 and all(len(ids) == 1 for ids in r["scored"])
    for a, b in zip(ranks[0]["scored"], ranks[1]["scored"], strict=True):
        assert sorted(a + b) == ["HumanEval/0", "HumanEval/1"]
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "loss" in m] == [1, 2]  # rank 0 alone logs
