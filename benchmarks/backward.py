"""What one training token costs: forward + backward of SmolLM2-135M, per token, on this CPU.

    python benchmarks/backward.py [--batch 4] [--length 256] [--steps 3] [--threads 2]

A policy-gradient step of the trainers is a forward pass with gradients over prompt +
completion tokens, a backward pass and an optimizer step. This times exactly that on the
default model (float32), for full fine-tuning and for LoRA adapters (the trainers' default,
rank 8 on the attention projections), on ``--batch`` rows of ``--length`` tokens, median of
``--steps`` steps after one warm-up. Prints wall and CPU milliseconds per token (CPU time is
the steadier figure on a shared machine) and the forward-only (no gradient) cost beside it,
which is what a reference model's log-probabilities cost.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any


def step_costs(model: Any, ids: Any, steps: int, train: bool) -> tuple[float, float]:
    """Median wall and CPU seconds of one step on ``ids`` (forward, and backward + AdamW)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5) if train else None
    walls, cpus = [], []
    for i in range(steps + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        if train:
            assert optimizer is not None
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        else:
            with torch.no_grad():
                model(input_ids=ids)
        if i:  # the first step warms allocator and kernels
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> dict[str, float]:
    import torch

    from harness.models.loading import load_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--batch", type=int, default=4, help="rows per step")
    parser.add_argument("--length", type=int, default=256, help="tokens per row")
    parser.add_argument("--steps", type=int, default=3, help="timed steps (median shown)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    model, tokenizer = load_model(args.model, device="cpu")
    ids = torch.randint(0, len(tokenizer), (args.batch, args.length))
    tokens = args.batch * args.length
    result: dict[str, float] = {"tokens_per_step": tokens, "threads": args.threads}

    wall, cpu = step_costs(model, ids, args.steps, train=False)
    result.update(forward_ms_per_token=wall / tokens * 1e3, forward_cpu_ms=cpu / tokens * 1e3)
    model.train()
    wall, cpu = step_costs(model, ids, args.steps, train=True)
    result.update(full_ms_per_token=wall / tokens * 1e3, full_cpu_ms=cpu / tokens * 1e3)

    from peft import LoraConfig, get_peft_model

    lora = get_peft_model(
        model,
        LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]),
    )
    wall, cpu = step_costs(lora, ids, args.steps, train=True)
    result.update(lora_ms_per_token=wall / tokens * 1e3, lora_cpu_ms=cpu / tokens * 1e3)

    print(
        f"{args.model}, float32, {args.batch} x {args.length} tokens per step, "
        f"{args.threads} threads, median of {args.steps} (load average {os.getloadavg()[0]:.1f})"
    )
    for name, label in (
        ("forward", "forward only (no grad)"),
        ("full", "train step, all weights"),
        ("lora", "train step, LoRA r=8"),
    ):
        print(
            f"  {label:24s}: {result[f'{name}_ms_per_token']:6.3f} ms/token wall, "
            f"{result[f'{name}_cpu_ms']:6.3f} ms/token CPU "
            f"({1e3 / result[f'{name}_ms_per_token']:7.0f} tokens/s)"
        )
    if args.json:
        print(json.dumps({k: round(v, 4) for k, v in result.items()}))
    return result


if __name__ == "__main__":
    main()
