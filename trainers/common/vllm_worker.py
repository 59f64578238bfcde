"""Mixed into vLLM's worker (``worker_extension_cls``): load new weights in place.

Kept in a module of its own because vLLM imports it inside its worker process, where nothing
else of the trainers is needed.
"""

from __future__ import annotations

from typing import Any


class WeightLoader:
    """Gives the worker ``load_weights_from(path)``, called through ``LLM.collective_rpc``."""

    model_runner: Any  # the worker's, set by vLLM

    def load_weights_from(self, path: str) -> int:
        """Load a safetensors file of checkpoint-named weights; returns how many tensors."""
        import logging

        from safetensors.torch import load_file

        # Layers without checkpoint weights (rotary embeddings, a head tied to the embeddings)
        # are reported as "failed to load" at every swap; they have nothing to load.
        logging.getLogger("vllm.model_executor.model_loader.reload.layerwise").setLevel(
            logging.ERROR
        )
        weights = load_file(path)
        # In place, with vLLM's own post-processing (fused qkv, CPU repacking) done again.
        self.model_runner.reload_weights(
            weights_iterator=list(weights.items()), is_checkpoint_format=True
        )
        return len(weights)
