"""MAGRPO's step metrics: per joint action its turn, reward, pass and return, summed up per
turn (what metrics.jsonl shows as ``turn_k``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainers.magrpo.returns import tree_returns
from trainers.magrpo.rollout import Episode


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def episode_returns(episode: Episode, gamma: float, num_turns: int) -> list[float]:
    """The return of every node of ``episode``'s tree (in ``episode.nodes`` order)."""
    return tree_returns(
        [n.reward for n in episode.nodes],
        [n.children for n in episode.nodes],
        gamma,
        [n.turn for n in episode.nodes],
        num_turns,
    )


def node_rows(
    episodes: list[Episode], gamma: float, num_turns: int
) -> list[tuple[int, float | None, bool, dict[str, float], float | None]]:
    """Per joint action: turn, reward, passed, numeric reward parts and return (picklable, so
    ranks can gather them)."""
    rows = []
    for e in episodes:  # joint returns, before any agent's KL penalty
        for n, ret in zip(e.nodes, episode_returns(e, gamma, num_turns), strict=True):
            row = n.row or {}
            parts = {
                str(k): float(v)
                for k, v in (row.get("reward_parts") or {}).items()
                if isinstance(v, int | float)
            }
            rows.append((n.turn, n.reward, bool(row.get("passed")), parts, ret))
    return rows


def reward_summary(
    rows: Sequence[tuple[int, float | None, bool, dict[str, float], float | None]], num_turns: int
) -> dict[str, Any]:
    """Per turn (``turn_k``) of :func:`node_rows`: mean reward and return, pass rate, masked
    joint actions and the reward parts; ``reward_mean`` is the first turn's."""
    out: dict[str, Any] = {}
    for turn in range(1, num_turns + 1):
        at = [r for r in rows if r[0] == turn]
        if not at:
            continue
        scored = [r[1] for r in at if r[1] is not None]
        parts: dict[str, list[float]] = {}
        for r in at:
            for key, value in r[3].items():
                parts.setdefault(key, []).append(value)
        out[f"turn_{turn}"] = {
            "reward_mean": mean(scored),
            "expected_return": mean([r[4] for r in at if r[4] is not None]),
            "passed_rate": mean([1.0 if r[2] else 0.0 for r in at]),
            "masked": len(at) - len(scored),
            "joint_actions": len(at),
            "reward_parts": {k: mean(v) for k, v in parts.items()},
        }
    out["reward_mean"] = out.get("turn_1", {}).get("reward_mean", 0.0)
    return out
