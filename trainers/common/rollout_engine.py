"""Where rollouts are sampled: the training model itself (transformers) or vLLM.

A :class:`RolloutEngine` samples an agent's completions from prompt token ids and learns of
each update through :meth:`RolloutEngine.sync`. Log-probs for the loss are always recomputed by
the training model (:func:`trainers.common.sampling.token_logprobs`), so the engine only has to
sample from the current policy.

``VLLMRollouts`` keeps the frozen base in vLLM and hands it every agent's current LoRA adapter
after each update (saved with peft, loaded by vLLM's LoRA support under a new id).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from trainers.common.policy import AgentPolicy
from trainers.common.sampling import Generation, generate


class RolloutEngine(Protocol):
    """Samples ``n`` completions per prompt from an agent's current policy."""

    def sample(
        self,
        agent: AgentPolicy,
        prompt_ids: Sequence[list[int]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
    ) -> list[list[Generation]]: ...

    def sync(self, agents: Sequence[AgentPolicy]) -> None:
        """The agents' parameters changed: sample from the new ones from now on."""
        ...


class TransformersRollouts:
    """The default: ``model.generate`` on the training model (always in sync)."""

    def sample(
        self,
        agent: AgentPolicy,
        prompt_ids: Sequence[list[int]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
    ) -> list[list[Generation]]:
        agent.activate()
        return generate(
            agent.model, agent.tokenizer, prompt_ids, n, max_new_tokens, temperature, top_p
        )

    def sync(self, agents: Sequence[AgentPolicy]) -> None:
        return None


class VLLMRollouts:
    """vLLM samples; the agents' LoRA adapters reach it after every update."""

    def __init__(self, model_name: str, agents: Sequence[AgentPolicy], seed: int = 0) -> None:
        from harness.models.loading import resolve_folder
        from harness.models.registry import resolve_model
        from harness.models.vllm_backend import (
            VLLMUnavailable,
            engine_kwargs,
            quiet_vllm,
            vllm_status,
        )

        status = vllm_status()
        if not status.usable:
            raise VLLMUnavailable(f"model.rollout_backend=vllm: {status.reason}")
        if any(agent.adapter is None for agent in agents):
            raise ValueError(
                "model.rollout_backend=vllm hands LoRA adapters to vLLM: set lora.enabled"
            )
        quiet_vllm()
        from vllm import LLM

        folder, _ = resolve_folder(model_name)
        rank = max(_adapter_rank(agent) for agent in agents)
        self.llm = LLM(
            model=folder,
            seed=seed,
            enable_lora=True,
            max_lora_rank=_vllm_rank(rank),
            max_loras=len(agents),
            **engine_kwargs(resolve_model(model_name), status.device),
        )
        self.seed = seed
        self.calls = 0
        self.version = 0
        self.folder = Path(tempfile.mkdtemp(prefix="codeeval-adapters-"))
        self.requests: dict[str, Any] = {}  # agent name -> its current LoRARequest
        self.saved: dict[str, Path] = {}  # agent name -> the folder its adapter was saved to
        self.sync(agents)

    def sync(self, agents: Sequence[AgentPolicy]) -> None:
        from vllm.lora.request import LoRARequest

        for agent in agents:
            self.version += 1
            target = self.folder / f"{agent.name}-{self.version}"
            assert agent.adapter is not None
            agent.model.save_pretrained(str(target), selected_adapters=[agent.adapter])
            # peft writes a non-default adapter into a subfolder named after it.
            path = target if (target / "adapter_config.json").exists() else target / agent.adapter
            old = self.requests.get(agent.name)
            # A new id makes vLLM load the new weights (it caches adapters by id).
            self.requests[agent.name] = LoRARequest(
                f"{agent.name}-v{self.version}", self.version, str(path)
            )
            if old is not None:
                self.llm.llm_engine.remove_lora(old.lora_int_id)
                shutil.rmtree(self.saved[agent.name], ignore_errors=True)
            self.saved[agent.name] = target

    def sample(
        self,
        agent: AgentPolicy,
        prompt_ids: Sequence[list[int]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
    ) -> list[list[Generation]]:
        from vllm import SamplingParams

        greedy = temperature == 0
        self.calls += 1
        params = SamplingParams(
            n=1 if greedy else n,
            temperature=temperature,
            top_p=1.0 if greedy else top_p,
            max_tokens=max_new_tokens,
            # Reproducible for a run's seed, and different at every call.
            seed=None if greedy else self.seed * 1_000_003 + self.calls,
        )
        outputs = self.llm.generate(
            [{"prompt_token_ids": list(ids)} for ids in prompt_ids],
            params,
            lora_request=self.requests[agent.name],
            use_tqdm=False,
        )
        groups = []
        for ids, output in zip(prompt_ids, outputs, strict=True):
            group = []
            for j in range(n):  # greedy: n copies of the one answer, as generate() gives
                sample = output.outputs[0 if greedy else j]
                completion = list(sample.token_ids)  # ends with EOS when it stopped there
                text = agent.tokenizer.decode(completion, skip_special_tokens=True)
                group.append(Generation(list(ids), completion, text))
            groups.append(group)
        return groups

    def close(self) -> None:
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None:
            core.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)


def _adapter_rank(agent: AgentPolicy) -> int:
    config = agent.model.peft_config[agent.adapter]
    return int(config.r)


def _vllm_rank(rank: int) -> int:
    """vLLM accepts a few maximum ranks; the smallest that holds ``rank``."""
    for allowed in (8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= allowed:
            return allowed
    raise ValueError(f"LoRA rank {rank} is larger than vLLM supports (512)")


def make_rollout_engine(
    backend: str, model_name: str, agents: Sequence[AgentPolicy], seed: int = 0
) -> RolloutEngine:
    """The engine ``model.rollout_backend`` names."""
    if backend == "vllm":
        return VLLMRollouts(model_name, agents, seed)
    return TransformersRollouts()


def close_engine(engine: RolloutEngine) -> None:
    """Stop an engine's processes (vLLM's hold cores and memory); a no-op for transformers."""
    close = getattr(engine, "close", None)
    if close is not None:
        close()
