"""codeeval serve under load, against evaluate() in-process on the same samples.

    python benchmarks/service_load.py [--requests 2000] [--clients 8] [--workers 2]

Builds ``--requests`` requests of 16 HumanEval samples each, drawn with a fixed seed from five
kinds: references, mutants (one operator flipped), timeouts (a loop that never ends), crashers
(exceptions, a segfault, a recursion overflow, an undefined name, a syntax error) and attacks
(a forged ``__eq__``, reading files, opening sockets, exiting 0 early, patching builtins,
printing a fake pytest summary, a fork bomb, memory bombs, killing itself). Then, in one run:

1. ``evaluate()`` in this process scores every sample, in batches of ``--batch`` samples (the
   size of the service's batches), with ``--workers`` warm workers: the reference rows and
   the in-process samples/s;
2. a real ``codeeval serve`` process (same workers, same batch size) gets the same requests
   from ``--clients`` concurrent clients (:class:`harness.service.client.RewardClient`, with
   retries); each client sends one request at a time.

It prints the lost requests (no rows after the client's retries: must be 0), the rows that
differ from evaluate()'s apart from timings (:func:`harness.service.rows.timing_free`: must
be 0), p50/p99 request latency, and samples/s of both with the service's overhead (goal:
<= 15%). Exit status 1 when a request was lost or a row differs.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.evaluate import evaluate  # noqa: E402
from harness.records import Problem, Sample  # noqa: E402
from harness.service.client import RewardClient  # noqa: E402
from harness.service.rows import differences, timing_free  # noqa: E402
from suites import load_suite  # noqa: E402

FLIPS = (("<=", ">"), (">=", "<"), ("==", "!="), (" < ", " >= "), (" > ", " <= "), ("+", "-"))
TIMEOUTS = ["    while True:\n        pass\n"]
CRASHERS = [
    "    raise RuntimeError('crash')\n",
    "    return undefined_name_here\n",
    "    import ctypes\n    return ctypes.string_at(0)\n",
    "    def again(n):\n        return again(n + 1)\n    return again(0)\n",
    "    return (\n",
]
ATTACKS = [
    "    class Same:\n        def __eq__(self, other):\n            return True\n"
    "        def __ne__(self, other):\n            return False\n    return Same()\n",
    "    return open('/etc/passwd').read()\n",
    "    import socket\n    socket.create_connection(('10.255.255.1', 80), timeout=0.2)\n",
    "    import os\n    os._exit(0)\n",
    "    import builtins\n    builtins.AssertionError = type('Nothing', (Exception,), {})\n",
    "    print('=== 1 passed in 0.01s ===')\n    import sys\n    sys.exit(0)\n",
    "    import os\n    while True:\n        os.fork()\n",
    "    return len(bytearray(10**11))\n",
    "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n",
]
KINDS = (("reference", 0.42), ("mutant", 0.35), ("crasher", 0.1), ("attack", 0.12))
TIMEOUT_SHARE = 0.005  # each costs a full time limit (>= 1 s) of a worker


def body_of(problem: Problem) -> str:
    """The reference's body, as a completion of the prompt."""
    reference = problem.reference
    if reference.startswith(problem.prompt):
        return reference[len(problem.prompt) :]
    return reference


def mutant_of(body: str) -> str:
    for old, new in FLIPS:
        if old in body:
            return body.replace(old, new, 1)
    return re.sub(r"return (.+)", r"return not (\1)", body, count=1)


def make_requests(problems: list[Problem], count: int, seed: int) -> list[list[dict[str, Any]]]:
    """``count`` requests of 16 items, deterministic for a seed."""
    rng = random.Random(seed)
    names, weights = zip(*KINDS, strict=True)
    requests = []
    for _ in range(count):
        items = []
        for _ in range(16):
            problem = rng.choice(problems)
            kind = "timeout" if rng.random() < TIMEOUT_SHARE else rng.choices(names, weights)[0]
            body = body_of(problem)
            completion = {
                "reference": body,
                "mutant": mutant_of(body),
                "timeout": rng.choice(TIMEOUTS),
                "crasher": rng.choice(CRASHERS),
                "attack": rng.choice(ATTACKS),
            }[kind]
            items.append({"completion": completion, "task_id": problem.task_id, "kind": kind})
        requests.append(items)
    return requests


def in_process(
    problems: dict[str, Problem], samples: list[dict[str, Any]], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], float]:
    """evaluate() on every sample in batches of ``--batch``: rows and seconds."""
    rows: list[dict[str, Any]] = []
    # every problem's time limits calibrated (cached on disk for the server too), workers up
    used = sorted({item["task_id"] for item in samples})
    warm = [Sample(t, body_of(problems[t]), "warm") for t in used]
    evaluate([problems[t] for t in used], warm, reward=args.reward, workers=args.workers)
    started = time.perf_counter()
    for start in range(0, len(samples), args.batch):
        chunk = samples[start : start + args.batch]
        batch = [
            Sample(item["task_id"], item["completion"], str(i)) for i, item in enumerate(chunk)
        ]
        used = list({s.task_id: problems[s.task_id] for s in batch}.values())
        rows.extend(evaluate(used, batch, reward=args.reward, workers=args.workers))
    return rows, time.perf_counter() - started


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "harness.cli", "serve", "--port", "0"]
    command += ["--workers", str(args.workers), "--max-batch-samples", str(args.batch)]
    command += ["--max-queue-samples", str(max(4096, 2 * args.clients * 16))]
    if args.reward:
        command += ["--reward", args.reward]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://\S+", line)
    if not found:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, found.group(0)


def through_service(
    url: str, requests: list[list[dict[str, Any]]], clients: int
) -> tuple[list[list[dict[str, Any]] | None], list[float], float]:
    """Every request from ``clients`` threads: rows per request (None if lost), latencies, s."""
    answers: list[list[dict[str, Any]] | None] = [None] * len(requests)
    latencies: list[float] = []
    lock = threading.Lock()
    todo = iter(range(len(requests)))

    def client() -> None:
        with RewardClient(url, retries=20) as rc:
            while True:
                with lock:
                    index = next(todo, None)
                if index is None:
                    return
                items = [{k: v for k, v in it.items() if k != "kind"} for it in requests[index]]
                started = time.perf_counter()
                try:
                    rows = rc.score(items)
                except Exception as exc:  # noqa: BLE001 - counted as lost
                    print(f"request {index} lost: {exc!r}", file=sys.stderr)
                    continue
                with lock:
                    latencies.append(time.perf_counter() - started)
                    answers[index] = rows if len(rows) == len(items) else None

    with RewardClient(url) as rc:  # warm: the suite loaded, the workers up
        rc.score(
            [{"completion": requests[0][0]["completion"], "task_id": requests[0][0]["task_id"]}]
        )
    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers, latencies, time.perf_counter() - started


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in timing_free(row).items() if k != "sample_id"}


def unstable_in_process(
    problems: dict[str, Problem],
    samples: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    served: dict[int, dict[str, Any]],
    args: argparse.Namespace,
    runs: int = 10,
) -> set[int]:
    """Of the samples whose served row differs from evaluate()'s (``served``: position ->
    row), those where evaluate() itself is not stable: in up to ``runs`` more runs it gives
    the served row, or a row other than its first (the sandbox's nondeterminism, not the
    service's)."""
    unstable: set[int] = set()
    for _ in range(runs):
        todo = [i for i in served if i not in unstable]
        if not todo:
            break
        batch = [Sample(samples[i]["task_id"], samples[i]["completion"], str(i)) for i in todo]
        used = list({s.task_id: problems[s.task_id] for s in batch}.values())
        rows = evaluate(used, batch, reward=args.reward, workers=args.workers)
        for i, row in zip(todo, rows, strict=True):
            again = comparable(row)
            if again != comparable(expected[i]) or again == comparable(served[i]):
                unstable.add(i)
    return unstable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128, help="samples per batch, both sides")
    parser.add_argument("--reward", default="binary")
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args(argv)

    problems = {p.task_id: p for p in load_suite("humaneval")}
    requests = make_requests(list(problems.values()), args.requests, args.seed)
    samples = [item for request in requests for item in request]
    kinds = {name: sum(1 for s in samples if s["kind"] == name) for name, _ in KINDS}
    kinds["timeout"] = sum(1 for s in samples if s["kind"] == "timeout")
    print(f"{len(requests)} requests x 16 = {len(samples)} samples: {kinds}", flush=True)

    expected, local_s = in_process(problems, samples, args)
    print(
        f"evaluate() in-process: {local_s:.1f} s, {len(samples) / local_s:.1f} samples/s",
        flush=True,
    )

    process, url = start_server(args)
    try:
        answers, latencies, served_s = through_service(url, requests, args.clients)
        with RewardClient(url) as rc:
            metrics = rc.metrics()
    finally:
        process.terminate()
        process.wait(timeout=300)

    lost = sum(1 for a in answers if a is None)
    differing: dict[int, dict[str, Any]] = {}  # position in ``samples`` -> served row
    for index, rows in enumerate(answers):
        if rows is None:
            continue
        reference = expected[index * 16 : index * 16 + 16]
        for offset, (got, want) in enumerate(zip(rows, reference, strict=True)):
            if comparable(got) != comparable(want):
                differing[index * 16 + offset] = got
                if len(differing) <= 3:
                    where = ", ".join(differences(comparable(got), comparable(want))[:4])
                    print(f"differs: request {index} {want['task_id']}: {where}")
    unstable = unstable_in_process(problems, samples, expected, differing, args)
    rate_local = len(samples) / local_s
    rate_served = len(samples) / served_s
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    print(f"codeeval serve ({args.clients} clients): {served_s:.1f} s, {rate_served:.1f} samples/s")
    batches = max(1, metrics["batches"])
    print(f"server: {batches} batches, {metrics['samples_scored'] / batches:.1f} samples each")
    print(f"lost requests: {lost}")
    print(f"rows that differ from evaluate() (apart from timings): {len(differing)}")
    kinds_of = Counter(samples[i]["kind"] for i in unstable)
    left = Counter(samples[i]["kind"] for i in differing if i not in unstable)
    print(
        f"  of which evaluate() itself gives differently when run again: {len(unstable)} "
        f"{dict(kinds_of)}; left to the service: {len(differing) - len(unstable)} {dict(left)} "
        "(must be 0)"
    )
    print(f"latency per request: p50 {quantiles[49]:.3f} s, p99 {quantiles[98]:.3f} s")
    print(
        f"service overhead vs evaluate() in-process: {(rate_local / rate_served - 1) * 100:+.1f}% (goal <= +15%)"
    )
    return 1 if lost or len(differing) > len(unstable) else 0


if __name__ == "__main__":
    raise SystemExit(main())
