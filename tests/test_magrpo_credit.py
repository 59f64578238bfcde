"""Multi-turn credit is right by construction: early termination keeps siblings' horizons equal.

The worked example from issue 11 (a first-turn action that reached the threshold got a lower
return than its failing sibling), and the property behind it on random rollout trees: in any
sibling group, a completion whose rewards are at least its sibling's at every turn never gets
a lower value (return) or advantage.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.magrpo.advantages import ADVANTAGE_MODES
from trainers.magrpo.joint import joint_actions
from trainers.magrpo.returns import should_expand
from trainers.magrpo.rollout import Completion, Episode, Group, Node
from trainers.magrpo.targets import Target, episode_targets

PROBLEM = None  # episode_targets never reads the problem


def _completion(agent: int, turn: int) -> Completion:
    return Completion(agent, "", [], [], "", "", turn)


def add_group(
    episode: Episode, parent: int | None, turn: int, num_agents: int, g: int, mode: str
) -> Group:
    """A sibling group at ``turn`` with its joint-action nodes (rewards set by the caller)."""
    group = Group(
        turn, parent, [[_completion(a, turn) for _ in range(g)] for a in range(num_agents)]
    )
    episode.groups.append(group)
    for action in joint_actions(num_agents, g, mode):
        index = len(episode.nodes)
        episode.nodes.append(Node(len(episode.groups) - 1, action, turn, ""))
        group.nodes.append(index)
        if parent is not None:
            episode.nodes[parent].children.append(index)
    return group


def targets_of(episode: Episode, num_agents: int, g: int, num_turns: int, **kw) -> list[Target]:
    options = {"gamma": 1.0, "beta": 0.0, "advantage_mode": "mean", "normalize": False, **kw}
    return episode_targets(
        episode, num_agents=num_agents, num_generations=g, num_turns=num_turns, **options
    )


# ---------------------------------------------------------------- the worked example


def test_threshold_reaching_action_is_not_credited_below_its_failing_sibling() -> None:
    """Issue 11: turn-1 rewards 2.0 (reaches the threshold 1.0) and 0.25 (expanded); the
    failing branch's turn-2 rewards were raised by 1.5 to 2.5. Per-branch stopping without
    carrying gave the finished action return 2.0 < 2.75 and advantage -0.375 (CoMLRL, which
    stops the whole group, gives +0.875). Carried forward it is 2.0 + 2.0 = 4.0."""
    threshold, num_turns = 1.0, 2
    episode = Episode(PROBLEM)  # type: ignore[arg-type]
    root = add_group(episode, None, 1, 1, 2, "aligned")
    finished, failing = (episode.nodes[i] for i in root.nodes)
    finished.reward, failing.reward = 2.0, 0.25
    assert not should_expand(finished.reward, 1, num_turns, threshold)
    assert should_expand(failing.reward, 1, num_turns, threshold)
    child = add_group(episode, root.nodes[1], 2, 1, 2, "aligned")
    for i in child.nodes:
        episode.nodes[i].reward = 1.0 + 1.5
    first = [t for t in targets_of(episode, 1, 2, num_turns) if t.completion.turn == 1]
    assert [t.value for t in first] == pytest.approx([4.0, 2.75])
    assert [t.advantage for t in first] == pytest.approx([0.625, -0.625])
    assert first[0].advantage > 0  # the old code gave -0.375: the wrong sign


def test_a_stopped_branch_carries_the_carried_reward_not_the_kl() -> None:
    # beta > 0: the KL is paid on the turn that generated the completion, not on carried turns
    episode = Episode(PROBLEM)  # type: ignore[arg-type]
    root = add_group(episode, None, 1, 1, 2, "aligned")
    episode.nodes[0].reward, episode.nodes[1].reward = 1.0, 1.0
    root.completions[0][0].kl, root.completions[0][1].kl = 0.5, 0.0
    values = [t.value for t in targets_of(episode, 1, 2, 3, beta=0.2)]
    assert values == pytest.approx([1.0 - 0.1 + 2.0, 3.0])


# ---------------------------------------------------------------- the property


@dataclass
class Tree:
    episode: Episode
    num_agents: int
    g: int
    num_turns: int


REWARDS = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0])  # few values: dominance is common


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    """A rollout tree as ``rollout`` builds it: nodes expand while below the threshold."""
    num_agents = draw(st.integers(1, 2))
    g = draw(st.integers(2, 3))
    mode = draw(st.sampled_from(["aligned", "cross"])) if num_agents > 1 else "aligned"
    num_turns = draw(st.integers(1, 3))
    threshold = draw(st.sampled_from([None, 1.0, 1.5, 2.0]))
    episode = Episode(PROBLEM)  # type: ignore[arg-type]

    def grow(parent: int | None, turn: int) -> None:
        group = add_group(episode, parent, turn, num_agents, g, mode)
        for i in group.nodes:
            masked = draw(st.integers(0, 9)) == 0  # an infrastructure error now and then
            episode.nodes[i].reward = None if masked else draw(REWARDS)
        for i in list(group.nodes):
            if should_expand(episode.nodes[i].reward, turn, num_turns, threshold):
                grow(i, turn + 1)

    grow(None, 1)
    return Tree(episode, num_agents, g, num_turns)


def node_profile(episode: Episode, i: int, num_turns: int) -> list[float] | None:
    """A joint action's reward at each turn from its own to the last: its children's mean
    profile where it has scored children, else its own reward, carried (``None``: masked)."""
    node = episode.nodes[i]
    if node.reward is None:
        return None
    kids = [p for p in (node_profile(episode, c, num_turns) for c in node.children) if p]
    later = num_turns - node.turn
    if not kids:
        return [node.reward] * (later + 1)
    return [node.reward] + [sum(p[k] for p in kids) / len(kids) for k in range(later)]


def completion_profiles(tree: Tree, group: Group, agent: int) -> list[list[float] | None]:
    """Each of ``agent``'s completions' rewards per turn: the mean over its joint actions."""
    out: list[list[float] | None] = []
    for g in range(tree.g):
        mine = [
            node_profile(tree.episode, i, tree.num_turns)
            for i in group.nodes
            if tree.episode.nodes[i].action[agent] == g
        ]
        mine = [p for p in mine if p is not None]
        out.append([sum(col) / len(mine) for col in zip(*mine, strict=True)] if mine else None)
    return out


@settings(max_examples=300, deadline=None)
@given(
    trees(),
    st.sampled_from(ADVANTAGE_MODES),
    st.booleans(),
    st.sampled_from([1.0, 0.9, 0.5, 0.0]),
)
def test_dominating_completion_never_gets_less(
    tree: Tree, mode: str, normalize: bool, gamma: float
) -> None:
    targets = targets_of(
        tree.episode,
        tree.num_agents,
        tree.g,
        tree.num_turns,
        gamma=gamma,
        advantage_mode=mode,
        normalize=normalize,
    )
    by_completion = {id(t.completion): t for t in targets}
    for group in tree.episode.groups:
        for agent in range(tree.num_agents):
            profiles = completion_profiles(tree, group, agent)
            for a, pa in enumerate(profiles):
                for b, pb in enumerate(profiles):
                    if a == b or pa is None or pb is None:
                        continue
                    if all(x >= y - 1e-12 for x, y in zip(pa, pb, strict=True)):
                        ta = by_completion[id(group.completions[agent][a])]
                        tb = by_completion[id(group.completions[agent][b])]
                        assert ta.value >= tb.value - 1e-9, (pa, pb)
                        assert ta.advantage >= tb.advantage - 1e-9, (pa, pb)
