"""The recipe's pieces on hand-made numbers: clip-higher, loss aggregation, overlong masking and
penalty, dynamic sampling's filter and refill, and the config's checks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.common.config import ConfigError, load_config
from trainers.magrpo.collect import collect, episode_targets_for, refill_order
from trainers.magrpo.config import MAGRPOConfig, MAGRPOSettings
from trainers.magrpo.loss import policy_loss
from trainers.magrpo.recipe import (
    aggregate,
    informative_targets,
    is_truncated,
    overlong_penalty,
    recipe_loss,
    token_objective,
    zero_variance,
)
from trainers.magrpo.rollout import Completion, Episode, Group, Node

# ------------------------------------------------------------------ clip-higher


def test_clip_higher_bounds_the_ratio_asymmetrically() -> None:
    old = torch.zeros(1, 4)
    # ratios 0.5, 0.9, 1.2, 1.5 for a positive and a negative advantage
    logp = torch.log(torch.tensor([[0.5, 0.9, 1.2, 1.5]]))
    pos, clip_pos = token_objective(logp, torch.tensor([1.0]), old, 0.2, 0.28)
    # A > 0: min(r, clip(r)) -> 0.5 (unclipped: min picks r), 0.9, 1.2, 1.28 (clipped high)
    assert pos[0].tolist() == pytest.approx([0.5, 0.9, 1.2, 1.28])
    assert clip_pos[0].tolist() == [False, False, False, True]
    neg, clip_neg = token_objective(logp, torch.tensor([-1.0]), old, 0.2, 0.28)
    # A < 0: min(-r, -clip(r)) -> -0.8 (clipped low), -0.9, -1.2, -1.5
    assert neg[0].tolist() == pytest.approx([-0.8, -0.9, -1.2, -1.5])
    assert clip_neg[0].tolist() == [True, False, False, False]


def test_clip_takes_the_gradient_away_past_the_bound() -> None:
    logp = torch.log(torch.tensor([[1.5, 1.1]])).requires_grad_(True)
    obj, _ = token_objective(logp, torch.tensor([1.0]), torch.zeros(1, 2), 0.2, 0.28)
    obj.sum().backward()
    assert logp.grad is not None
    assert logp.grad[0, 0].item() == 0.0  # ratio 1.5 > 1.28: clipped, no push further up
    assert logp.grad[0, 1].item() == pytest.approx(1.1)  # d(ratio)/d(logp) = ratio


def test_without_old_logps_the_objective_is_the_original_loss() -> None:
    logp = torch.tensor([[-1.0, -2.0, 0.0], [-0.5, -0.5, -0.5]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    adv = torch.tensor([0.5, -1.0])
    weights = torch.tensor([1.0, 2.0])
    new, clipped = recipe_loss(logp, mask, adv, weights, "sum", num_sequences=4)
    old = policy_loss(logp, mask, adv, weights, num_sequences=4)
    assert new.item() == pytest.approx(old.item()) and clipped == 0.0
    # the same value as by hand: -(0.5 * -3 + 2 * -1 * -1.5) / 4
    assert new.item() == pytest.approx(-(0.5 * -3.0 + 2.0 * -1.0 * -1.5) / 4)


def test_ratio_one_has_the_original_gradient() -> None:
    base = torch.tensor([[-1.0, -2.0], [-0.3, -0.7]])
    mask = torch.ones(2, 2)
    adv, w = torch.tensor([1.0, -2.0]), torch.ones(2)
    a = base.clone().requires_grad_(True)
    recipe_loss(a, mask, adv, w, "token", old_logp=base.clone()).__getitem__(0).backward()
    b = base.clone().requires_grad_(True)
    recipe_loss(b, mask, adv, w, "token").__getitem__(0).backward()
    assert torch.allclose(a.grad, b.grad)  # type: ignore[arg-type]


# ------------------------------------------------------------------ aggregation


def test_aggregations_on_hand_numbers() -> None:
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert aggregate(per_token, mask, "sum").item() == pytest.approx((6 + 4) / 2)
    assert aggregate(per_token, mask, "token").item() == pytest.approx(10 / 4)
    assert aggregate(per_token, mask, "sequence").item() == pytest.approx((2 + 4) / 2)
    # the update's denominators, for micro-batches summed into one minibatch
    assert aggregate(per_token, mask, "token", num_tokens=8).item() == pytest.approx(10 / 8)
    assert aggregate(per_token, mask, "sum", num_sequences=5).item() == pytest.approx(10 / 5)
    with pytest.raises(ValueError, match="loss_aggregation"):
        aggregate(per_token, mask, "mean")


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 5),
    length=st.integers(1, 6),
    values=st.lists(st.floats(-10, 10), min_size=30, max_size=30),
)
def test_token_and_sequence_agree_when_lengths_are_equal(
    rows: int, length: int, values: list[float]
) -> None:
    per_token = torch.tensor(values[: rows * length]).reshape(rows, length)
    mask = torch.ones(rows, length)
    token = aggregate(per_token, mask, "token").item()
    sequence = aggregate(per_token, mask, "sequence").item()
    assert token == pytest.approx(sequence, abs=1e-4)
    # and sum is length times either
    assert aggregate(per_token, mask, "sum").item() == pytest.approx(length * token, abs=1e-3)


@settings(max_examples=30, deadline=None)
@given(split=st.integers(1, 3), lengths=st.lists(st.integers(1, 5), min_size=4, max_size=4))
def test_micro_batches_sum_to_the_whole_batch(split: int, lengths: list[int]) -> None:
    width = max(lengths)
    mask = torch.tensor([[1.0] * n + [0.0] * (width - n) for n in lengths])
    per_token = torch.arange(4 * width, dtype=torch.float32).reshape(4, width)
    for mode in ("sum", "token", "sequence"):
        whole = aggregate(per_token, mask, mode).item()
        parts = sum(
            aggregate(
                per_token[i], mask[i], mode, num_sequences=4, num_tokens=float(sum(lengths))
            ).item()
            for i in (slice(0, split), slice(split, 4))
        )
        assert parts == pytest.approx(whole, rel=1e-5)


# ------------------------------------------------------------------ overlong


def test_truncation_is_the_limit_without_an_end_token() -> None:
    assert is_truncated([5, 6, 7], 3, {2})
    assert not is_truncated([5, 6, 2], 3, {2})  # stopped at the end token on the last slot
    assert not is_truncated([5, 2], 3, {2})
    assert not is_truncated([5, 6], 3, {2})  # shorter than the limit: finished (vLLM, stop)


def test_soft_overlong_penalty_ramps_over_the_buffer() -> None:
    # DAPO eq. 13 with L_max=100, L_cache=20: 0 up to 80, -0.5 at 90, -1 at 100
    assert overlong_penalty(80, 100, 20) == 0.0
    assert overlong_penalty(90, 100, 20) == pytest.approx(0.5)
    assert overlong_penalty(100, 100, 20) == pytest.approx(1.0)
    assert overlong_penalty(130, 100, 20, factor=0.5) == pytest.approx(0.5)
    assert overlong_penalty(100, 100, 0) == 0.0


def _completion(agent: int, ids: list[int], truncated: bool = False) -> Completion:
    return Completion(agent, "p", [1], ids, "t", "c", 1, truncated=truncated)


def _episode(rewards: list[float | None], lengths: list[int], truncated: list[bool]) -> Episode:
    """One agent, one turn, G completions with the given joint rewards."""
    comps = [_completion(0, [7] * n, t) for n, t in zip(lengths, truncated, strict=True)]
    ep = Episode(problem=None)  # type: ignore[arg-type]
    ep.groups.append(Group(1, None, [comps]))
    for g, r in enumerate(rewards):
        ep.nodes.append(Node(0, (g,), 1, "", reward=r))
        ep.groups[0].nodes.append(g)
    return ep


def _settings(*overrides: str, g: int = 4) -> MAGRPOSettings:
    cfg = load_config(
        MAGRPOConfig,
        None,
        ["magrpo.num_agents=1", f"magrpo.num_generations={g}", "magrpo.max_new_tokens=10",
         *overrides],
    )  # fmt: skip
    return cfg.magrpo


def test_overlong_mask_keeps_truncated_in_the_baseline_but_not_in_the_loss() -> None:
    ep = _episode([1.0, 0.0, 0.0, 0.0], [3, 10, 4, 5], [False, True, False, False])
    plain = episode_targets_for(ep, _settings(), 1)
    masked = episode_targets_for(ep, _settings("magrpo.overlong=mask"), 1)
    assert len(plain) == 4 and len(masked) == 3
    assert all(not t.completion.truncated for t in masked)
    # the baseline still has four members: mean 0.25
    assert [t.advantage for t in masked] == pytest.approx([0.75, -0.25, -0.25])


def test_soft_overlong_penalty_lowers_only_long_completions() -> None:
    # max_new_tokens=10, buffer 4: penalty ramps over tokens 7..10
    ep = _episode([1.0, 1.0, 0.0, 0.0], [3, 10, 4, 8], [False, True, False, False])
    s = _settings("magrpo.overlong=soft", "magrpo.overlong_buffer=4", "magrpo.overlong_penalty=0.5")
    values = [t.value for t in episode_targets_for(ep, s, 1)]
    assert values == pytest.approx([1.0, 1.0 - 0.5, 0.0, 0.0 - 0.5 * 2 / 4])
    # buffer 0 picks a fifth of max_new_tokens
    assert _settings("magrpo.overlong=soft").soft_overlong_buffer() == 2
    assert _settings().soft_overlong_buffer() == 0


# ------------------------------------------------------------------ dynamic sampling


@dataclass
class _T:
    agent: int
    group: int
    value: float


def test_informative_targets_drop_zero_variance_groups() -> None:
    targets = [_T(0, 0, 1.0), _T(0, 0, 1.0), _T(1, 0, 0.0), _T(1, 0, 1.0), _T(0, 1, 0.0)]
    kept, groups, zero = informative_targets(targets)
    assert (groups, zero) == (3, 2)  # agent 0 group 0 all equal, agent 0 group 1 a single one
    assert kept == [targets[2], targets[3]]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0])),
        max_size=30,
    )
)
def test_dynamic_sampling_never_keeps_a_zero_variance_group(
    rows: list[tuple[int, int, float]],
) -> None:
    targets = [_T(a, g, v) for a, g, v in rows]
    kept, groups, zero = informative_targets(targets)
    by_group: dict[tuple[int, int], list[float]] = {}
    for t in kept:
        by_group.setdefault((t.agent, t.group), []).append(t.value)
    assert all(not zero_variance(v) for v in by_group.values())
    # nothing informative is lost
    everything: dict[tuple[int, int], list[float]] = {}
    for t in targets:
        everything.setdefault((t.agent, t.group), []).append(t.value)
    assert len(by_group) == groups - zero == sum(not zero_variance(v) for v in everything.values())


def test_collect_refills_until_the_buffer_is_informative() -> None:
    """Problem 'a' always scores alike, 'b' and 'c' vary: 'a' is refilled with fresh ones."""
    rewards = {"a": [0.0] * 4, "b": [1.0, 0.0, 0.0, 0.0], "c": [0.0, 1.0, 1.0, 0.0]}
    calls: list[list[str]] = []

    def sample(problems: list[str], tag: str) -> list[Episode]:
        calls.append(list(problems))
        out = []
        for p in problems:
            ep = _episode(rewards[p], [2] * 4, [False] * 4)
            ep.problem = p  # type: ignore[assignment]
            out.append(ep)
        return out

    fresh = iter([["a", "a"], ["b", "c"]])
    s = _settings("magrpo.dynamic_sampling=true", "magrpo.rollout_buffer_size=2")
    got = collect(
        ["a", "b"],  # type: ignore[list-item]
        sample,
        lambda e: episode_targets_for(e, s, 1),
        s,
        lambda count, round_: next(fresh),  # type: ignore[arg-type,return-value]
        "t",
    )
    assert calls == [["a", "b"], ["a", "a"], ["b", "c"]]
    assert [e.problem for e in got.trained] == ["b", "b"]  # buffer full after the first fresh b
    assert [e.problem for e in got.episodes] == ["a", "b"]  # the step's own prompts
    assert got.metrics["zero_gradient_share"] == 0.5
    assert got.metrics["trained_zero_gradient_share"] == 0.0
    assert got.metrics["refill_rounds"] == 2 and got.metrics["refill_episodes"] == 4
    assert len(got.targets) == 8

    # off: everything is kept, and the share of zero-gradient groups is still measured
    plain = _settings("magrpo.rollout_buffer_size=2")
    calls.clear()
    got = collect(["a", "b"], sample, lambda e: episode_targets_for(e, plain, 1), plain,  # type: ignore[arg-type]
                  lambda c, r: [], "t")  # fmt: skip
    assert calls == [["a", "b"]] and len(got.targets) == 8
    assert got.metrics["trained_zero_gradient_share"] == 0.5


def test_collect_stops_at_the_refill_budget() -> None:
    def sample(problems: list[str], tag: str) -> list[Episode]:
        return [_episode([0.0] * 4, [2] * 4, [False] * 4) for _ in problems]

    s = _settings("magrpo.dynamic_sampling=true", "magrpo.dynamic_sampling_rounds=2")
    got = collect(["x"], sample, lambda e: episode_targets_for(e, s, 1), s,  # type: ignore[list-item]
                  lambda c, r: ["y"], "t")  # fmt: skip
    assert got.targets == [] and got.metrics["refill_rounds"] == 2


def test_refill_order_is_seeded_and_avoids_the_step_prompts() -> None:
    first = refill_order(3, 10, [0, 1], 7)
    assert first == refill_order(3, 10, [0, 1], 7) and len(set(first)) == 3
    assert not {0, 1} & set(first)
    assert refill_order(5, 2, [0, 1], 7) != []  # a tiny pool still gives prompts


# ------------------------------------------------------------------ config


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("magrpo.epsilon_low=1.5", "epsilon_low"),
        ("magrpo.epsilon_high=0", "epsilon_high"),
        ("magrpo.ppo_epochs=0", "ppo_epochs"),
        ("magrpo.overlong_buffer=10", "overlong_buffer"),
        ("magrpo.loss_aggregation=mean", "loss_aggregation"),
        ("magrpo.dynamic_sampling_rounds=-1", "dynamic_sampling_rounds"),
    ],
)
def test_config_rejects_impossible_recipe_settings(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _settings(override)


def test_dynamic_sampling_with_raw_advantages_is_refused() -> None:
    with pytest.raises(ConfigError, match="advantage_mode=mean"):
        _settings("magrpo.dynamic_sampling=true", "magrpo.advantage_mode=raw")


def test_updates_per_buffer() -> None:
    assert _settings().updates_per_buffer(8) == 1
    assert _settings("magrpo.ppo_epochs=2", "magrpo.minibatch_size=3").updates_per_buffer(8) == 6
    assert math.isclose(_settings().epsilon_high, 0.28)


def test_collect_judges_variance_before_masking_the_truncated() -> None:
    """A group whose only different completion was truncated still has variance (it is in the
    baseline); masking then leaves its truncated completion out of what is trained."""
    s = _settings("magrpo.dynamic_sampling=true", "magrpo.overlong=mask")

    def sample(problems: list[str], tag: str) -> list[Episode]:
        return [_episode([1.0, 0.0, 0.0, 0.0], [2, 10, 3, 4], [False, True, False, False])]

    got = collect(["x"], sample, lambda e: episode_targets_for(e, s, 1, mask=False), s,  # type: ignore[list-item]
                  lambda c, r: [], "t")  # fmt: skip
    assert len(got.targets) == 3 and not any(t.completion.truncated for t in got.targets)
    assert got.metrics["overlong_masked_share"] == pytest.approx(0.25)
    assert got.metrics["refill_rounds"] == 0
