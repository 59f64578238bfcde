"""CPU of the digest a value past the channel's bounds travels as, this code against another.

    python benchmarks/digest_cost.py [--baseline /tmp/old] [--repeats 9]

A value past the channel's bounds is sent as the sha256 of its canonical form
(``harness/sandbox/channel/canonical.py``), computed in the sample's child on every such
answer. Prints the CPU milliseconds (best of ``--repeats``) of one digest of the largest
answers EvalPlus asks for: HumanEval/130's ``tri(1000004)`` (a million floats and two ints),
HumanEval/100's ``make_a_pile(10**6)`` (a million ints), HumanEval/15's string of 6.9 M
characters, and the first 200,000 of Mbpp/255's 1.6 M tuples of 77 of five strings. With
``--baseline`` (a worktree of other code, e.g. ``git worktree add /tmp/old HEAD~1``), its
``canonical.py`` is timed in the same process, the two taking turns, and the digests must be
equal.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.sandbox.channel import canonical, wire

MODULE = Path("harness/sandbox/channel/canonical.py")


def tri(n: int) -> list[float]:
    """HumanEval/130's reference."""
    out: list[float] = [1, 3]
    for i in range(2, n + 1):
        out.append(i / 2 + 1 if i % 2 == 0 else out[i - 1] + out[i - 2] + (i + 3) / 2)
    return out


def values() -> dict[str, Any]:
    colours = ["Red", "Green", "Blue", "Yellow", "Black"]
    return {
        "tri(1000004)": tri(1000004),
        "make_a_pile(10**6)": [10**6 + 2 * i for i in range(10**6)],
        "string_sequence(10**6)": " ".join(str(i) for i in range(10**6 + 1)),
        "Mbpp/255's first 200,000": list(
            itertools.islice(itertools.combinations_with_replacement(colours, 77), 200_000)
        ),
    }


def load_baseline(root: Path) -> ModuleType:
    """``canonical.py`` of another tree, as the fork server loads it: by path, ``wire`` set."""
    spec = importlib.util.spec_from_file_location("baseline_canonical", root / MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.wire = wire  # type: ignore[attr-defined]
    spec.loader.exec_module(module)
    return module


def best_cpu_ms(digests: list[Callable[[Any], Any]], value: Any, repeats: int) -> list[float]:
    """Each digest's best CPU time on ``value``, the digests taking turns."""
    best = [float("inf")] * len(digests)
    for _ in range(repeats):
        for i, digest in enumerate(digests):
            start = time.process_time()
            digest(value)
            best[i] = min(best[i], time.process_time() - start)
    return [seconds * 1e3 for seconds in best]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a tree of other code to time beside")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    baseline = load_baseline(args.baseline) if args.baseline else None
    for name, value in values().items():
        if baseline is None:
            print(f"{name:24s} {best_cpu_ms([canonical.digest], value, args.repeats)[0]:8.1f} ms")
            continue
        if baseline.digest(value) != canonical.digest(value):
            raise SystemExit(f"{name}: the baseline's digest differs")
        mine, theirs = best_cpu_ms([canonical.digest, baseline.digest], value, args.repeats)
        print(
            f"{name:24s} {mine:8.1f} ms   baseline {theirs:8.1f} ms   "
            f"baseline / this = {theirs / mine:.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
