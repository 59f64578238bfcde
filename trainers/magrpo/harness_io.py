"""Where MAGRPO meets the harness: rewards and feedback from the evaluator, and pass@k for
evaluation (problems come from the shared loader, ``trainers.common.problems``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.passk import mean_pass_at_k, reportable_ks
from harness.records import Problem, Sample
from trainers.common.reward import harness_failed, reward_preset
from trainers.common.sections import ExternalSettings, OutputSettings, RewardSettings
from trainers.magrpo.metrics import episode_returns, mean
from trainers.magrpo.rollout import Episode, FeedbackFn, Node, Scorer


def harness_scorer(reward: RewardSettings, output: OutputSettings, num_agents: int = 2) -> Scorer:
    """Score samples with ``harness.evaluate.evaluate`` and the configured reward.

    ``extras`` (one dict per sample, e.g. ClassEval's ``agent_code`` and ``required_methods``)
    go on the rows before the reward is computed, so the presets can read them. They travel
    through ``evaluate`` itself, so a batch with extras is scored exactly as one without:
    the reward config's ``dependencies`` merged into each problem's allow-list (harness.deps),
    its memory and time limits and its coverage.
    """
    preset = reward_preset(reward.preset, num_agents)

    def score(
        problems: list[Problem],
        samples: list[Sample],
        extras: Sequence[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        from harness.evaluate import evaluate

        kwargs = reward.evaluate_kwargs()
        if extras and any(extras):
            kwargs["row_extras"] = extras
        return evaluate(problems, samples, reward=preset, **kwargs)

    return score


def harness_feedback(external: ExternalSettings) -> FeedbackFn:
    """The between-turn feedback text from ``harness.reward.render_feedback``.

    ``expert_edits`` shows the ``level_feedback`` diagnostics plus an expert model's edits;
    the personal modes give one text per agent (each about that agent's own code, read from
    the row's ``agent_code``).
    """
    from harness.reward.feedback import PERSONAL_MODES

    def diagnostics(row: dict[str, Any], problem: Problem) -> str:
        from harness.reward import render_feedback

        mode = "level_feedback" if external.mode == "expert_edits" else external.mode
        return render_feedback(row, problem, mode, sandbox_slice=external.sandbox_slice)

    inner = diagnostics
    if external.mode == "expert_edits":
        from trainers.magrpo.expert import expert_feedback

        inner = expert_feedback(external, diagnostics)

    def feedback(row: dict[str, Any], problem: Problem) -> str:
        return inner(row, problem)[: external.max_feedback_chars]

    def personal(row: dict[str, Any], problem: Problem) -> list[str]:
        from harness.reward import render_feedback

        agents = range(len(row.get("agent_code") or {"main": ""}))
        return [
            render_feedback(row, problem, external.mode, external.sandbox_slice, agent=a)[
                : external.max_feedback_chars
            ]
            for a in agents
        ]

    return personal if external.mode in PERSONAL_MODES else feedback


def turn_states(episode: Episode, num_turns: int) -> dict[int, list[tuple[Node, int]]]:
    """Each turn's joint programs: the nodes sampled at that turn plus the branches that
    stopped before it (their program stands), as ``(node, turns carried)`` pairs."""
    states: dict[int, list[tuple[Node, int]]] = {t: [] for t in range(1, num_turns + 1)}
    for node in episode.nodes:
        states[node.turn].append((node, 0))
        if not node.children:
            for later in range(node.turn + 1, num_turns + 1):
                states[later].append((node, later - node.turn))
    return states


def eval_metrics(
    episodes: Sequence[Episode], ks: Sequence[int], num_turns: int = 1, gamma: float = 1.0
) -> dict[str, Any]:
    """Per turn (``turn_k``): the mean reward, pass@k (unbiased; infrastructure and data errors
    left out) and the expected return (from that turn to the last, a stopped branch's reward
    carried); the top level repeats the last turn's, the team's final answer."""
    out: dict[str, Any] = {"problems": len(episodes)}
    per_turn: dict[int, dict[str, list[Any]]] = {
        t: {"counts": [], "rewards": [], "returns": []} for t in range(1, num_turns + 1)
    }
    for episode in episodes:
        returns = episode_returns(episode, gamma, num_turns)
        index = {id(n): i for i, n in enumerate(episode.nodes)}
        for turn, states in turn_states(episode, num_turns).items():
            acc = per_turn[turn]
            rows = [n.row for n, _ in states if n.row is not None]
            rows = [r for r in rows if not harness_failed(r)]
            if rows:
                acc["counts"].append((len(rows), sum(1 for r in rows if r.get("passed"))))
            for node, carried in states:
                if node.reward is None:
                    continue
                acc["rewards"].append(node.reward)
                if carried:  # the stopped branch's reward over the turns from this one on
                    left = num_turns - turn + 1
                    acc["returns"].append(node.reward * sum(gamma**k for k in range(left)))
                else:
                    acc["returns"].append(returns[index[id(node)]])
    for turn, acc in per_turn.items():
        block: dict[str, Any] = {
            "reward_mean": mean(acc["rewards"]),
            "expected_return": mean(acc["returns"]),
        }
        for k in reportable_ks(ks, acc["counts"]):
            block[f"pass@{k}"] = mean_pass_at_k(acc["counts"], k)
        out[f"turn_{turn}"] = block
    out.update({k: v for k, v in out[f"turn_{num_turns}"].items() if k != "expected_return"})
    return out
