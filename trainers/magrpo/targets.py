"""From scored rollout trees to per-completion training targets (returns and advantages).

Per agent: each joint node's reward minus ``beta`` times that agent's KL on its completion,
folded through the tree into returns (a branch that stopped early carries its value forward
to the last turn, see :mod:`trainers.magrpo.returns`); within each sibling group an agent's completion value
is the mean return of the joint actions it is in; advantages are group-relative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainers.magrpo.advantages import group_advantages
from trainers.magrpo.joint import agent_values
from trainers.magrpo.returns import tree_returns
from trainers.magrpo.rollout import Completion, Episode


@dataclass
class Target:
    """One completion to train on, with its value (mean return) and advantage."""

    agent: int
    completion: Completion
    value: float
    advantage: float
    group: int = 0  # the sibling group's index in its episode (dynamic sampling's unit)


def episode_targets(
    episode: Episode,
    num_agents: int,
    num_generations: int,
    num_turns: int,
    gamma: float,
    beta: float,
    advantage_mode: str,
    normalize: bool,
    penalty: Callable[[Completion], float] | None = None,
) -> list[Target]:
    """The targets of every agent's completions in one episode (masked ones left out).

    ``penalty`` (e.g. the soft overlong penalty) is subtracted from the agent's reward for its
    own completion, like the KL: paid once, on the turn that generated it, never carried.
    """
    targets: list[Target] = []
    children = [node.children for node in episode.nodes]
    turns = [node.turn for node in episode.nodes]
    carried = [node.reward for node in episode.nodes]  # the KL is paid once, not carried
    for agent in range(num_agents):
        rewards: list[float | None] = []
        for node in episode.nodes:
            if node.reward is None:
                rewards.append(None)
                continue
            mine = episode.groups[node.group].completions[agent][node.action[agent]]
            cost = penalty(mine) if penalty is not None else 0.0
            rewards.append(node.reward - beta * mine.kl - cost)
        returns = tree_returns(rewards, children, gamma, turns, num_turns, carried)
        for index, group in enumerate(episode.groups):
            actions = [episode.nodes[i].action for i in group.nodes]
            values = agent_values(
                [returns[i] for i in group.nodes], actions, agent, num_generations
            )
            advantages = group_advantages(values, advantage_mode, normalize)
            for g, (value, adv) in enumerate(zip(values, advantages, strict=True)):
                if value is None or adv is None:
                    continue
                targets.append(Target(agent, group.completions[agent][g], value, adv, index))
    return targets


def all_targets(episodes: Sequence[Episode], **kwargs: object) -> list[Target]:
    return [t for e in episodes for t in episode_targets(e, **kwargs)]  # type: ignore[arg-type]
