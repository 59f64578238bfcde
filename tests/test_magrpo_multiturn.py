"""Multi-turn MAGRPO: the second-turn prompt holds the agent's first-turn code and the harness's
diagnostics for the joint program, and none of the held-out cases."""

from __future__ import annotations

import pytest
import torch

from harness.models import tiny_model
from suites import load_suite
from trainers.common.config import load_config
from trainers.common.policy import wrap_agents
from trainers.magrpo.config import MAGRPOConfig
from trainers.magrpo.harness_io import harness_feedback, harness_scorer
from trainers.magrpo.roles import Roles
from trainers.magrpo.rollout import RolloutSettings, rollout

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_second_turn_prompt_has_code_and_diagnostics_not_held_out_cases() -> None:
    cfg = load_config(
        MAGRPOConfig,
        None,
        ["magrpo.num_turns=2", "external.mode=level_feedback", "external.sandbox_slice=1"],
    )
    problem = load_suite("humaneval", "test[:1]", None)[0]
    model, tok = tiny_model(0)
    agents = wrap_agents(model, tok, ["helper", "main"], cfg.model, with_reference=False)
    roles = Roles.for_suite("humaneval", 2, "round_robin")
    settings = RolloutSettings(
        num_generations=2,
        num_turns=2,
        joint_mode="aligned",
        max_new_tokens=8,
        temperature=1.0,
        top_p=1.0,
        max_prompt_tokens=4096,
    )
    torch.manual_seed(0)
    feedback = harness_feedback(cfg.external)
    (episode,) = rollout(
        [problem], agents, roles, harness_scorer(cfg.reward, cfg.output), feedback, settings
    )
    first, *later = episode.groups
    assert first.turn == 1 and len(later) == 2 and all(g.turn == 2 for g in later)
    # Cases the docstring already shows are public; the rest are held out unless the feedback
    # reveals a failing one (at most sandbox_slice of them).
    private = [c for c in problem.cases if c.source.strip() not in problem.prompt]
    assert private
    for group in later:
        parent = episode.nodes[group.parent]
        assert parent.row is not None and parent.feedback
        # the feedback is the harness's own rendering of the parent's row
        assert parent.feedback == feedback(parent.row, problem)
        for a, g in enumerate(parent.action):
            earlier = first.completions[a][g]
            for completion in group.completions[a]:
                assert earlier.code.strip() in completion.prompt
                assert parent.feedback.strip() in completion.prompt
                shown = [c for c in private if c.source.strip() in completion.prompt]
                assert len(shown) <= cfg.external.sandbox_slice
                statuses = {c["case_id"]: c["status"] for c in parent.row["cases"]}
                assert all(statuses[c.case_id] != "passed" for c in shown)
                text = tok.decode(completion.prompt_ids)
                assert parent.feedback.strip()[:200] in text  # what the model actually saw


def test_personal_feedback_gives_each_agent_its_own_text() -> None:
    cfg = load_config(
        MAGRPOConfig,
        None,
        ["magrpo.num_turns=2", "external.mode=personal_detailed_feedback"],
    )
    problem = load_suite("humaneval", "test[:1]", None)[0]
    model, tok = tiny_model(0)
    agents = wrap_agents(model, tok, ["helper", "main"], cfg.model, with_reference=False)
    roles = Roles.for_suite("humaneval", 2, "round_robin")
    settings = RolloutSettings(
        num_generations=2,
        num_turns=2,
        joint_mode="aligned",
        max_new_tokens=8,
        temperature=1.0,
        top_p=1.0,
        max_prompt_tokens=4096,
    )
    torch.manual_seed(0)
    feedback = harness_feedback(cfg.external)
    (episode,) = rollout(
        [problem], agents, roles, harness_scorer(cfg.reward, cfg.output), feedback, settings
    )
    first, *later = episode.groups
    private = [c for c in problem.cases if c.source.strip() not in problem.prompt]
    for group in later:
        parent = episode.nodes[group.parent]
        assert parent.row is not None and parent.feedback == ""
        codes = [first.completions[a][g].code for a, g in enumerate(parent.action)]
        assert parent.row["agent_code"] == dict(zip(["helper", "main"], codes, strict=True))
        texts = parent.agent_feedback
        assert texts == feedback(parent.row, problem)
        assert texts[0].startswith("You are agent 1 of 2 (helper).")
        assert texts[1].startswith("You are agent 2 of 2 (main).")
        for a in range(2):
            for completion in group.completions[a]:
                assert texts[a].strip() in completion.prompt
                assert texts[1 - a].splitlines()[0] not in completion.prompt
                shown = [c for c in private if c.source.strip() in completion.prompt]
                assert len(shown) <= cfg.external.sandbox_slice
