"""A row apart from its timings: what two ways of scoring the same sample must agree on.

The service's identity test and its load benchmark compare rows with this. Timings are the
durations, the resource counters of ``execution`` (CPU, memory, I/O), and the efficiency
analyzer, which measures the sample's speed: its report, its named part of the reward, and
so that part's share of the reward itself (the rest of the reward must agree to 1e-6).
"""

from __future__ import annotations

from typing import Any

from harness.sandbox.api import RESOURCE_KEYS

# Measured per run: CPU, memory and I/O counters (read_bytes: whether a file was in the page
# cache), as every other identity check in the project leaves them out.
TIMING_KEYS = ("max_rss_kb", *RESOURCE_KEYS)
TIMED_PARTS = ("efficiency",)


def timing_free(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` without what only timing decides."""
    row = {k: v for k, v in row.items() if k != "duration_s"}
    row["cases"] = [{k: v for k, v in c.items() if k != "duration_s"} for c in row["cases"]]
    if isinstance(row.get("execution"), dict):
        row["execution"] = {k: v for k, v in row["execution"].items() if k not in TIMING_KEYS}
    if isinstance(row.get("analyzers"), dict):
        row["analyzers"] = {k: v for k, v in row["analyzers"].items() if k not in TIMED_PARTS}
    parts = row.get("reward_parts")
    if isinstance(parts, dict):
        timed = sum(float(parts.get(name) or 0.0) for name in TIMED_PARTS)
        row["reward_parts"] = {k: v for k, v in parts.items() if k not in TIMED_PARTS}
        if isinstance(row.get("reward"), int | float):
            row["reward"] = round(float(row["reward"]) - timed, 6)
    return row


def differences(got: Any, want: Any, path: str = "") -> list[str]:
    """Where two rows differ: ``path: got | want`` for each leaf (for messages)."""
    if isinstance(got, dict) and isinstance(want, dict):
        keys = sorted(set(got) | set(want))
        return [d for k in keys for d in differences(got.get(k), want.get(k), f"{path}.{k}")]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        pairs = enumerate(zip(got, want, strict=True))
        return [d for i, (g, w) in pairs for d in differences(g, w, f"{path}[{i}]")]
    return [] if got == want else [f"{path}: {str(got)[:80]!r} | {str(want)[:80]!r}"]
