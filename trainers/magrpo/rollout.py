"""Rollouts: per prompt, every agent samples G completions; joint actions are scored by the
harness; at turn t >= 2 each expanded branch's agents see feedback and sample again (G per
branch in training; one per branch in evaluation, so each first-turn sample follows one path).

The result per prompt is an :class:`Episode`: sibling groups (one per expansion: the root, or a
parent joint action) with each agent's G completions, and joint-action nodes with their rewards
and children. Generation is batched across all branches of a turn, per agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.records import Problem, Sample
from trainers.common.policy import AgentPolicy
from trainers.common.reward import masked_reward
from trainers.common.rollout_engine import RolloutEngine, TransformersRollouts
from trainers.common.sampling import encode_prompts, render_prompt, stop_ids
from trainers.magrpo.joint import JointAction, joint_actions
from trainers.magrpo.recipe import is_truncated
from trainers.magrpo.returns import should_expand
from trainers.magrpo.roles import Roles, Turn

# scorer(problems, samples) or scorer(problems, samples, extras): rows in sample order
Scorer = Callable[..., list[dict[str, Any]]]
# feedback(row, problem): one text for every agent, or one per agent (the personal modes)
FeedbackFn = Callable[[dict[str, Any], Problem], str | Sequence[str]]


@dataclass
class Completion:
    """One agent's sampled completion within a sibling group."""

    agent: int
    prompt: str
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    code: str
    turn: int
    kl: float = 0.0
    truncated: bool = False  # stopped at max_new_tokens, not at an end token


@dataclass
class Node:
    """A joint action: the agents' completions scored together."""

    group: int
    action: JointAction
    turn: int
    completion: str
    extras: dict[str, Any] = field(default_factory=dict)
    codes: list[str] = field(default_factory=list)  # each agent's code, in agent order
    row: dict[str, Any] | None = None
    reward: float | None = None
    feedback: str = ""  # the text every agent saw ("" when each saw its own)
    agent_feedback: list[str] = field(default_factory=list)  # the text each agent saw
    children: list[int] = field(default_factory=list)


@dataclass
class Group:
    """The G completions per agent sampled from one parent (``None``: the prompt itself)."""

    turn: int
    parent: int | None
    completions: list[list[Completion]]  # [agent][g]
    nodes: list[int] = field(default_factory=list)


@dataclass
class Episode:
    """One prompt's rollout tree."""

    problem: Problem
    groups: list[Group] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)


@dataclass
class RolloutSettings:
    num_generations: int
    num_turns: int
    joint_mode: str
    max_new_tokens: int
    temperature: float
    top_p: float
    max_prompt_tokens: int
    early_termination_threshold: float | None = None
    reward_shift: float = 0.0
    reward_scale: float = 1.0
    followup_generations: int | None = None  # per expanded branch at turns >= 2 (None: G)

    def generations(self, turn: int) -> int:
        """Completions each agent samples per branch at ``turn``."""
        return (
            self.num_generations if turn == 1 else self.followup_generations or self.num_generations
        )


@dataclass
class _Branch:
    episode: Episode
    parent: int | None
    histories: list[list[Turn]]  # per agent


def _sample_agent(
    agent: AgentPolicy,
    prompts: list[str],
    settings: RolloutSettings,
    n: int,
    engine: RolloutEngine | None = None,
) -> list[list[Any]]:
    tok = agent.tokenizer
    ids = encode_prompts(tok, [render_prompt(tok, p) for p in prompts], settings.max_prompt_tokens)
    return (engine or TransformersRollouts()).sample(
        agent, ids, n, settings.max_new_tokens, settings.temperature, settings.top_p
    )


def reward_of(row: dict[str, Any] | None, settings: RolloutSettings) -> float | None:
    """The trainer's reward from a harness row; ``None`` (masked) for infrastructure errors."""
    return masked_reward(row, settings.reward_shift, settings.reward_scale)


def rollout(
    problems: Sequence[Problem],
    agents: Sequence[AgentPolicy],
    roles: Roles,
    scorer: Scorer,
    feedback: FeedbackFn | None,
    settings: RolloutSettings,
    tag: str = "",
    engine: RolloutEngine | None = None,
) -> list[Episode]:
    """Sample and score the rollout trees of ``problems`` (turn by turn, batched per agent)."""
    episodes = [Episode(p) for p in problems]
    branches = [_Branch(e, None, [[] for _ in agents]) for e in episodes]
    for turn in range(1, settings.num_turns + 1):
        if not branches:
            break
        n = settings.generations(turn)
        actions = joint_actions(len(agents), n, settings.joint_mode)
        per_agent = []
        for a, agent in enumerate(agents):
            prompts = [roles.prompt(b.episode.problem, a, b.histories[a]) for b in branches]
            per_agent.append((prompts, _sample_agent(agent, prompts, settings, n, engine)))
        stops = [stop_ids(agent.tokenizer, agent.model) for agent in agents]
        new_nodes: list[tuple[_Branch, Node, int]] = []
        for i, branch in enumerate(branches):
            ep = branch.episode
            completions = []
            for a in range(len(agents)):
                prompts, gens = per_agent[a]
                completions.append(
                    [
                        Completion(
                            a,
                            prompts[i],
                            g.prompt_ids,
                            g.completion_ids,
                            g.text,
                            roles.code(ep.problem, a, g.text),
                            turn,
                            truncated=is_truncated(
                                g.completion_ids, settings.max_new_tokens, stops[a]
                            ),
                        )
                        for g in gens[i]
                    ]
                )
            group = Group(turn, branch.parent, completions)
            ep.groups.append(group)
            for action in actions:
                codes = [completions[a][g].code for a, g in enumerate(action)]
                node = Node(
                    len(ep.groups) - 1,
                    action,
                    turn,
                    roles.joint(ep.problem, codes),
                    roles.row_extras(ep.problem, codes),
                    codes,
                )
                index = len(ep.nodes)
                group.nodes.append(index)
                if branch.parent is not None:
                    ep.nodes[branch.parent].children.append(index)
                ep.nodes.append(node)
                new_nodes.append((branch, node, index))
        _score(new_nodes, scorer, settings, f"{tag}t{turn}", roles.names)
        next_branches = []
        for branch, node, index in new_nodes:
            if feedback is not None and should_expand(
                node.reward, turn, settings.num_turns, settings.early_termination_threshold
            ):
                text = feedback(node.row or {}, branch.episode.problem)
                if isinstance(text, str):
                    node.feedback, node.agent_feedback = text, [text] * len(agents)
                else:
                    node.agent_feedback = list(text)
                    if len(node.agent_feedback) != len(agents):
                        raise ValueError(
                            f"feedback gave {len(node.agent_feedback)} texts for {len(agents)} agents"
                        )
                group = branch.episode.groups[node.group]
                histories = [
                    [
                        *branch.histories[a],
                        Turn(group.completions[a][g].code, node.agent_feedback[a]),
                    ]
                    for a, g in enumerate(node.action)
                ]
                next_branches.append(_Branch(branch.episode, index, histories))
        branches = next_branches
    return episodes


def _score(
    nodes: list[tuple[_Branch, Node, int]],
    scorer: Scorer,
    settings: RolloutSettings,
    tag: str,
    names: Sequence[str],
) -> None:
    """Score every joint action of a turn in one harness call; each row keeps the agents'
    own code (``agent_code``) for feedback that speaks to one agent."""
    problems: dict[str, Problem] = {}
    samples = []
    for i, (branch, node, _) in enumerate(nodes):
        problem = branch.episode.problem
        problems[problem.task_id] = problem
        samples.append(Sample(problem.task_id, node.completion, f"{tag}-{i}"))
    extras = [node.extras for _, node, _ in nodes]
    if any(extras):
        rows = scorer(list(problems.values()), samples, extras)
    else:  # plain two-argument scorers work for function suites
        rows = scorer(list(problems.values()), samples)
    by_id = {(r.get("task_id"), str(r.get("sample_id"))): r for r in rows}
    for sample, (_, node, _) in zip(samples, nodes, strict=True):
        node.row = by_id.get((sample.task_id, sample.sample_id))
        node.reward = reward_of(node.row, settings)
        if node.row is not None and node.codes and "agent_code" not in node.row:
            node.row = {**node.row, "agent_code": dict(zip(names, node.codes, strict=True))}
