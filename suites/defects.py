"""Static checks for data defects in benchmark records.

A defect found here is listed in ``Problem.defects``; the harness then reports the problem as a
data error instead of blaming a model for it.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Collection, Iterable


def parse_error(code: str, what: str) -> str | None:
    """A defect message when ``code`` is not valid Python, else ``None``."""
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return f"{what} does not parse: line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError) as exc:
        return f"{what} does not parse: {exc}"
    return None


def imported_modules(code: str) -> list[str]:
    """Top-level module names that ``code`` imports (absolute imports only), in order."""
    if "import" not in code:  # most checks import nothing: no parse needed
        return []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in found:
                found.append(top)
    return found


def missing_modules(sources: Iterable[str]) -> list[str]:
    """Modules imported by any of ``sources`` that this interpreter cannot import."""
    missing: list[str] = []
    for code in sources:
        for name in imported_modules(code):
            if name in missing or name in sys.builtin_module_names:
                continue
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            if spec is None:
                missing.append(name)
    return missing


def missing_module_defects(
    sources: Iterable[str], what: str, allowed: Collection[str] = ()
) -> list[str]:
    """A defect per module ``sources`` import that is not installed; modules on the problem's
    allow-list (``allowed``) are left to harness.deps.resolve (fetched or not)."""
    return [
        f"{what} need module {name!r}, which is not installed"
        for name in missing_modules(sources)
        if name not in allowed
    ]
