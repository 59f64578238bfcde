"""signature (critical): calls in the completion whose arguments do not fit the callee.

Each call the completion makes is resolved with jedi, which reads the callee's source or its
typeshed stub (functions of the program itself, of the standard library, of installed
modules) without running the program. A call fits when its positional and keyword arguments
bind to one of the callee's signatures (any overload will do). Calls with ``*args`` or
``**kwargs`` at the call site, and callees jedi cannot resolve, are not judged. The message
names the call and gives the signature, so the model can fix its arguments.
"""

from __future__ import annotations

import ast
import inspect
import threading
from collections.abc import Sequence
from typing import Any

from harness.coder.analyzers.base import AnalyzerResult, AnalyzerType, Completion, syntax_failure

_JEDI_LOCK = threading.Lock()  # jedi keeps global caches and is not thread-safe
_FILLER = object()


class SignatureAnalyzer:
    name = "signature"
    type: AnalyzerType = "critical"
    in_process = True

    def analyze(self, candidates: Sequence[Completion]) -> list[AnalyzerResult]:
        return [self._one(c) for c in candidates]

    def _one(self, candidate: Completion) -> AnalyzerResult:
        tree = candidate.tree()
        if tree is None:
            return syntax_failure(self.name, self.type, candidate)
        mismatches = call_mismatches(candidate.program, tree, candidate.first_line)
        if not mismatches:
            return AnalyzerResult(self.name, self.type, 0.0, True, "", {"mismatches": []})
        lines = [
            f"- `{m['call']}` (line {m['line']}): {m['error']}\n  the signature is: "
            + "\n  or: ".join(m["signatures"])
            for m in mismatches
        ]
        message = "These calls do not fit the signatures of their callees:\n" + "\n".join(lines)
        return AnalyzerResult(
            self.name,
            self.type,
            -float(len(mismatches)),
            False,
            message,
            {"mismatches": mismatches},
        )


def call_mismatches(program: str, tree: ast.Module, first_line: int = 1) -> list[dict[str, Any]]:
    """Every call on or after ``first_line`` whose arguments fit none of the callee's signatures."""
    import jedi

    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and node.lineno >= first_line
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and all(k.arg is not None for k in node.keywords)
    ]
    with _JEDI_LOCK:
        script = jedi.Script(program)
        found = [
            _mismatch(script, call)
            for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset))
        ]
    return [m for m in found if m is not None]


def _mismatch(script: Any, call: ast.Call) -> dict[str, Any] | None:
    """The mismatch of one call, or None: it fits a signature, or jedi knows none."""
    line, column = _name_position(call.func)
    try:
        names = script.infer(line, column)
    except Exception:  # jedi has internal errors on odd code: not the model's fault
        return None
    signatures = [s for n in names for s in n.get_signatures()]
    if not signatures:
        return None
    keywords = [k.arg for k in call.keywords if k.arg]
    errors = [_bind_error(s, len(call.args), keywords) for s in signatures]
    if any(e is None for e in errors):
        return None
    return {
        "call": _short(ast.unparse(call)),
        "callee": names[0].full_name or names[0].name,
        "line": call.lineno,
        "error": errors[0],
        "signatures": list(dict.fromkeys(s.to_string() for s in signatures)),
    }


def _name_position(func: ast.expr) -> tuple[int, int]:
    """Where jedi should look: on the last name of the callee expression (``b`` in ``a.b(...)``)."""
    assert func.end_lineno is not None and func.end_col_offset is not None
    return func.end_lineno, max(func.end_col_offset - 1, 0)


def _bind_error(signature: Any, positional: int, keywords: list[str]) -> str | None:
    """None when ``positional`` arguments and ``keywords`` bind to the signature, else why not."""
    params = []
    for param in signature.params:
        text = param.to_string()
        # jedi writes ``name: annotation=default``; a default follows the annotation
        has_default = "=" in text.split(":", 1)[-1] if ":" in text else "=" in text
        kind = param.kind
        default = None if has_default and kind not in _VARIADIC else inspect.Parameter.empty
        try:
            params.append(inspect.Parameter(param.name, kind, default=default))
        except ValueError:  # a name jedi made up for an unnamed parameter
            return None
    try:
        bound = inspect.Signature(params)
    except ValueError:  # parameters out of order (a stub quirk): do not judge the call
        return None
    try:
        bound.bind(*([_FILLER] * positional), **dict.fromkeys(keywords, _FILLER))
    except TypeError as exc:
        return str(exc)
    return None


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _short(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
