"""Feedback text a model sees in its next turn, in one of the configured modes.

- ``plain``: the previous code and an instruction to revise it;
- ``passed``: whether all levels passed;
- ``level_passed``: binary signals: implementation found, syntax, tests, helper usage;
- ``level_feedback``: diagnostics: definitions FOUND/MISSING, the syntax error's line and
  column, tests passed/total, one line per failed visible case (its check, exception type and
  message), helper-usage warnings and names used but never defined;
- ``token_report``: tokens used against the limit (row keys ``tokens`` and ``max_tokens`` when
  the caller has them, else an estimate from the text), and whether the limit was hit;
- ``group_feedback``: what the team's joint code did: what each agent's code defines, the
  combined program's syntax and test count, helper-usage warnings, and the combined program;
- ``personal_feedback``: what this agent's own code did (``agent``: its index): what it
  defines or its syntax error, whether the team's program uses its functions, and the team's
  syntax and test count;
- ``personal_detailed_feedback``: ``personal_feedback`` plus per-case diagnostics (one line per
  failed visible case, as ``level_feedback`` gives them) and names used but never defined;
- ``none``: empty.

The team modes read each agent's code from the row's ``agent_code`` (``{agent: code}``, in
agent order, as the multi-agent trainers give it); without it the completion is one agent's.

``sandbox_slice`` chooses the cases feedback may reveal (held-out cases stay held out):
``N > 0`` the first N cases, ``0`` none, ``-1`` or ``"all"`` all (the trainers' convention),
``-N`` (N >= 2) or ``"last:N"`` the last N, ``"first:N"`` the first N.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.analyzers.outcomes import exception_type, summarize_cases
from harness.analyzers.structure import structure_report
from harness.analyzers.syntax import check_syntax
from harness.program_ast import parse_program
from harness.records import Problem

TOKEN_RE = re.compile(r"\w+|[^\w\s]")
# Every mode render_feedback renders: the one list (reward configs and the trainers read it).
FEEDBACK_MODES: tuple[str, ...] = (
    "none",
    "plain",
    "passed",
    "level_passed",
    "level_feedback",
    "token_report",
    "group_feedback",
    "personal_feedback",
    "personal_detailed_feedback",
)
PERSONAL_MODES = ("personal_feedback", "personal_detailed_feedback")
TEAM_MODES = ("group_feedback", *PERSONAL_MODES)
# The modes a reward config can name: one text per row (a personal mode needs the agent).
ROW_FEEDBACK_MODES: tuple[str, ...] = tuple(m for m in FEEDBACK_MODES if m not in PERSONAL_MODES)
# The static reports a text of these modes reads (:func:`_facts`): a caller that has them
# from the analyzers (cached, or made by the judging workers) saves a parse and a walk a row.
FACT_ANALYZERS: tuple[str, ...] = ("syntax", "structure")
FACT_FREE_MODES = ("none", "", "plain", "token_report")
MAX_COMBINED_CHARS = 1500  # the combined program goes last and is cut: the status stays visible


def visible_cases(cases: Sequence[Any], sandbox_slice: int | str | None) -> list[Any]:
    """The cases feedback may reveal (see the module docstring)."""
    cases = list(cases)
    if sandbox_slice is None or sandbox_slice == "all" or sandbox_slice == -1:
        return cases
    if isinstance(sandbox_slice, str):
        side, _, count = sandbox_slice.partition(":")
        if side not in ("first", "last") or not count.isdigit():
            raise ValueError(f"sandbox_slice {sandbox_slice!r}: expected N, all, first:N, last:N")
        n = int(count)
        return cases[:n] if side == "first" else cases[len(cases) - n :] if n else []
    if sandbox_slice >= 0:
        return cases[:sandbox_slice]
    return cases[sandbox_slice:]


def render_feedback(
    row: Mapping[str, Any],
    problem: Problem | None,
    mode: str = "level_feedback",
    sandbox_slice: int | str | None = 1,
    agent: int | None = None,
    tree: ast.Module | None = None,
) -> str:
    """The feedback text of ``row`` (a scored result row) in ``mode``; the personal modes need
    ``agent``, the index of the agent the text is for. ``tree``: the row's program parsed,
    where the caller has it (None: parsed here if the text needs its structure)."""
    if mode in ("none", "", None):
        return ""
    if mode == "plain":
        return (
            f"Your previous code:\n```python\n{str(row.get('completion') or '').rstrip()}\n```\n"
            "Revise it so that it is correct and complete."
        )
    if mode == "token_report":
        return _token_report(row)
    facts = _facts(row, problem, tree)
    if mode == "passed":
        return "All levels passed." if facts["all_passed"] else "Not all levels passed."
    if mode == "level_passed":
        return "\n".join(_level_passed(facts))
    if mode == "level_feedback":
        return "\n".join(_level_feedback(facts, row, problem, sandbox_slice))
    if mode == "group_feedback":
        return "\n".join(_group_feedback(facts, row))
    if mode in PERSONAL_MODES:
        detailed = mode == "personal_detailed_feedback"
        return "\n".join(_personal_feedback(facts, row, problem, sandbox_slice, agent, detailed))
    raise ValueError(f"feedback mode {mode!r}: expected one of {', '.join(FEEDBACK_MODES)}")


def feedback_analyzers(mode: str | None) -> tuple[str, ...]:
    """The analyzers whose reports a text in ``mode`` reads (none for the modes without
    facts)."""
    return () if mode in FACT_FREE_MODES or mode is None else FACT_ANALYZERS


def _program_of(row: Mapping[str, Any], problem: Problem | None) -> str:
    program = str(row.get("program") or "")
    if not program and problem is not None:
        program = problem.prompt + str(row.get("completion") or "")
    return program


def _facts(
    row: Mapping[str, Any], problem: Problem | None, tree: ast.Module | None = None
) -> dict[str, Any]:
    """Syntax, structure and tests, from the row's analyzers or computed here (cheap)."""
    analyzers = row.get("analyzers") or {}
    program = _program_of(row, problem)
    syntax = analyzers.get("syntax")
    if not syntax or "ok" not in syntax:
        syntax = dict(check_syntax(program))
    structure = analyzers.get("structure")
    if not structure or "parses" not in structure:
        structure = dict(structure_report(tree or parse_program(program), problem))
    tests = analyzers.get("tests")
    if not tests or "total" not in tests:
        tests = dict(summarize_cases(row.get("cases") or []))
    functions = structure.get("functions") or {}
    entry = structure.get("entry_point") or (problem.entry_point if problem else "")
    helpers = [name for name in functions if name != entry]
    all_passed = bool(syntax.get("ok")) and tests["total"] > 0 and tests["passed"] == tests["total"]
    return {
        "syntax": syntax,
        "structure": structure,
        "tests": tests,
        "entry": entry,
        "functions": functions,
        "helpers": helpers,
        "all_passed": all_passed and bool(structure.get("entry_defined")),
    }


def _helper_warnings(facts: Mapping[str, Any]) -> list[str]:
    functions, entry = facts["functions"], facts["entry"]
    main = functions.get(entry)
    if main is None:
        return []
    warnings = []
    for helper in facts["helpers"]:
        if helper not in main["calls"]:
            warnings.append(f"Warning: `{entry}` does not call the helper `{helper}`.")
            continue
        if helper in main["ignored_calls"]:
            warnings.append(f"Warning: `{entry}` ignores the value `{helper}` returns.")
        if main.get("wrapper_of") == helper:
            warnings.append(f"Warning: `{entry}` only wraps `{helper}`; do real work in it.")
    return warnings


def _level_passed(facts: Mapping[str, Any]) -> list[str]:
    structure, tests = facts["structure"], facts["tests"]
    lines = [
        f"Implementation found: {'yes' if structure.get('entry_defined') else 'no'}",
        f"Syntax correct: {'yes' if facts['syntax'].get('ok') else 'no'}",
        f"All tests passed: {'yes' if facts['all_passed'] else 'no'}"
        f" ({'some' if tests['passed'] else 'none'} passed)",
    ]
    if facts["helpers"]:
        lines.append(f"Helper used well: {'no' if _helper_warnings(facts) else 'yes'}")
    return lines


def _level_feedback(
    facts: Mapping[str, Any],
    row: Mapping[str, Any],
    problem: Problem | None,
    sandbox_slice: int | str | None,
) -> list[str]:
    structure, tests, syntax = facts["structure"], facts["tests"], facts["syntax"]
    lines = []
    if structure.get("is_class"):
        found = "FOUND" if structure.get("entry_defined") else "MISSING"
        lines.append(f"Class `{facts['entry']}`: {found}")
        implemented = set(structure.get("methods_implemented") or [])
        for method in structure.get("methods_required") or []:
            lines.append(f"Method `{method}`: {'FOUND' if method in implemented else 'MISSING'}")
    else:
        found = "FOUND" if structure.get("entry_defined") else "MISSING"
        lines.append(f"Function `{facts['entry']}`: {found}")
        for helper in facts["helpers"]:
            lines.append(f"Helper `{helper}`: FOUND")
    if syntax.get("ok"):
        lines.append("Syntax: OK")
    else:
        lines.append(
            f"Syntax error at line {syntax.get('line')}, column {syntax.get('col')}: "
            f"{syntax.get('message')}"
        )
    lines.append(f"Tests: {tests['passed']}/{tests['total']} passed")
    lines += _failed_case_lines(row, problem, sandbox_slice)
    lines += _helper_warnings(facts)
    lines += _undefined_warnings(facts)
    return lines


def _failed_case_lines(
    row: Mapping[str, Any], problem: Problem | None, sandbox_slice: int | str | None
) -> list[str]:
    """One line per failed case that ``sandbox_slice`` lets the feedback show."""
    sources = {c.case_id: c.source for c in problem.cases} if problem is not None else {}
    lines = []
    for case in visible_cases(row.get("cases") or [], sandbox_slice):
        if case.get("status") == "passed":
            continue
        check = " ".join(str(sources.get(case.get("case_id"), case.get("case_id"))).split())
        kind = exception_type(case) or case.get("status")
        message = " ".join(str(case.get("message") or "").split())[:200]
        lines.append(f"- {check[:200]}: {kind}: {message}" if message else f"- {check}: {kind}")
    return lines


def _undefined_warnings(facts: Mapping[str, Any]) -> list[str]:
    names = facts["structure"].get("undefined_names") or []
    return [f"Warning: `{name}` is used but never defined or imported." for name in names]


# ---------------------------------------------------------------- team modes


def _agent_codes(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(agent, code)`` pairs in agent order; a row without ``agent_code`` is one agent's."""
    codes = row.get("agent_code")
    if isinstance(codes, Mapping) and codes:
        return [(str(name), str(code or "")) for name, code in codes.items()]
    return [("main", str(row.get("completion") or ""))]


def _definitions(code: str) -> list[str] | None:
    """Functions and ``Class.method`` names the code defines (``None``: it does not parse)."""
    tree = parse_program(code)
    if tree is None:
        return None
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names += [
                f"{node.name}.{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    return names


def _describe(code: str) -> str:
    """What one agent's code defines, or its syntax error."""
    names = _definitions(code)
    if names is None:
        syntax = check_syntax(code)
        return (
            f"a syntax error at line {syntax.get('line')}, column {syntax.get('col')}: "
            f"{syntax.get('message')}"
        )
    if not names:
        return "no function or method" if code.strip() else "nothing (empty)"
    return "defines " + ", ".join(f"`{n}`" for n in names)


def _team_status(facts: Mapping[str, Any]) -> list[str]:
    syntax, tests = facts["syntax"], facts["tests"]
    lines = [
        "Syntax: OK"
        if syntax.get("ok")
        else f"Syntax error at line {syntax.get('line')}, column {syntax.get('col')}: "
        f"{syntax.get('message')}",
        f"Tests: {tests['passed']}/{tests['total']} passed",
    ]
    missing = facts["structure"].get("methods_missing") or []
    if missing:
        lines.append("Methods missing from the class: " + ", ".join(f"`{m}`" for m in missing))
    return lines


def _group_feedback(facts: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    agents = _agent_codes(row)
    lines = [f"Team of {len(agents)} agent(s); what each one's code did:"]
    for i, (name, code) in enumerate(agents, start=1):
        lines.append(f"- Agent {i} ({name}): {_describe(code)}")
    lines.append("The combined program:")
    lines += _team_status(facts)
    lines += _helper_warnings(facts)
    combined = str(row.get("completion") or "").strip() or "\n\n".join(c for _, c in agents)
    if len(combined) > MAX_COMBINED_CHARS:
        combined = combined[:MAX_COMBINED_CHARS] + "\n# ... (cut)"
    lines += ["Combined code:", f"```python\n{combined.rstrip()}\n```"]
    return lines


def _personal_feedback(
    facts: Mapping[str, Any],
    row: Mapping[str, Any],
    problem: Problem | None,
    sandbox_slice: int | str | None,
    agent: int | None,
    detailed: bool,
) -> list[str]:
    agents = _agent_codes(row)
    if agent is None or not 0 <= agent < len(agents):
        raise ValueError(
            f"personal feedback is for one agent: agent={agent!r} is not in 0..{len(agents) - 1}"
        )
    name, code = agents[agent]
    lines = [
        f"You are agent {agent + 1} of {len(agents)} ({name}).",
        f"Your code: {_describe(code)}.",
    ]
    mine = set(_definitions(code) or [])
    entry = facts["entry"]
    if entry in mine:
        lines.append(f"Your `{entry}` is the entry point the tests call.")
        lines += _helper_warnings(facts)  # how your entry point uses the helpers
    # how the entry point uses this agent's own helpers
    for helper in facts["helpers"]:
        if helper in mine and entry not in mine:
            warned = [w for w in _helper_warnings(facts) if f"`{helper}`" in w]
            lines += warned or [f"`{entry}` uses your `{helper}`."]
    lines.append("The team's combined program:")
    lines += _team_status(facts)
    if detailed:
        lines += _failed_case_lines(row, problem, sandbox_slice)
        lines += _undefined_warnings(facts)
    return lines


def _token_report(row: Mapping[str, Any]) -> str:
    text = str(row.get("raw") or row.get("completion") or "")
    used = row.get("tokens")
    estimate = used is None
    if used is None:
        used = len(TOKEN_RE.findall(text))
    limit = row.get("max_tokens")
    prefix = "about " if estimate else ""
    if limit is None:
        return f"Tokens used: {prefix}{used} (limit unknown)."
    hit = int(used) >= int(limit)
    verdict = "hit the limit: the answer was cut off" if hit else "within the limit"
    return f"Tokens used: {prefix}{used} of {limit} ({verdict})."
