"""Trainer rollouts through vLLM: the adapters reach it after every update, and only then."""

from __future__ import annotations

import math

import pytest
import torch

from harness.models.vllm_backend import vllm_status, vllm_usable
from trainers.common.config import InvalidSetting
from trainers.common.sections import LoraSettings, ModelSettings

needs_vllm = pytest.mark.skipif(not vllm_usable(), reason=vllm_status().reason or "vLLM runs")


def test_lora_sync_needs_lora_adapters() -> None:
    with pytest.raises(InvalidSetting, match="is lora but lora.enabled is false"):
        ModelSettings(rollout_backend="vllm", vllm_sync="lora", lora=LoraSettings(enabled=False))
    # Merged weights need no adapter: full-weight training samples through vLLM too.
    ModelSettings(rollout_backend="vllm", lora=LoraSettings(enabled=False))


def test_grpo_says_where_its_vllm_path_is() -> None:
    from trainers.grpo.config import GRPORunConfig

    with pytest.raises(InvalidSetting, match="grpo.use_vllm=true on a GPU"):
        GRPORunConfig(model=ModelSettings(rollout_backend="vllm"))


@pytest.mark.slow
@needs_vllm
@pytest.mark.parametrize("sync", ["merged", "lora"])
def test_sampled_text_changes_only_once_the_update_is_synced(sync: str) -> None:
    from trainers.common.policy import create_policies
    from trainers.common.rollout_engine import close_engine, make_rollout_engine
    from trainers.common.sampling import encode_prompts, render_prompt, token_logprobs

    settings = ModelSettings(
        name="smollm2-135m", device="cpu", rollout_backend="vllm", vllm_sync=sync
    )
    first, second = create_policies(settings, ["first", "second"])
    engine = make_rollout_engine("vllm", settings.name, [first, second], seed=3, sync=sync)
    try:
        tok = first.tokenizer
        ids = encode_prompts(tok, [render_prompt(tok, "Write a Python function add(a, b).")], 256)

        def greedy(agent):  # noqa: ANN001, ANN202
            return engine.sample(agent, ids, 2, 24, 0.0, 1.0)[0]

        before = greedy(first)
        assert before[0].text and before[0].completion_ids == before[1].completion_ids
        # An update: the first agent's adapter moves (its B matrices start at zero).
        with torch.no_grad():
            generator = torch.Generator().manual_seed(0)
            for name, param in first.named_trainable():
                if "lora_B" in name:
                    param.add_(torch.randn(param.shape, generator=generator) * 0.5)
        assert greedy(first)[0].text == before[0].text  # vLLM still has the old adapter
        engine.sync([first, second])
        after = greedy(first)
        assert after[0].text != before[0].text  # the new adapter reached vLLM
        assert greedy(second)[0].text == before[0].text  # the other agent's did not move
        # Sampled ids are the training model's tokens: its log-probs are finite.
        sampled = engine.sample(first, ids, 3, 16, 1.0, 1.0)[0]
        first.activate()
        logps, mask = token_logprobs(
            first.model, [g.prompt_ids for g in sampled], [g.completion_ids for g in sampled]
        )
        assert mask.sum() > 0 and all(math.isfinite(v) for v in logps[mask > 0].tolist())
    finally:
        close_engine(engine)
