"""render_feedback: each mode's text for fixed rows, and sandbox_slice keeping cases held out."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.analyzers import AnalyzerCache
from harness.program_ast import parse_program
from harness.reward import load_reward_config, render_feedback, score_rows
from harness.reward.feedback import FEEDBACK_MODES, PERSONAL_MODES, visible_cases
from tests.test_reward import problem, row

PROGRAM = (
    "def aux(xs):\n    return sum(xs)\n\n\ndef solve(xs):\n    aux(xs)\n    return helper2(xs)\n"
)
MESSAGES = [
    "",
    "Failed: candidate raised NameError: name 'helper2' is not defined",
    "",
    "assert 4 == 3",
]


@pytest.fixture
def scored(tmp_path: Path) -> dict:
    p = problem()
    r = row(PROGRAM, ["passed", "failed", "passed", "failed"], MESSAGES)
    r["completion"] = PROGRAM
    config = load_reward_config("code_levels")
    return score_rows([r], {p.task_id: p}, config, cache=AnalyzerCache(tmp_path / "c.sqlite"))[0]


def test_level_feedback_diagnostics(scored: dict) -> None:
    text = render_feedback(scored, problem(), "level_feedback", "all")
    assert text.splitlines() == [
        "Function `solve`: FOUND",
        "Helper `aux`: FOUND",
        "Syntax: OK",
        "Tests: 2/4 passed",
        "- assert candidate([1]) == 1: NameError: Failed: candidate raised NameError: "
        "name 'helper2' is not defined",
        "- assert candidate([3]) == 3: AssertionError: assert 4 == 3",
        "Warning: `solve` ignores the value `aux` returns.",
        "Warning: `helper2` is used but never defined or imported.",
    ]
    # the config's own mode was applied when scoring (first case only: it passed)
    assert "- assert" not in scored["feedback"] and "Tests: 2/4 passed" in scored["feedback"]


def test_sandbox_slice_keeps_held_out_cases_out(scored: dict) -> None:
    def failed_lines(sandbox_slice: int | str) -> list[str]:
        text = render_feedback(scored, problem(), "level_feedback", sandbox_slice)
        return [line[:30] for line in text.splitlines() if line.startswith("- ")]

    assert failed_lines(0) == []
    assert failed_lines(2) == ["- assert candidate([1]) == 1: "]
    assert failed_lines("last:1") == ["- assert candidate([3]) == 3: "]
    assert failed_lines(-2) == ["- assert candidate([3]) == 3: "]
    assert len(failed_lines(-1)) == 2  # the trainers' "all"


def test_other_modes(scored: dict) -> None:
    p = problem()
    assert render_feedback(scored, p, "passed", 1) == "Not all levels passed."
    assert render_feedback(scored, p, "level_passed", 1).splitlines() == [
        "Implementation found: yes",
        "Syntax correct: yes",
        "All tests passed: no (some passed)",
        "Helper used well: no",
    ]
    plain = render_feedback(scored, p, "plain", 1)
    assert PROGRAM.strip() in plain and "Revise" in plain
    assert render_feedback(scored, p, "none", 1) == ""
    assert render_feedback({**scored, "tokens": 256, "max_tokens": 256}, p, "token_report") == (
        "Tokens used: 256 of 256 (hit the limit: the answer was cut off)."
    )
    assert "about" in render_feedback(scored, p, "token_report")


def test_syntax_error_and_missing_definitions_without_analyzers() -> None:
    # A row that was never scored: the feedback computes what it needs itself.
    r = row("def solve(xs)\n    return 1\n", ["failed"] * 4)
    text = render_feedback(r, problem(), "level_feedback", 0)
    assert text.splitlines()[:3] == [
        "Function `solve`: MISSING",
        "Syntax error at line 1, column 14: expected ':'",
        "Tests: 0/4 passed",
    ]
    assert render_feedback(r, problem(), "passed") == "Not all levels passed."


@given(st.lists(st.integers(), max_size=12), st.integers(-12, 12))
def test_visible_cases_is_a_prefix_or_suffix(cases: list[int], n: int) -> None:
    shown = visible_cases(cases, n)
    if n == -1:
        assert shown == cases
    elif n >= 0:
        assert shown == cases[:n]
    else:
        assert shown == cases[n:]


def test_sandbox_slice_in_a_config_file(tmp_path: Path) -> None:
    from harness.reward import RewardConfigError

    good = tmp_path / "last.yaml"
    good.write_text("preset: binary\nfeedback: level_feedback\nsandbox_slice: last:2\n")
    assert load_reward_config(str(good)).sandbox_slice == "last:2"
    bad = tmp_path / "bad.yaml"
    bad.write_text("preset: binary\nsandbox_slice: middle:2\n")
    with pytest.raises(RewardConfigError, match=r"bad.yaml: sandbox_slice must be"):
        load_reward_config(str(bad))


AGENT_CODE = {
    "helper": "def aux(xs):\n    return sum(xs)\n",
    "main": "def solve(xs):\n    aux(xs)\n    return helper2(xs)\n",
}


def test_group_feedback(scored: dict) -> None:
    text = render_feedback({**scored, "agent_code": AGENT_CODE}, problem(), "group_feedback", 1)
    assert text.splitlines()[:7] == [
        "Team of 2 agent(s); what each one's code did:",
        "- Agent 1 (helper): defines `aux`",
        "- Agent 2 (main): defines `solve`",
        "The combined program:",
        "Syntax: OK",
        "Tests: 2/4 passed",
        "Warning: `solve` ignores the value `aux` returns.",
    ]
    assert text.endswith(f"Combined code:\n```python\n{PROGRAM.rstrip()}\n```")
    # a broken agent is named with its own syntax error; the status is the team's
    broken = {**scored, "agent_code": {"helper": "def aux(xs)\n  return 1", "main": ""}}
    lines = render_feedback(broken, problem(), "group_feedback", 1).splitlines()
    assert lines[1:3] == [
        "- Agent 1 (helper): a syntax error at line 1, column 12: expected ':'",
        "- Agent 2 (main): nothing (empty)",
    ]


def test_personal_feedback(scored: dict) -> None:
    r = {**scored, "agent_code": AGENT_CODE}
    assert render_feedback(r, problem(), "personal_feedback", "all", agent=0).splitlines() == [
        "You are agent 1 of 2 (helper).",
        "Your code: defines `aux`.",
        "Warning: `solve` ignores the value `aux` returns.",
        "The team's combined program:",
        "Syntax: OK",
        "Tests: 2/4 passed",
    ]
    main = render_feedback(r, problem(), "personal_feedback", "all", agent=1).splitlines()
    assert main[:3] == [
        "You are agent 2 of 2 (main).",
        "Your code: defines `solve`.",
        "Your `solve` is the entry point the tests call.",
    ]
    assert not any(line.startswith("- ") for line in main)  # no per-case diagnostics
    detailed = render_feedback(r, problem(), "personal_detailed_feedback", "all", agent=1)
    assert detailed.splitlines()[len(main) :] == [
        "- assert candidate([1]) == 1: NameError: Failed: candidate raised NameError: "
        "name 'helper2' is not defined",
        "- assert candidate([3]) == 3: AssertionError: assert 4 == 3",
        "Warning: `helper2` is used but never defined or imported.",
    ]
    with pytest.raises(ValueError, match="one agent"):
        render_feedback(r, problem(), "personal_feedback", 1)
    with pytest.raises(ValueError, match="0..1"):
        render_feedback(r, problem(), "personal_feedback", 1, agent=2)
    # a row without agent_code is one agent's: the completion
    alone = render_feedback(scored, problem(), "personal_feedback", 1, agent=0)
    assert alone.startswith("You are agent 1 of 1 (main).\nYour code: defines `aux`, `solve`.")


MODES = [
    ("level_feedback", None),
    ("level_passed", None),
    ("passed", None),
    ("plain", None),
    ("token_report", None),
    ("group_feedback", None),
    ("personal_feedback", 0),
    ("personal_feedback", 1),
    ("personal_detailed_feedback", 0),
    ("personal_detailed_feedback", 1),
]
EXPLAINS_FAILURES = ("level_feedback", "personal_detailed_feedback")


@given(
    st.lists(st.sampled_from(["passed", "failed", "timeout", "error"]), min_size=1, max_size=9),
    st.sampled_from([0, 1, 2, 5, -1, -2, -3, "all", "first:2", "last:1", "last:4"]),
)
def test_held_out_cases_never_appear_in_feedback(statuses: list[str], sandbox_slice) -> None:
    p = problem(n=len(statuses))
    messages = [f"assert marker_{i} == 0" if s != "passed" else "" for i, s in enumerate(statuses)]
    r = row(PROGRAM, statuses, messages, completion=PROGRAM, agent_code=AGENT_CODE)
    shown = {c["case_id"] for c in visible_cases(r["cases"], sandbox_slice)}
    for mode, agent in MODES:
        text = render_feedback(r, p, mode, sandbox_slice, agent=agent)
        for i, case in enumerate(r["cases"]):
            if case["case_id"] not in shown:
                assert f"marker_{i}" not in text and f"candidate([{i}])" not in text
            elif mode in EXPLAINS_FAILURES and case["status"] != "passed":
                assert f"marker_{i}" in text  # a visible failure is explained


@pytest.mark.parametrize("mode", FEEDBACK_MODES)
@pytest.mark.parametrize(
    "program", [PROGRAM, "def solve(xs)\n    return 1\n", "def other():\n    pass\n"]
)
def test_a_given_tree_gives_the_same_text_as_parsing_here(mode: str, program: str) -> None:
    """score_rows hands feedback the tree its analyzers parsed (one parse a row): the text is
    the one feedback gives parsing the program itself, in every mode, whether or not the mode
    reads the program's structure."""
    r = row(program, ["passed", "failed", "passed", "failed"], MESSAGES)
    r["completion"] = program
    agent = 0 if mode in PERSONAL_MODES else None
    alone = render_feedback(r, problem(), mode, "all", agent=agent)
    tree = parse_program(program)
    assert render_feedback(r, problem(), mode, "all", agent=agent, tree=tree) == alone


def test_score_rows_never_parses_only_to_hand_feedback_a_tree() -> None:
    """A subject's ``parsed_tree`` is the analyzers' parse or None, never a parse of its own:
    where the analyzers gave the structure (from their cache), feedback parses nothing."""
    from harness.analyzers.base import Subject

    subject = Subject({}, None, PROGRAM)
    assert subject.parsed_tree is None and subject._parse is None
    tree = subject.tree
    assert tree is not None and subject.parsed_tree is tree


@given(
    st.sampled_from(FEEDBACK_MODES),
    st.sampled_from(["binary", "code_levels", "weighted"]),
    st.sampled_from(
        [PROGRAM, "def solve(xs)\n    return 1\n", "def other():\n    pass\n", "x = (", ""]
    ),
    st.lists(st.sampled_from(["passed", "failed"]), min_size=4, max_size=4),
)
def test_the_feedbacks_own_reports_change_neither_its_text_nor_the_rows_analyzers(
    mode: str, preset: str, program: str, statuses: list[str]
) -> None:
    """score_rows runs the analyzers a feedback text reads beside the config's own (so that
    they are cached, and made ahead by the judging workers): the row still lists the config's
    analyzers alone, and the text is the one feedback gives working out its facts itself."""
    import dataclasses
    import tempfile

    from harness.reward import analyzers_read

    config = dataclasses.replace(load_reward_config(preset), feedback=mode)
    if mode in PERSONAL_MODES:
        config = dataclasses.replace(config, feedback="level_feedback")
    r = row(program, statuses, MESSAGES)
    r["completion"] = program
    p = problem()
    with tempfile.TemporaryDirectory() as folder:
        cache = AnalyzerCache(Path(folder) / "c.sqlite")
        timings: dict[str, float] = {}
        scored = score_rows([dict(r)], {p.task_id: p}, config, cache=cache, timings=timings)[0]
    assert set(scored["analyzers"]) == set(config.analyzers)
    assert set(timings) == set(analyzers_read(config))  # a fresh cache: every one ran here
    alone = {k: v for k, v in scored.items() if k != "feedback"}
    assert scored["feedback"] == render_feedback(alone, p, config.feedback, config.sandbox_slice)
