"""hallucination (critical): names the completion takes from imported modules that do not exist.

The program is parsed (never run) to find what it imports and the attribute chains it uses on
those imports (``np.linalg.normm``, ``from os import pathh``). Whether each exists is asked of
the real installed module, imported in a child of the harness's sandbox (its limits, no
network), never in this process: the sandbox runs a small trusted probe that imports the
module, walks the chain and sends back the names that do exist where the chain breaks. The
message gives the closest real names (difflib's ratio, as Python's own "Did you mean" does).
"""

from __future__ import annotations

import ast
import difflib
import threading
from collections.abc import Sequence
from typing import Any

from harness.coder.analyzers.base import AnalyzerResult, AnalyzerType, Completion, syntax_failure

PROBE = """
def __codeeval_attrs__(specs):
    import importlib
    out = []
    for module, chain in specs:
        try:
            obj = importlib.import_module(module)
        except Exception as exc:
            out.append({"missing": 0, "names": [], "error": type(exc).__name__})
            continue
        path, result = module, {"missing": -1, "names": []}
        for index, attr in enumerate(chain):
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            else:
                try:  # a submodule that nothing imported yet
                    obj = importlib.import_module(path + "." + attr)
                except Exception:
                    names = [n for n in dir(obj) if not n.startswith("__")]
                    result = {"missing": index + 1, "names": names}
                    break
            path = path + "." + attr
        out.append(result)
    return out
"""

_known: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}  # installed modules do not change
_known_lock = threading.Lock()


class HallucinationAnalyzer:
    name = "hallucination"
    type: AnalyzerType = "critical"
    in_process = True  # parses with ``ast`` (the probe itself runs in the sandbox)

    def analyze(self, candidates: Sequence[Completion]) -> list[AnalyzerResult]:
        uses: list[list[tuple[str, tuple[str, ...], str, int]] | None] = []
        for candidate in candidates:
            tree = candidate.tree()
            uses.append(None if tree is None else module_uses(tree, candidate.first_line))
        wanted = {(m, chain) for found in uses if found for m, chain, _, _ in found}
        answers = probe_modules(sorted(wanted))
        results = []
        for candidate, found in zip(candidates, uses, strict=True):
            if found is None:
                results.append(syntax_failure(self.name, self.type, candidate))
                continue
            problems = _hallucinated(found, answers)
            if not problems:
                results.append(AnalyzerResult(self.name, self.type, 0.0, True, "", {"names": []}))
                continue
            lines = []
            for item in problems:
                hint = (
                    " Did you mean: " + ", ".join(item["closest"]) + "?" if item["closest"] else ""
                )
                lines.append(f"- `{item['name']}` (line {item['line']}) does not exist.{hint}")
            message = "The completion uses names that do not exist:\n" + "\n".join(lines)
            results.append(
                AnalyzerResult(
                    self.name, self.type, -float(len(problems)), False, message, {"names": problems}
                )
            )
        return results


def module_uses(
    tree: ast.Module, first_line: int = 1
) -> list[tuple[str, tuple[str, ...], str, int]]:
    """``(module, attribute chain, the name as written, line)`` for each use of an import on or
    after ``first_line``: ``from m import x`` is ``(m, (x,))``, ``alias.a.b`` is ``(m, (a, b))``."""
    aliases, uses = _imports(tree, first_line)
    return uses + _attribute_uses(tree, aliases, first_line)


Use = tuple[str, tuple[str, ...], str, int]  # module, attribute chain, name as written, line
Aliases = dict[str, tuple[str, tuple[str, ...]]]  # bound name -> (module, attribute chain)


def _imports(tree: ast.Module, first_line: int) -> tuple[Aliases, list[Use]]:
    """The names the imports bind, and the imports themselves as uses."""
    aliases: Aliases = {}
    uses: list[Use] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = (alias.name, ())
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = (top, ())
                if node.lineno >= first_line:
                    uses.append((alias.name, (), alias.name, node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name == "*":
                    continue
                aliases[alias.asname or alias.name] = (node.module, (alias.name,))
                if node.lineno >= first_line:
                    text = f"{node.module}.{alias.name}"
                    uses.append((node.module, (alias.name,), text, node.lineno))
    return aliases, uses


def _attribute_uses(tree: ast.Module, aliases: Aliases, first_line: int) -> list[Use]:
    """Attribute chains over imported names, outermost first so ``a.b.c`` is one use, not
    three."""
    uses: list[Use] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        chain: list[str] = []
        current: ast.expr = node
        while isinstance(current, ast.Attribute):
            inner.add(id(current))
            chain.append(current.attr)
            current = current.value
        if not isinstance(current, ast.Name) or current.id not in aliases:
            continue
        if node.lineno < first_line or _rebound(tree, current.id):
            continue
        module, prefix = aliases[current.id]
        text = ".".join([current.id, *reversed(chain)])
        uses.append((module, prefix + tuple(reversed(chain)), text, node.lineno))
    return uses


def _rebound(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is also assigned or defined in the program (then it may not be the
    module any more, and attributes of it are not judged)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.arg)):
            if getattr(node, "name", getattr(node, "arg", None)) == name:
                return True
    return False


def probe_modules(
    specs: Sequence[tuple[str, tuple[str, ...]]],
) -> dict[tuple[str, tuple[str, ...]], dict[str, Any]]:
    """What exists: per ``(module, chain)``, where it breaks (``missing``: -1 when it does not,
    0 when the module does not import, else the 1-based index of the missing attribute) and the
    real names at that point. Imports happen in a sandbox child, one child per batch."""
    with _known_lock:
        todo = [s for s in specs if s not in _known]
    if todo:
        from harness.sandbox import CaseRequest, SampleRequest, SandboxSettings
        from harness.sandbox.probe import check_sandbox
        from harness.sandbox.shared import shared_sandbox

        settings = SandboxSettings()
        check_sandbox(settings)
        request = SampleRequest(
            program=PROBE,
            entry_point="__codeeval_attrs__",
            cases=(
                CaseRequest(
                    "attrs",
                    "compare",
                    calls=(f"candidate({[list(s) for s in todo]!r})",),
                    timeout_s=30.0,
                ),
            ),  # fmt: skip
            budget_s=60.0,
        )
        execution = shared_sandbox(settings).run(request)
        case = execution.cases.get("attrs")
        if case is None or case.status != "ok" or not case.values:
            why = execution.infra_error or (case and (case.message or case.status)) or "no reply"
            raise RuntimeError(f"the module probe failed in the sandbox: {why}")
        with _known_lock:
            for spec, answer in zip(todo, case.values[0], strict=True):
                _known[spec] = dict(answer)
    with _known_lock:
        return {s: _known[s] for s in specs}


def _hallucinated(
    uses: list[tuple[str, tuple[str, ...], str, int]],
    answers: dict[tuple[str, tuple[str, ...]], dict[str, Any]],
) -> list[dict[str, Any]]:
    seen: set[str] = set()
    problems = []
    for module, chain, text, line in uses:
        answer = answers[(module, chain)]
        missing = int(answer["missing"])
        if missing < 0:
            continue
        if missing == 0:
            name, closest = module, []
        else:
            name = ".".join([module, *chain[:missing]])
            if text.count(".") >= len(chain):  # written through an alias: show it as written
                parts = text.split(".")
                name = ".".join(parts[: len(parts) - len(chain) + missing])
            closest = difflib.get_close_matches(chain[missing - 1], answer["names"], n=3)
        if name in seen:
            continue
        seen.add(name)
        problems.append({"name": name, "line": line, "closest": closest})
    return sorted(problems, key=lambda p: p["line"])
