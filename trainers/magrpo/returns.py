"""Returns through the multi-turn tree: ``R = r + gamma * mean(children's R)``.

Nodes are joint actions; a node's children are the joint actions sampled after it, at the next
turn, from the feedback on it. Nodes are given as a flat list whose ``children`` index lists
point forward (a parent always comes before its children), so returns fold from the end.
A ``None`` reward is a masked node (an infrastructure error): it has no return and is left out
of its parent's mean.

Every return covers the same horizon, from the node's turn to ``num_turns``. A branch that
stops early (its reward reached ``early_termination_threshold``, or all its children were
masked) *carries its value forward*: its program stands as the team's answer, so each
remaining turn counts its reward again, discounted::

    R = r + gamma * c * (1 + gamma + ... + gamma^(remaining - 1))

with ``c`` the carried reward (the harness reward; a KL penalty is paid once, on the turn that
generated the completion). Siblings are then always compared over the same turns: a completion
whose rewards are at least its sibling's at every turn (a stopped branch's later rewards being
its carried reward) never gets a lower return. Stopping a branch per node, rather than a whole
sibling group at once as CoMLRL does, keeps the saving where it is earned (only finished
branches stop) without giving a finished branch a shorter, smaller return than a sibling that
still had turns to collect reward in.
"""

from __future__ import annotations

from collections.abc import Sequence


def tree_returns(
    rewards: Sequence[float | None],
    children: Sequence[Sequence[int]],
    gamma: float,
    turns: Sequence[int],
    num_turns: int,
    carried: Sequence[float | None] | None = None,
) -> list[float | None]:
    """The return of every node of the tree (``None`` for masked nodes).

    ``turns`` are the nodes' 1-based turns; ``carried`` the value a stopped branch repeats at
    each remaining turn (default: its reward).
    """
    n = len(rewards)
    if len(children) != n or len(turns) != n or (carried is not None and len(carried) != n):
        raise ValueError(f"{n} rewards for {len(children)} nodes and {len(turns)} turns")
    returns: list[float | None] = [None] * n
    for i in reversed(range(n)):
        if not 1 <= turns[i] <= num_turns:
            raise ValueError(f"node {i}: turn {turns[i]} is outside 1..{num_turns}")
        for c in children[i]:
            if not i < c < n:
                raise ValueError(f"node {i}: a child index must come after its parent")
            if turns[c] != turns[i] + 1:
                raise ValueError(f"node {c}: a child must be at its parent's turn + 1")
        reward = rewards[i]
        if reward is None:
            continue
        kids = [r for r in (returns[c] for c in children[i]) if r is not None]
        if kids:
            future = sum(kids) / len(kids)
        else:  # stopped early (or the last turn: remaining = 0, future = 0)
            value = carried[i] if carried is not None and carried[i] is not None else reward
            future = float(value) * sum(gamma**k for k in range(num_turns - turns[i]))
        returns[i] = float(reward) + gamma * future
    return returns


def should_expand(reward: float | None, turn: int, num_turns: int, threshold: float | None) -> bool:
    """Whether a node at ``turn`` (1-based) gets children at the next turn.

    Not after the last turn, not for masked nodes, and not when ``early_termination_threshold``
    says the branch is already good enough (its value is then carried forward: see above).
    """
    if turn >= num_turns or reward is None:
        return False
    return threshold is None or reward < threshold
