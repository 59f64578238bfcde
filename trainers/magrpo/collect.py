"""A step's training targets from rollouts, with dynamic sampling (DAPO) when it is on.

At a pass rate of a few percent most sibling groups score alike: every completion fails, the
group-relative advantages are all 0 and the group only dilutes the loss's denominator. With
``dynamic_sampling`` such groups (per agent, per sibling group, in every turn) are dropped;
an episode left with no informative group is replaced by a fresh training prompt's episode,
for at most ``dynamic_sampling_rounds`` extra rollout rounds, each of ``rollout_buffer_size``
prompts. A step keeps at most ``rollout_buffer_size`` informative episodes; when the budget
runs out it trains on what it has.

The step's own prompts (the first round) are what its reward metrics describe, with or without
dynamic sampling, so learning curves of runs with and without it stay comparable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.records import Problem
from trainers.magrpo.config import MAGRPOSettings
from trainers.magrpo.recipe import informative_targets, overlong_penalty
from trainers.magrpo.rollout import Completion, Episode
from trainers.magrpo.targets import Target, episode_targets

SampleFn = Callable[[list[Problem], str], list[Episode]]  # (problems, tag) -> scored episodes
TargetsFn = Callable[[Episode], list[Target]]
RefillFn = Callable[[int, int], list[Problem]]  # (count, round) -> fresh training problems


@dataclass
class Collected:
    """What one step trains on, and how dynamic sampling got there."""

    episodes: list[Episode]  # the step's own prompts (the first round)
    targets: list[Target]
    trained: list[Episode] = field(default_factory=list)  # episodes the targets come from
    metrics: dict[str, float] = field(default_factory=dict)


def collect(
    problems: list[Problem],
    sample: SampleFn,
    targets_of: TargetsFn,
    settings: MAGRPOSettings,
    refill: RefillFn,
    tag: str,
) -> Collected:
    """Roll out ``problems`` and build targets; refill zero-gradient episodes if asked."""
    first = sample(problems, tag)
    per_episode = [targets_of(e) for e in first]
    groups = zero = 0
    kept: list[tuple[Episode, list[Target]]] = []
    for episode, targets in zip(first, per_episode, strict=True):
        # zero variance is judged on every completion, truncated ones too (they are in the
        # baseline); overlong masking then takes the truncated out of what is trained
        informative, n, z = informative_targets(targets)
        groups, zero = groups + n, zero + z
        if not settings.dynamic_sampling:
            kept.append((episode, targets))
        elif informative:
            kept.append((episode, informative))
    rounds = sampled = 0
    wanted = settings.rollout_buffer_size
    while (
        settings.dynamic_sampling
        and len(kept) < wanted
        and rounds < settings.dynamic_sampling_rounds
    ):
        rounds += 1
        fresh = refill(wanted, rounds)
        if not fresh:
            break
        for episode in sample(fresh, f"{tag}r{rounds}"):
            sampled += 1
            informative, _, _ = informative_targets(targets_of(episode))
            if informative and len(kept) < wanted:
                kept.append((episode, informative))
    trained_groups = trained_zero = 0
    for _, targets in kept:
        _, n, z = informative_targets(targets)
        trained_groups, trained_zero = trained_groups + n, trained_zero + z
    chosen = [t for _, ts in kept for t in ts]
    trainable = [t for t in chosen if not (settings.overlong == "mask" and t.completion.truncated)]
    metrics = {
        "groups": float(groups),
        "zero_gradient_share": zero / groups if groups else 0.0,
        "trained_groups": float(trained_groups),
        "trained_zero_gradient_share": trained_zero / trained_groups if trained_groups else 0.0,
        "episodes_trained": float(len(kept)),
        "refill_rounds": float(rounds),
        "refill_episodes": float(sampled),
        "overlong_masked_share": 1.0 - len(trainable) / len(chosen) if chosen else 0.0,
    }
    return Collected(first, trainable, [e for e, _ in kept], metrics)


def refill_order(count: int, pool: int, exclude: Sequence[int], rng_seed: int) -> list[int]:
    """``count`` indices into a pool of ``pool`` problems, the step's own left out when the
    pool allows (seeded, so a run and its resumption draw the same)."""
    import random

    left = [i for i in range(pool) if i not in set(exclude)] or list(range(pool))
    rng = random.Random(rng_seed)
    return rng.sample(left, min(count, len(left)))


def episode_targets_for(
    episode: Episode, s: MAGRPOSettings, num_agents: int, mask: bool = True
) -> list[Target]:
    """One episode's targets as configured: returns less the KL and the soft overlong penalty,
    group-relative advantages. With ``overlong=mask`` and ``mask`` true, truncated completions
    (which count in their group's baseline) are left out: DAPO's overlong filtering.
    :func:`collect` masks them itself, after judging the groups' variance on all of them."""
    ramp = s.soft_overlong_buffer()

    def penalty(c: Completion) -> float:
        return overlong_penalty(len(c.completion_ids), s.max_new_tokens, ramp, s.overlong_penalty)

    targets = episode_targets(
        episode,
        num_agents=num_agents,
        num_generations=s.num_generations,
        num_turns=s.num_turns,
        gamma=s.gamma,
        beta=s.beta,
        advantage_mode=s.advantage_mode,
        normalize=s.normalize_advantage,
        penalty=penalty if ramp else None,
    )
    if mask and s.overlong == "mask":
        targets = [t for t in targets if not t.completion.truncated]
    return targets
