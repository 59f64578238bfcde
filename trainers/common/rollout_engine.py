"""Where rollouts are sampled: the training model itself (transformers) or vLLM.

A :class:`RolloutEngine` samples an agent's completions from prompt token ids and learns of
each update through :meth:`RolloutEngine.sync`. Log-probs for the loss are always recomputed by
the training model (:func:`trainers.common.sampling.token_logprobs`), so the engine only has to
sample from the current policy.

The vLLM engines live in :mod:`trainers.common.vllm_rollouts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from trainers.common.policy import AgentPolicy
from trainers.common.sampling import Generation, generate
from trainers.common.sections import ModelSettings


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


def make_rollout_engine(
    backend: str,
    model_name: str,
    agents: Sequence[AgentPolicy],
    seed: int = 0,
    sync: str = "merged",
) -> RolloutEngine:
    """The engine ``model.rollout_backend`` names (``sync``: ``model.vllm_sync``)."""
    if backend == "vllm":
        from trainers.common.vllm_rollouts import VLLMLoraRollouts, VLLMMergedRollouts

        engine = VLLMLoraRollouts if sync == "lora" else VLLMMergedRollouts
        return engine(model_name, agents, seed)
    return TransformersRollouts()


def engine_for_model(
    model: ModelSettings, agents: Sequence[AgentPolicy], seed: int
) -> RolloutEngine:
    """The engine a run's ``model`` section asks for, sampling from ``agents``."""
    return make_rollout_engine(model.rollout_backend, model.name, agents, seed, model.vllm_sync)


def close_engine(engine: RolloutEngine) -> None:
    """Stop an engine's processes (vLLM's hold cores and memory); a no-op for transformers."""
    close = getattr(engine, "close", None)
    if close is not None:
        close()
