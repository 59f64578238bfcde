"""PPO's pure pieces against hand-computed numbers."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from trainers.ppo.core import (  # noqa: E402
    agent_token_advantages,
    clipped_policy_loss,
    gae,
    k3_kl,
    token_rewards,
    turn_gae,
    value_loss,
    whiten,
)


def test_gae_by_hand() -> None:
    # One row of 3 tokens, gamma=0.9, lambda=0.5, reward only at the end.
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.4, 0.2]])
    mask = torch.ones(1, 3)
    adv, ret = gae(rewards, values, mask, gamma=0.9, lam=0.5)
    d2 = 1.0 - 0.2  # next value is 0 after the last token
    d1 = 0.0 + 0.9 * 0.2 - 0.4
    d0 = 0.0 + 0.9 * 0.4 - 0.5
    a2 = d2
    a1 = d1 + 0.45 * a2
    a0 = d0 + 0.45 * a1
    assert torch.allclose(adv, torch.tensor([[a0, a1, a2]]))
    assert torch.allclose(ret, torch.tensor([[a0 + 0.5, a1 + 0.4, a2 + 0.2]]))


def test_gae_ignores_padding_and_lambda_one_is_monte_carlo() -> None:
    rewards = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0]])
    values = torch.tensor([[0.3, 0.1, 9.0], [0.7, 9.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    assert torch.allclose(ret, torch.tensor([[2.0, 2.0, 0.0], [1.0, 0.0, 0.0]]))
    assert torch.allclose(adv, torch.tensor([[1.7, 1.9, 0.0], [0.3, 0.0, 0.0]]))


def test_token_rewards_put_score_on_last_token() -> None:
    kl = torch.tensor([[0.1, 0.2, 0.3], [0.5, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    got = token_rewards(torch.tensor([1.0, -1.0]), kl, mask, beta=0.5)
    assert torch.allclose(got, torch.tensor([[-0.05, -0.1, 0.85], [-1.25, 0.0, 0.0]]))


def test_clipped_loss_by_hand() -> None:
    old = torch.zeros(1, 3)
    new = torch.log(torch.tensor([[1.5, 0.5, 1.1]]))
    adv = torch.tensor([[1.0, -1.0, 2.0]])
    loss, frac = clipped_policy_loss(new, old, adv, torch.ones(1, 3), clip=0.2)
    # token 0: min(1.5, 1.2) * 1 = 1.2; token 1: min(-0.5, -0.8) = -0.8; token 2: 2.2
    assert math.isclose(loss.item(), -(1.2 - 0.8 + 2.2) / 3, rel_tol=1e-6)
    assert math.isclose(frac.item(), 2 / 3, rel_tol=1e-6)


def test_clipped_loss_at_ratio_one_is_minus_mean_advantage() -> None:
    logps = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    adv = torch.tensor([[0.5, -1.5]])
    loss, frac = clipped_policy_loss(logps, logps.detach(), adv, torch.ones(1, 2), clip=0.2)
    loss.backward()
    assert math.isclose(loss.item(), 0.5) and frac.item() == 0.0
    assert torch.allclose(logps.grad, torch.tensor([[-0.25, 0.75]]))


def test_value_loss_clipping_by_hand() -> None:
    values = torch.tensor([[1.0, 0.0]])
    old = torch.tensor([[0.0, 0.0]])
    returns = torch.tensor([[2.0, 1.0]])
    mask = torch.ones(1, 2)
    assert math.isclose(value_loss(values, old, returns, mask, None).item(), 0.5 * (1 + 1) / 2)
    # clipped value of token 0 is 0.2: (0.2 - 2)^2 = 3.24 beats (1 - 2)^2 = 1
    assert math.isclose(
        value_loss(values, old, returns, mask, 0.2).item(), 0.5 * (3.24 + 1) / 2, rel_tol=1e-6
    )


def test_k3_kl_by_hand_and_nonnegative() -> None:
    logp = torch.tensor([-1.0, -2.0, -0.5])
    ref = torch.tensor([-1.0, -1.0, -1.5])
    r = ref - logp
    assert torch.allclose(k3_kl(logp, ref), torch.exp(r) - r - 1)
    assert k3_kl(logp, ref)[0].item() == 0.0 and (k3_kl(logp, ref) >= 0).all()


def test_whiten_masked() -> None:
    x = torch.tensor([[1.0, 3.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    assert torch.allclose(whiten(x, mask), torch.tensor([[-1.0, 1.0, 0.0]]), atol=1e-4)


# ---------------------------------------------------------------- the central critic


def test_turn_gae_one_turn_is_reward_minus_value() -> None:
    # three joint states, one turn: A = r - V, target r (whatever gamma and lambda)
    rewards = torch.tensor([[1.0], [0.0], [-0.5]])
    values = torch.tensor([[0.25], [0.5], [-0.5]])
    adv, ret = turn_gae(rewards, values, torch.ones(3, 1), gamma=0.9, lam=0.5)
    assert torch.allclose(adv, torch.tensor([[0.75], [-0.5], [0.0]]))
    assert torch.allclose(ret, rewards)


def test_turn_gae_over_two_turns_by_hand() -> None:
    # one joint state per turn: r = (0, 1), V = (0.5, 0.25), gamma 0.9, lambda 0.8
    adv, ret = turn_gae(
        torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 0.25]]), torch.ones(1, 2), 0.9, 0.8
    )
    a2 = 1.0 - 0.25  # the last turn: no next state
    a1 = (0.0 + 0.9 * 0.25 - 0.5) + 0.9 * 0.8 * a2  # -0.275 + 0.54
    assert torch.allclose(adv, torch.tensor([[a1, a2]]))
    assert torch.allclose(ret, torch.tensor([[a1 + 0.5, a2 + 0.25]]))
    assert a1 == pytest.approx(0.265)


def test_agent_advantages_share_the_joint_advantage_less_their_own_kl() -> None:
    joint = torch.tensor([0.75, -0.5])  # two joint states
    kl = torch.tensor([[0.1, 0.3, 9.0], [0.2, 0.0, 0.0]])  # padding's 9.0 is masked out
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    got = agent_token_advantages(joint, kl, mask, beta=0.5)
    # state 0: 0.75 - 0.5 * (0.1 + 0.3) = 0.55 on both tokens; state 1: -0.5 - 0.1 = -0.6
    assert torch.allclose(got, torch.tensor([[0.55, 0.55, 0.0], [-0.6, 0.0, 0.0]]))
    assert torch.equal(
        agent_token_advantages(joint, kl, mask, beta=0.0)[0, :2], joint[:1].repeat(2)
    )
