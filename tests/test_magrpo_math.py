"""MAGRPO's pure pieces against hand-computed numbers: joint actions, returns, advantages, KL,
per-turn weighting and the loss."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.magrpo.advantages import group_advantages
from trainers.magrpo.joint import agent_values, joint_actions
from trainers.magrpo.loss import k3, policy_loss, sequence_kl, turn_weights_for
from trainers.magrpo.returns import should_expand, tree_returns


def approx(values: list[float | None]) -> list:
    return [None if v is None else pytest.approx(v, abs=1e-9) for v in values]


# ---------------------------------------------------------------- joint actions


def test_aligned_joint_actions() -> None:
    assert joint_actions(2, 3, "aligned") == [(0, 0), (1, 1), (2, 2)]
    assert agent_values([0.1, 0.5, 0.9], joint_actions(2, 3, "aligned"), 1, 3) == [0.1, 0.5, 0.9]


def test_cross_joint_actions_and_means() -> None:
    actions = joint_actions(2, 2, "cross")
    assert actions == [(0, 0), (0, 1), (1, 0), (1, 1)]
    joint = [1.0, 0.0, 0.5, 0.25]
    # agent 0, completion 0 is in (0,0),(0,1): (1+0)/2; completion 1 in (1,0),(1,1): 0.375
    assert agent_values(joint, actions, 0, 2) == approx([0.5, 0.375])
    # agent 1, completion 0 is in (0,0),(1,0): 0.75; completion 1 in (0,1),(1,1): 0.125
    assert agent_values(joint, actions, 1, 2) == approx([0.75, 0.125])
    assert len(joint_actions(3, 2, "cross")) == 8


def test_masked_joint_values_left_out() -> None:
    actions = joint_actions(2, 2, "cross")
    assert agent_values([None, 0.0, None, 0.25], actions, 1, 2) == [None, 0.125]


def test_unknown_joint_mode() -> None:
    with pytest.raises(ValueError, match="cross"):
        joint_actions(2, 2, "diagonal")


# ---------------------------------------------------------------- returns


def test_tree_returns_two_turns() -> None:
    # root joint actions 0, 1; node 0 has children 2, 3; node 1 was not expanded.
    rewards = [0.2, 1.0, 0.4, 0.8]
    children = [[2, 3], [], [], []]
    turns = [1, 1, 2, 2]
    # R0 = 0.2 + 0.5 * mean(0.4, 0.8) = 0.5 ; R1 = 1.0 + 0.5 * 1.0 (carried to turn 2) = 1.5
    assert tree_returns(rewards, children, 0.5, turns, 2) == approx([0.5, 1.5, 0.4, 0.8])
    assert tree_returns(rewards, children, 1.0, turns, 2) == approx([0.8, 2.0, 0.4, 0.8])
    # one turn in all: nothing is carried
    assert tree_returns([0.3, 0.7], [[], []], 0.5, [1, 1], 1) == approx([0.3, 0.7])


def test_tree_returns_three_turns_and_masks() -> None:
    rewards = [0.0, 0.5, None, 1.0, 0.2]
    children = [[1, 2], [3, 4], [], [], []]
    turns = [1, 2, 2, 3, 3]
    # R1 = 0.5 + 0.9 * 0.6 = 1.04 ; R0 = 0 + 0.9 * mean(R1) (node 2 masked) = 0.936
    assert tree_returns(rewards, children, 0.9, turns, 3) == approx([0.936, 1.04, None, 1.0, 0.2])


def test_tree_returns_carry_a_stopped_branch_to_the_last_turn() -> None:
    # node 0 stopped at turn 1 of 3; node 1's children are all masked (carried as well);
    # node 2 carries a KL-free value 1.0 while its own reward is 0.75 (KL paid once)
    rewards = [2.0, 0.5, 0.75, None]
    children = [[], [3], [], []]
    turns = [1, 1, 1, 2]
    carried = [2.0, 0.5, 1.0, None]
    got = tree_returns(rewards, children, 0.5, turns, 3, carried)
    # 2 + 0.5 * 2 * (1 + 0.5) = 3.5 ; 0.5 + 0.5 * 0.5 * 1.5 = 0.875 ; 0.75 + 0.5 * 1.5 = 1.5
    assert got == approx([3.5, 0.875, 1.5, None])


def test_tree_returns_rejects_malformed_trees() -> None:
    with pytest.raises(ValueError, match="after its parent"):
        tree_returns([0.0, 1.0], [[], [0]], 1.0, [2, 1], 2)
    with pytest.raises(ValueError, match="turn \\+ 1"):
        tree_returns([0.0, 1.0], [[1], []], 1.0, [1, 1], 2)
    with pytest.raises(ValueError, match="outside"):
        tree_returns([0.0], [[]], 1.0, [3], 2)


def test_early_termination() -> None:
    assert should_expand(0.5, 1, 2, None)
    assert not should_expand(0.5, 2, 2, None)  # last turn
    assert not should_expand(0.9, 1, 2, 0.9)  # already good enough
    assert should_expand(0.89, 1, 2, 0.9)
    assert not should_expand(None, 1, 2, None)  # masked


# ---------------------------------------------------------------- advantages

VALUES = [1.0, 0.0, 0.5, 0.5]  # mean 0.5, unbiased std sqrt(0.5/3)
STD = math.sqrt(0.5 / 3)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("mean", [0.5, -0.5, 0.0, 0.0]),
        ("rloo", [1.0 - 1.0 / 3, 0.0 - 2.0 / 3, 0.5 - 1.5 / 3, 0.5 - 1.5 / 3]),
        ("max", [0.0, -1.0, -0.5, -0.5]),
        ("raw", [1.0, 0.0, 0.5, 0.5]),
    ],
)
def test_advantage_modes(mode: str, expected: list[float]) -> None:
    assert group_advantages(VALUES, mode) == approx(expected)
    normalized = [e / (STD + 1e-4) for e in expected]
    assert group_advantages(VALUES, mode, normalize=True) == approx(normalized)


def test_advantages_mask_and_degenerate_groups() -> None:
    assert group_advantages([1.0, None, 0.0], "mean") == [0.5, None, -0.5]
    assert group_advantages([None, None], "rloo") == [None, None]
    assert group_advantages([0.7, None], "rloo") == [0.0, None]
    assert group_advantages([0.3, 0.3], "mean", normalize=True) == [0.0, 0.0]
    with pytest.raises(ValueError, match="rloo"):
        group_advantages([1.0], "median")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=-10, max_value=10), min_size=2, max_size=16))
def test_mean_and_rloo_advantages_sum_to_zero(values: list[float]) -> None:
    for mode in ("mean", "rloo"):
        assert abs(sum(group_advantages(values, mode))) < 1e-6 * len(values) * 10  # type: ignore[arg-type]
    # rloo = G/(G-1) * mean-centred
    g = len(values)
    for a, b in zip(
        group_advantages(values, "rloo"), group_advantages(values, "mean"), strict=True
    ):
        assert a == pytest.approx(b * g / (g - 1), abs=1e-9)  # type: ignore[operator]


# ---------------------------------------------------------------- KL and loss


def test_k3_hand_computed() -> None:
    logp = torch.tensor([[math.log(0.5), math.log(0.25)]])
    ref = torch.tensor([[math.log(0.25), math.log(0.25)]])
    # token 1: delta = log(0.5) -> exp(delta) - delta - 1 = 0.5 + log 2 - 1 ; token 2: 0
    expected = 0.5 + math.log(2) - 1
    assert k3(logp, ref)[0, 0].item() == pytest.approx(expected, abs=1e-6)
    assert k3(logp, ref)[0, 1].item() == pytest.approx(0.0, abs=1e-7)
    mask = torch.tensor([[1.0, 1.0]])
    assert sequence_kl(logp, ref, mask).item() == pytest.approx(expected / 2, abs=1e-6)
    mask = torch.tensor([[1.0, 0.0]])
    assert sequence_kl(logp, ref, mask).item() == pytest.approx(expected, abs=1e-6)


def test_policy_loss_and_turn_weights() -> None:
    logp = torch.tensor([[-1.0, -2.0, -9.0], [-0.5, -0.5, -0.5]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])  # row 0 has two tokens
    adv = torch.tensor([0.5, -1.0])
    weights = turn_weights_for([1, 2], [1.2, 0.8])
    assert weights.tolist() == pytest.approx([1.2, 0.8])
    loss = policy_loss(logp, mask, adv, weights)
    # -(1.2 * 0.5 * (-3) + 0.8 * (-1) * (-1.5)) / 2 = -(-1.8 + 1.2) / 2 = 0.3
    assert loss.item() == pytest.approx(0.3)
    loss.backward()
    # d/dlogp = -w*A/2 on real tokens, 0 on padding
    assert logp.grad.tolist() == [  # type: ignore[union-attr]
        pytest.approx([-0.3, -0.3, 0.0]),
        pytest.approx([0.4, 0.4, 0.4]),
    ]
    unweighted = policy_loss(logp.detach(), mask, adv, num_sequences=4)
    assert unweighted.item() == pytest.approx(-(0.5 * -3 + -1 * -1.5) / 4)
