"""structure: what the program defines and how its functions use each other.

- the entry point (a function, or a class for class problems) is defined, with a signature
  that accepts the prompt's positional arguments;
- names used but never defined, imported or built in (LLMcoder's "hallucination" check);
- per top-level function: whether it returns a value, what it calls, which calls' results it
  ignores, and whether it is a thin wrapper of another function (``code_levels`` reads these
  for the ``aux`` helper and the main function);
- for class problems: methods required (from the suite's metadata or the skeleton),
  implemented (a real body, not ``pass``/``...``/a docstring) and missing.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from typing import TypedDict

from harness.analyzers.base import Report, Subject
from harness.program_ast import parse_program
from harness.records import Problem

BUILTIN_NAMES = frozenset(dir(builtins)) | {"__name__", "__file__", "__doc__", "__builtins__"}


class FunctionInfo(TypedDict):
    line: int
    params: list[str]
    has_return: bool
    calls: list[str]
    ignored_calls: list[str]
    wrapper_of: str | None


class StructureReport(TypedDict, total=False):
    parses: bool
    entry_point: str
    entry_defined: bool
    signature_ok: bool | None
    undefined_names: list[str]
    functions: dict[str, FunctionInfo]
    helpers_called: dict[str, bool]
    is_class: bool
    methods_required: list[str]
    methods_implemented: list[str]
    methods_missing: list[str]


class StructureAnalyzer:
    name = "structure"
    version = "2"  # 2: programs too long or too deep to analyze are not read
    static = True
    per_program = True  # a parse and a walk: the same cost alone or in a batch

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]:
        return [dict(structure_report(s.tree, s.problem)) for s in subjects]


def structure_report(tree: ast.Module | None, problem: Problem | None) -> StructureReport:
    entry, required, is_class = _entry(problem)
    if tree is None:
        return {"parses": False, "entry_point": entry, "entry_defined": False, "is_class": is_class}
    functions = {
        node.name: function_info(node)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    report: StructureReport = {
        "parses": True,
        "entry_point": entry,
        "undefined_names": undefined_names(tree),
        "functions": functions,
        "helpers_called": {
            name: any(name in info["calls"] for f, info in functions.items() if f != name)
            for name in functions
            if name != entry
        },
        "is_class": is_class,
    }
    if is_class:
        report.update(_class_entry(tree, entry, required))
    else:
        report["entry_defined"] = entry in functions
        report["signature_ok"] = _signature_ok(tree, problem) if entry in functions else None
    return report


def _class_entry(tree: ast.Module, entry: str, required: list[str]) -> StructureReport:
    """A class problem's part of the report: the class, and which required methods it has."""
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == entry), None)
    implemented = [] if cls is None else implemented_methods(cls)
    return {
        "entry_defined": cls is not None,
        "signature_ok": None,
        "methods_required": required,
        "methods_implemented": [m for m in required if m in implemented],
        "methods_missing": [m for m in required if m not in implemented],
    }


def _entry(problem: Problem | None) -> tuple[str, list[str], bool]:
    """The entry point's name, the methods a class problem requires, and whether it is one."""
    if problem is None:
        return "", [], False
    required = required_methods(problem)
    return problem.entry_point, required, bool(required) or problem.suite == "classeval"


def required_methods(problem: Problem) -> list[str]:
    """The methods a class problem asks for: the suite's metadata, else the skeleton's."""
    names = [m["name"] for m in problem.metadata.get("methods", []) if m.get("name")]
    if names:
        return names
    try:
        tree = ast.parse(problem.prompt)
    except (SyntaxError, ValueError):
        return []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == problem.entry_point:
            return [
                n.name
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name != "__init__"
            ]
    return []


def implemented_methods(cls: ast.ClassDef) -> list[str]:
    return [
        n.name
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not is_stub(n.body)
    ]


def is_stub(body: Sequence[ast.stmt]) -> bool:
    """Only a docstring, ``pass``, ``...`` or ``raise NotImplementedError``."""
    for stmt in body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring or ...
        if isinstance(stmt, ast.Raise) and "NotImplementedError" in ast.unparse(stmt):
            continue
        return False
    return True


def function_info(node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionInfo:
    calls: list[str] = []
    ignored: list[str] = []
    has_return = False
    for child in ast.walk(node):
        if isinstance(child, ast.Return) and child.value is not None:
            has_return = True
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            calls.append(child.func.id)
        if (
            isinstance(child, ast.Expr)
            and isinstance(child.value, ast.Call)
            and isinstance(child.value.func, ast.Name)
        ):
            ignored.append(child.value.func.id)
    args = node.args
    return {
        "line": node.lineno,
        "params": [a.arg for a in [*args.posonlyargs, *args.args]],
        "has_return": has_return,
        "calls": sorted(set(calls)),
        "ignored_calls": sorted(set(ignored)),
        "wrapper_of": wrapper_of(node),
    }


def wrapper_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """``f`` when the body is only ``return f(...)`` or ``x = f(...); return x``."""
    body = [
        s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    if len(body) == 1 and isinstance(body[0], ast.Return):
        value = body[0].value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            return value.func.id
    if len(body) == 2 and isinstance(body[0], ast.Assign) and isinstance(body[1], ast.Return):
        first, ret = body[0], body[1]
        if (
            len(first.targets) == 1
            and isinstance(first.targets[0], ast.Name)
            and isinstance(first.value, ast.Call)
            and isinstance(first.value.func, ast.Name)
            and isinstance(ret.value, ast.Name)
            and ret.value.id == first.targets[0].id
        ):
            return first.value.func.id
    return None


def undefined_names(tree: ast.Module) -> list[str]:
    """Names read somewhere but bound nowhere in the module (scopes merged: a coarse check
    that never flags a defined name, and catches invented helpers and missing imports)."""
    bound: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            if node.name == "*":
                return []  # a star import can bind anything
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return sorted(loaded - bound - BUILTIN_NAMES)


def _signature_ok(tree: ast.Module, problem: Problem | None) -> bool | None:
    """The candidate accepts as many positional arguments as the prompt's signature has."""
    if problem is None:
        return None
    try:
        prompt_tree = ast.parse(problem.prompt)
    except (SyntaxError, ValueError):
        return None
    wanted = _find_function(prompt_tree, problem.entry_point)
    got = _find_function(tree, problem.entry_point)
    if wanted is None or got is None:
        return None
    n = len(wanted.args.posonlyargs) + len(wanted.args.args)
    positional = len(got.args.posonlyargs) + len(got.args.args)
    required = positional - len(got.args.defaults)
    return required <= n and (n <= positional or got.args.vararg is not None)


def entry_function(sources: Sequence[str], name: str) -> ast.FunctionDef | None:
    """The top-level ``def name`` of the first of ``sources`` that parses and defines it
    (a source that does not parse is passed over)."""
    for text in sources:
        module = parse_program(text)
        if module is None:
            continue
        for node in module.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
    return None


def _find_function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            found = node
    return found
