"""What each agent is asked to write, and how the agents' code becomes one program.

Function suites (HumanEval, CoopHumanEval, MBPP-shaped): with two agents the helper writes a
function ``aux`` and the main agent writes the entry point, which may call ``aux``; the joint
completion is ``aux code + main code``. With one agent it writes the entry point alone.

ClassEval: the class's methods are split among the agents (``round_robin`` or ``contiguous``),
or every agent sees the whole method list and picks its own (``take_a_job``); the joint
completion is the skeleton class with each method replaced by the first agent's version of it.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.completions import extract_code
from harness.language_hooks import hooks_for
from harness.records import Problem

HELPER = "aux"
CLASS_SUITES = ("classeval",)


@dataclass(frozen=True)
class Turn:
    """One earlier turn of an agent's branch: its code and the feedback on the joint program."""

    code: str
    feedback: str


def agent_names(suite: str, num_agents: int) -> list[str]:
    """Agent (and adapter) names: ``helper``/``main`` for two function agents, else agentN."""
    if suite not in CLASS_SUITES:
        if num_agents == 1:
            return ["main"]
        if num_agents == 2:
            return ["helper", "main"]
        raise ValueError(
            f"dataset.suite={suite}: function suites take 1 or 2 agents (helper aux + main), "
            f"got magrpo.num_agents={num_agents}"
        )
    return [f"agent{i}" for i in range(num_agents)]


def _history_text(history: Sequence[Turn]) -> str:
    parts = []
    for i, turn in enumerate(history, start=1):
        parts.append(
            f"Your code in attempt {i}:\n```python\n{turn.code.strip()}\n```\n"
            f"Feedback on the combined program:\n{turn.feedback.strip() or '(none)'}"
        )
    if not parts:
        return ""
    return "\n\n" + "\n\n".join(parts) + "\n\nRevise your code using this feedback."


# ---------------------------------------------------------------- function suites


def function_prompt(
    problem: Problem, agent: str, history: Sequence[Turn] = (), with_helper: bool = True
) -> str:
    """The task text for ``agent`` (``helper`` or ``main``) on a function problem."""
    roles = problem.metadata.get("roles") or [HELPER, problem.entry_point]
    helper_name = roles[0] if len(roles) > 1 else HELPER
    if agent == "helper":
        head = (
            f"You are the helper agent. Another agent will implement `{problem.entry_point}` "
            f"below and may call your helper. Write one Python helper function named "
            f"`{helper_name}` that does a useful part of the work. Reply with only the "
            f"`{helper_name}` function in a ```python block."
        )
    elif agent == "main":
        helper = (
            f" You may call a helper function `{helper_name}(...)` written by another agent."
            if with_helper
            else ""
        )
        language = hooks_for(problem)
        if language is not None:  # a stdio program (or another language): its instruction
            note = f"\n\n{helper.strip()}" if helper else ""
            return f"{language.instruction(problem.prompt)}{note}{_history_text(history)}"
        head = (
            f"Implement the Python function `{problem.entry_point}` below.{helper} Reply with "
            f"the complete function `{problem.entry_point}` in a ```python block."
        )
    else:
        raise ValueError(f"agent {agent!r}: function problems have agents helper and main")
    return f"{head}\n\n```python\n{problem.prompt.rstrip()}\n```{_history_text(history)}"


def function_joint(codes: Sequence[str]) -> str:
    """The joint completion: helper code (if any) followed by the main agent's code."""
    return "\n\n".join(c.strip("\n") for c in codes if c.strip()) + "\n"


# ---------------------------------------------------------------- class suites


def assign_methods(methods: Sequence[str], num_agents: int, strategy: str) -> list[list[str]]:
    """Which methods each agent writes (``take_a_job``: every agent gets the full list)."""
    if strategy == "round_robin":
        return [list(methods[i::num_agents]) for i in range(num_agents)]
    if strategy == "contiguous":
        size = -(-len(methods) // num_agents)
        return [list(methods[i * size : (i + 1) * size]) for i in range(num_agents)]
    if strategy == "take_a_job":
        return [list(methods) for _ in range(num_agents)]
    raise ValueError(f"split_strategy {strategy!r}: expected round_robin, contiguous, take_a_job")


def class_methods(problem: Problem) -> list[str]:
    """The method names the class must define (from the suite's metadata or the skeleton)."""
    names = [m["name"] for m in problem.metadata.get("methods", []) if m.get("name")]
    if names:
        return names
    try:
        tree = ast.parse(problem.prompt)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == problem.entry_point:
            return [
                n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"
            ]
    return []


def class_prompt(
    problem: Problem, methods: Sequence[str], strategy: str, history: Sequence[Turn] = ()
) -> str:
    """The task text for an agent that writes ``methods`` of a ClassEval class."""
    listing = ", ".join(f"`{m}`" for m in methods) or "(none)"
    if strategy == "take_a_job":
        head = (
            f"You are one of several agents implementing the class `{problem.entry_point}`. "
            f"Its methods are {listing}. Choose the methods you will implement (other agents "
            "take the rest) and reply with the class containing only your methods"
        )
    else:
        head = (
            f"You are one of several agents implementing the class `{problem.entry_point}`. "
            f"Implement only these methods: {listing}. Reply with the class containing "
            "`__init__` and your methods"
        )
    return (
        f"{head}, in a ```python block.\n\n```python\n{problem.prompt.rstrip()}\n```"
        f"{_history_text(history)}"
    )


def _class_node(code: str, name: str) -> ast.ClassDef | None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def class_joint(problem: Problem, codes: Sequence[str], assigned: Sequence[list[str]]) -> str:
    """The skeleton class with each method taken from the first agent that wrote it.

    An agent's ``__init__`` is used when the skeleton's has no body yet; imports from the
    skeleton and from every agent's code are kept at the top.
    """
    skeleton = ast.parse(problem.prompt)
    target = next(
        (n for n in skeleton.body if isinstance(n, ast.ClassDef) and n.name == problem.entry_point),
        None,
    )
    if target is None:
        return function_joint(codes)
    imports: list[str] = []
    chosen: dict[str, ast.stmt] = {}
    for code, methods in zip(codes, assigned, strict=True):
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            continue
        imports += [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        node = _class_node(code, problem.entry_point)
        if node is None:
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                allowed = item.name in methods or item.name == "__init__"
                if allowed and item.name not in chosen:
                    chosen[item.name] = item
    body = [chosen.pop(n.name, n) if isinstance(n, ast.FunctionDef) else n for n in target.body]
    target.body = body + [chosen[name] for name in chosen if name != "__init__"]
    head = [ast.unparse(n) for n in skeleton.body if isinstance(n, ast.Import | ast.ImportFrom)]
    rest = [ast.unparse(n) for n in skeleton.body if not isinstance(n, ast.Import | ast.ImportFrom)]
    unique = list(dict.fromkeys([*problem.metadata.get("import_statement", []), *head, *imports]))
    return "\n".join([*unique, "", *rest]) + "\n"


# ---------------------------------------------------------------- one interface


@dataclass
class Roles:
    """Prompts and joint completions for one suite and agent count."""

    suite: str
    names: list[str]
    strategy: str = "round_robin"

    @classmethod
    def for_suite(cls, suite: str, num_agents: int, strategy: str) -> Roles:
        return cls(suite, agent_names(suite, num_agents), strategy)

    @property
    def is_class(self) -> bool:
        return self.suite in CLASS_SUITES

    def assigned(self, problem: Problem) -> list[list[str]]:
        return assign_methods(class_methods(problem), len(self.names), self.strategy)

    def prompt(self, problem: Problem, agent: int, history: Sequence[Turn] = ()) -> str:
        if self.is_class:
            return class_prompt(problem, self.assigned(problem)[agent], self.strategy, history)
        return function_prompt(problem, self.names[agent], history, "helper" in self.names)

    def code(self, problem: Problem, agent: int, text: str) -> str:
        """The code in an agent's answer (its fenced block, else the text)."""
        helper = self.names[agent] == "helper"
        return extract_code(text, HELPER if helper else problem.entry_point)

    def row_extras(self, problem: Problem, codes: Sequence[str]) -> dict[str, Any]:
        """Keys the reward presets read from a multi-agent row (ClassEval's class_levels)."""
        if not self.is_class:
            return {}
        return {
            "agent_code": dict(zip(self.names, codes, strict=True)),
            "required_methods": class_methods(problem),
        }

    def joint(self, problem: Problem, codes: Sequence[str]) -> str:
        if self.is_class:
            return class_joint(problem, codes, self.assigned(problem))
        return function_joint(codes)
