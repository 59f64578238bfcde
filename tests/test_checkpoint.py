"""Checkpoints resume to identical parameters, optimizer state, RNG state and data position;
policies keep frozen weights frozen; the metrics logger writes one object per step."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.models import tiny_model
from trainers.common.checkpoint import load_checkpoint, resolve_checkpoint, save_checkpoint
from trainers.common.logger import MetricsLogger, read_metrics
from trainers.common.policy import frozen_state, trainable_state, wrap_agents
from trainers.common.sampling import encode_prompts, generate, render_prompt, token_logprobs
from trainers.common.sections import LoraSettings, ModelSettings

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _agents(share_base: bool = True, lora: bool = True):
    model, tok = tiny_model(0)
    settings = ModelSettings(
        lora=LoraSettings(enabled=lora, r=2, alpha=4, target_modules=["q_proj", "v_proj"]),
        share_base=share_base,
    )
    return wrap_agents(model, tok, ["helper", "main"], settings, with_reference=True)


def _train_once(agents, opts) -> None:
    tok = agents[0].tokenizer
    ids = encode_prompts(tok, [render_prompt(tok, "def add(a, b):")], 64)
    completions = [[5, 6, 7, 8], [9, 10]]
    for agent in agents:
        agent.activate()
        logp, mask = token_logprobs(agent.model, ids * 2, completions)
        opts[agent.name].zero_grad()
        (-(logp * mask).sum()).backward()
        opts[agent.name].step()


def _opts(agents):
    return {a.name: torch.optim.AdamW(a.parameters(), lr=1e-2) for a in agents}


def test_adapters_train_apart_and_base_stays_frozen() -> None:
    agents = _agents()
    assert agents[0].model is agents[1].model  # one shared base
    names = [set(dict(a.named_trainable())) for a in agents]
    assert names[0] and names[1] and not names[0] & names[1]
    before = [trainable_state(a) for a in agents]
    frozen = frozen_state(agents[0])
    opts = _opts(agents)
    _train_once(agents, opts)
    for agent, old in zip(agents, before, strict=True):
        new = trainable_state(agent)
        assert any(not torch.equal(old[k], new[k]) for k in old), agent.name
    after = frozen_state(agents[0])
    assert all(torch.equal(frozen[k], after[k]) for k in frozen)
    # the reference (adapters off) is the untouched base
    tok = agents[0].tokenizer
    ids = encode_prompts(tok, [render_prompt(tok, "x")], 32)
    base, _ = tiny_model(0)
    with torch.no_grad(), agents[0].reference() as ref:
        a, _ = token_logprobs(ref, ids, [[5, 6, 7]])
        b, _ = token_logprobs(base, ids, [[5, 6, 7]])
    assert torch.allclose(a, b, atol=1e-6)


def test_checkpoint_resumes_identically(tmp_path: Path) -> None:
    agents = _agents()
    opts = _opts(agents)
    _train_once(agents, opts)
    folder = save_checkpoint(
        tmp_path,
        1,
        {a.name: dict(a.named_trainable()) for a in agents},
        opts,
        {"epoch": 0, "position": 1},
        {"seed": 0},
    )
    assert resolve_checkpoint("latest", tmp_path) == folder
    expected_rng = (random.random(), float(np.random.rand()), torch.rand(3))
    # continue training the original: the reference for "resumed gives the same result"
    load_checkpoint(folder, {}, {})  # restore the RNG only
    _train_once(agents, opts)
    reference_after = [trainable_state(a) for a in agents]

    fresh = _agents()
    fresh_opts = _opts(fresh)
    state = load_checkpoint(folder, {a.name: dict(a.named_trainable()) for a in fresh}, fresh_opts)
    assert state == {"step": 1, "trainer_state": {"epoch": 0, "position": 1}}
    saved = torch.load(folder / "state.pt", weights_only=False)
    for agent in fresh:
        for name, value in trainable_state(agent).items():
            assert torch.equal(value, saved["params"][agent.name][name])
        opt_state = fresh_opts[agent.name].state_dict()
        ref_state = saved["optimizers"][agent.name]
        assert opt_state["param_groups"] == ref_state["param_groups"]
        for key, slots in ref_state["state"].items():
            for slot, value in slots.items():
                assert torch.equal(opt_state["state"][key][slot], value)
    assert (random.random(), float(np.random.rand())) == expected_rng[:2]
    assert torch.equal(torch.rand(3), expected_rng[2])
    load_checkpoint(folder, {}, {})
    _train_once(fresh, fresh_opts)  # same RNG, params and moments: the same next step
    for agent, ref in zip(fresh, reference_after, strict=True):
        now = trainable_state(agent)
        assert all(torch.allclose(now[k], ref[k], atol=1e-6) for k in ref)


def test_generate_cuts_after_eos() -> None:
    model, tok = tiny_model(0)
    ids = encode_prompts(tok, [render_prompt(tok, "def add(a, b):"), render_prompt(tok, "hi")], 64)
    torch.manual_seed(0)
    groups = generate(model, tok, ids, 2, 5, 1.0)
    assert [len(g) for g in groups] == [2, 2]
    for prompt, group in zip(ids, groups, strict=True):
        for gen in group:
            assert gen.prompt_ids == prompt and 1 <= len(gen.completion_ids) <= 5
            assert tok.eos_token_id not in gen.completion_ids[:-1]
    greedy = generate(model, tok, ids[:1], 2, 5, 0.0)[0]
    assert greedy[0].completion_ids == greedy[1].completion_ids


def test_one_model_per_agent_full_weights() -> None:
    agents = _agents(share_base=False, lora=False)
    assert agents[0].model is not agents[1].model
    assert agents[0].reference_model is not None
    frozen_ref = trainable_state(agents[0])
    _train_once(agents, _opts(agents))
    ref_params = dict(agents[0].reference_model.named_parameters())
    assert all(torch.equal(ref_params[k], frozen_ref[k]) for k in frozen_ref)


def test_bad_checkpoint_paths(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        resolve_checkpoint("latest", tmp_path)
    with pytest.raises(FileNotFoundError, match="not a checkpoint"):
        resolve_checkpoint(tmp_path)


def test_metrics_logger(tmp_path: Path) -> None:
    logger = MetricsLogger(tmp_path, tensorboard=False)
    logger.log(1, {"loss": torch.tensor(0.5), "agent": {"kl": float("nan")}})
    logger.log(2, {"loss": 0.25})
    logger.close()
    rows = read_metrics(tmp_path)
    assert rows == [{"step": 1, "loss": 0.5, "agent": {"kl": None}}, {"step": 2, "loss": 0.25}]
    assert all(json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines())
