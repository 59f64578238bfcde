"""Tokens per second of a generation backend: batched vs one prompt at a time.

    python benchmarks/generation.py                      # SmolLM2-135M on CPU, 16 HumanEval prompts
    python benchmarks/generation.py --backend vllm       # the same through vLLM (its CPU build here)
    python benchmarks/generation.py --prompts 32 --batch-size 32 --max-new-tokens 128

Both measurements run in the same invocation on the same model and the first HumanEval
prompts, continued without stop sequences (so every row does the same work and the numbers
measure throughput, not how early a model stops). Target: batched >= 4x one at a time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import torch

from harness.models.backends import make_backend
from harness.models.base import GenerationSettings, Prompt, build_prompt
from suites.humaneval import load


def measure(
    backend: object, prompts: list[Prompt], settings: GenerationSettings
) -> tuple[int, float, float]:
    """Generated tokens, wall seconds and CPU seconds (this process) for ``prompts``."""
    start, cpu_start = time.perf_counter(), time.process_time()
    out = backend.generate(prompts, settings)  # type: ignore[attr-defined]
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return sum(g.tokens for row in out for g in row), seconds, cpu


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--device", default="cpu", help="transformers' device")
    parser.add_argument(
        "--backend", choices=("transformers", "vllm"), default="transformers", help="the engine"
    )
    parser.add_argument("--prompts", type=int, default=16, help="prompts for the batched run")
    parser.add_argument(
        "--single-prompts", type=int, default=4, help="prompts for the one-at-a-time run"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--style", choices=("completion", "chat"), default="completion")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: torch's); 1 is steadier on a shared machine",
    )
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    if args.backend == "vllm":  # vLLM places itself (its CPU build here, CUDA on a GPU)
        backend = make_backend(args.model, backend="vllm")
    else:
        backend = make_backend(args.model, backend="transformers", device=args.device)
    problems = load()["test"][: args.prompts]
    prompts = [dataclasses.replace(build_prompt(p, args.style), stop=()) for p in problems]
    common = {
        "temperature": 0.8,
        "max_new_tokens": args.max_new_tokens,
        "stop_at_code_end": False,
        "seed": 0,
    }
    measure(backend, prompts[:1], GenerationSettings(**{**common, "max_new_tokens": 4}))  # warm-up

    single_tokens, single_s, single_cpu = 0, 0.0, 0.0
    for prompt in prompts[: args.single_prompts]:
        tokens, seconds, cpu = measure(
            backend, [prompt], GenerationSettings(batch_size=1, **common)
        )
        single_tokens, single_s, single_cpu = (
            single_tokens + tokens,
            single_s + seconds,
            single_cpu + cpu,
        )
    batched_tokens, batched_s, batched_cpu = measure(
        backend, prompts, GenerationSettings(batch_size=args.batch_size, **common)
    )
    single_rate, batched_rate = single_tokens / single_s, batched_tokens / batched_s
    # Per CPU second too: on a shared machine the wall-clock rates swing with other load.
    cpu_ratio = (batched_tokens / batched_cpu) / (single_tokens / single_cpu)
    result = {
        "one_at_a_time_tokens_per_s": round(single_rate, 2),
        "batched_tokens_per_s": round(batched_rate, 2),
        "ratio": round(batched_rate / single_rate, 2),
        "ratio_per_cpu_second": round(cpu_ratio, 2),
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "backend": args.backend,
    }
    print(
        f"model {args.model} through {args.backend} on {args.device} "
        f"({torch.get_num_threads()} threads), "
        f"{args.max_new_tokens} new tokens per prompt, {args.style} prompts"
    )
    print(
        f"one at a time: {single_tokens} tokens in {single_s:.1f} s = {single_rate:.1f} tokens/s "
        f"({args.single_prompts} prompts)"
    )
    print(
        f"batched ({args.batch_size}): {batched_tokens} tokens in {batched_s:.1f} s = "
        f"{batched_rate:.1f} tokens/s ({args.prompts} prompts)"
    )
    print(f"ratio: {result['ratio']:.2f}x (target >= 4x); per CPU second: {cpu_ratio:.2f}x")
    if args.backend == "transformers":  # vLLM's engine runs in its own process: not counted
        result["batched_tokens_per_cpu_s"] = round(batched_tokens / batched_cpu, 2)
        print(
            f"per CPU second of this process (steadier under load): one at a time "
            f"{single_tokens / single_cpu:.1f}, batched {batched_tokens / batched_cpu:.1f} tokens"
        )
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
