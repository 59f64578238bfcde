"""Trainer rollouts sampled by vLLM, kept in step with the training model after every update.

Two ways to hand vLLM the current policy (``model.vllm_sync``):

- ``merged`` (default): before an agent samples, its current weights (with LoRA, the base plus
  the adapter's delta) are loaded into vLLM's model in place. vLLM then samples at the base
  model's speed; on this CPU, vLLM's LoRA kernels make every token about 4x slower.
- ``lora``: vLLM's LoRA support. Each agent's adapter is saved with peft after every update and
  handed to vLLM under a new id; the base weights never move.

Either way the training model recomputes the log-probs the loss needs, so vLLM only samples.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from trainers.common.policy import AgentPolicy
from trainers.common.sampling import Generation

# vLLM's worker gains ``load_weights_from(path)`` through this class (worker_extension_cls).
WORKER_EXTENSION = "trainers.common.vllm_worker.WeightLoader"


class _VLLMSampler:
    """One vLLM engine for every agent; ``sample`` turns its outputs into Generations."""

    def __init__(self, model_name: str, seed: int, **engine: Any) -> None:
        from harness.models.loading import resolve_folder
        from harness.models.registry import resolve_model
        from harness.models.vllm_backend import (
            VLLMUnavailable,
            engine_kwargs,
            per_request_seeds,
            quiet_vllm,
            vllm_status,
        )

        status = vllm_status()
        if not status.usable:
            raise VLLMUnavailable(f"model.rollout_backend=vllm: {status.reason}")
        quiet_vllm()
        from vllm import LLM

        folder, _ = resolve_folder(model_name)
        settings = engine_kwargs(resolve_model(model_name), status.device)
        self.dtype = _torch_dtype(settings.get("dtype", "auto"))
        self.seeded = per_request_seeds(status.device)
        self.llm = LLM(model=folder, seed=seed, **settings, **engine)
        self.seed = seed
        self.calls = 0
        # /dev/shm when there is one: weights and adapters pass through memory, not the disk.
        shm = Path("/dev/shm")
        self.folder = Path(
            tempfile.mkdtemp(prefix="codeeval-rollouts-", dir=shm if shm.is_dir() else None)
        )

    def _request(self, agent: AgentPolicy) -> Any:
        """What ``LLM.generate`` needs to sample from ``agent`` (None: the loaded weights)."""
        raise NotImplementedError

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
            # Reproducible for a run's seed, and different at every call (where vLLM allows
            # per-request seeds; elsewhere the engine's seed, given at start-up, rules).
            seed=self.seed * 1_000_003 + self.calls if self.seeded and not greedy else None,
        )
        outputs = self.llm.generate(
            [{"prompt_token_ids": list(ids)} for ids in prompt_ids],
            params,
            lora_request=self._request(agent),
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
        """Stop vLLM's engine processes and remove the handed-over weights."""
        from harness.models.vllm_backend import shutdown

        shutdown(self.llm)
        shutil.rmtree(self.folder, ignore_errors=True)


class VLLMMergedRollouts(_VLLMSampler):
    """vLLM's weights become the sampling agent's current weights (base + LoRA delta)."""

    def __init__(self, model_name: str, agents: Sequence[AgentPolicy], seed: int = 0) -> None:
        super().__init__(model_name, seed, worker_extension_cls=WORKER_EXTENSION)
        self.loaded: str | None = None  # whose weights vLLM holds now
        self.sync(agents)

    def sync(self, agents: Sequence[AgentPolicy]) -> None:
        # Loaded lazily, when an agent next samples: with several agents the weights are
        # swapped per agent anyway.
        self.loaded = None

    def _request(self, agent: AgentPolicy) -> None:
        if self.loaded != agent.name:
            from safetensors.torch import save_file

            path = self.folder / "weights.safetensors"
            save_file(merged_state(agent, self.dtype), str(path))
            self.llm.collective_rpc("load_weights_from", args=(str(path),))
            # Cached prompt prefixes hold keys and values of the old weights.
            self.llm.reset_prefix_cache()
            path.unlink()
            self.loaded = agent.name
        return None


class VLLMLoraRollouts(_VLLMSampler):
    """vLLM's LoRA support: each agent's adapter, saved after every update, under a new id."""

    def __init__(self, model_name: str, agents: Sequence[AgentPolicy], seed: int = 0) -> None:
        if any(agent.adapter is None for agent in agents):
            raise ValueError("model.vllm_sync=lora hands LoRA adapters to vLLM: set lora.enabled")
        rank = max(int(agent.model.peft_config[agent.adapter].r) for agent in agents)
        super().__init__(
            model_name,
            seed,
            enable_lora=True,
            max_lora_rank=_vllm_rank(rank),
            max_loras=len(agents),
        )
        self.version = 0
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

    def _request(self, agent: AgentPolicy) -> Any:
        return self.requests[agent.name]


@torch.no_grad()
def merged_state(agent: AgentPolicy, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The agent's weights as the base checkpoint names them, its LoRA delta merged in.

    Nothing in the training model changes (no ``merge_adapter``): the delta is added to copies.
    """
    from peft.tuners.lora import LoraLayer

    merged: dict[str, torch.Tensor] = {}
    for name, module in agent.model.named_modules():
        if agent.adapter and isinstance(module, LoraLayer) and agent.adapter in module.lora_A:
            base = module.get_base_layer().weight
            merged[f"{name}.base_layer.weight"] = base + module.get_delta_weight(agent.adapter)
    state = {}
    for name, param in agent.model.named_parameters():
        if "lora_" in name:
            continue
        value = merged.get(name, param)
        key = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        state[key] = value.detach().to("cpu", dtype).contiguous()
    return state


def _torch_dtype(name: str) -> torch.dtype:
    return {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(name, torch.float32)


def _vllm_rank(rank: int) -> int:
    """vLLM accepts a few maximum ranks; the smallest that holds ``rank``."""
    for allowed in (8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= allowed:
            return allowed
    raise ValueError(f"LoRA rank {rank} is larger than vLLM supports (512)")
