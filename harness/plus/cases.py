"""Plus inputs → compare cases a person can read: literal input, literal expected value.

A plus case is an ordinary ``compare`` :class:`~harness.records.CheckCase`: the sandbox
evaluates ``candidate(<input>)`` and the trusted process checks the value against the
reference's answer, written out as a literal. Floats compare with a tolerance (relative and
absolute 1e-6, as HumanEval's own float checks do), elsewhere ``==``. Only values whose
``repr`` is a Python literal that evaluates back to an equal value of the same type can be an
expected value; anything else (an iterator, an array, an object) leaves the input out.

Plus cases are told apart by their id: ``plus_0``, ``plus_1``, ... (:func:`is_plus`);
``plus_gen_0``, ... where the problem has plus cases of its own (EvalPlus's suites).
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

from harness.records import CheckCase

PREFIX = "plus_"
# Generated cases of a problem that has plus cases of its own (EvalPlus's ``plus_<i>``): still
# plus cases (``is_plus``), with ids that never collide.
GENERATED_PREFIX = "plus_gen_"
MAX_LITERAL = 600  # characters of an input or expected value shown in a generated test
TOLERANCE = 1e-6
_LITERAL_TYPES = (type(None), bool, int, float, str, list, tuple, dict, set)


def is_plus(case_id: str) -> bool:
    """Whether a case id names a generated plus case."""
    return case_id.startswith(PREFIX)


def literal(value: Any) -> str | None:
    """``repr(value)`` when it is a short Python literal that reads back as the same value."""
    if not _plain(value, 0):
        return None
    text = repr(value)
    if len(text) > MAX_LITERAL:
        return None
    if isinstance(value, set) and not value:
        return "set()"
    try:
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return text if back == value and type(back) is type(value) else None


def _plain(value: Any, depth: int) -> bool:
    if depth > 20 or type(value) not in _LITERAL_TYPES:
        return False
    if type(value) is float:
        return math.isfinite(value)
    if type(value) in (list, tuple, set):
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return True


def has_float(value: Any) -> bool:
    if type(value) is float:
        return True
    if type(value) in (list, tuple, set):
        return any(has_float(v) for v in value)
    if type(value) is dict:
        return any(has_float(v) for v in value.values())
    return False


def check_expression(expected: Any, expected_text: str) -> str:
    """The trusted check over ``v[0]`` for an expected value."""
    if type(expected) is float:
        return f"abs(v[0] - {expected_text}) <= {TOLERANCE} * max(1.0, abs({expected_text}))"
    if type(expected) in (list, tuple) and has_float(expected):
        if all(type(x) in (int, float) for x in expected):
            return (
                f"len(v[0]) == {len(expected)} and all(abs(a - b) <= {TOLERANCE} * max(1.0, "
                f"abs(b)) for a, b in zip(v[0], {expected_text}))"
            )
    return f"v[0] == {expected_text}"


def plus_case(
    index: int,
    args_text: str,
    expected: Any,
    expected_text: str,
    also: tuple[Any, str] | None = None,
    prefix: str = PREFIX,
) -> CheckCase:
    """The compare case ``plus_<index>``: ``candidate(args)`` must give ``expected`` (or
    ``also``'s value: a second reference's answer where the two references differ)."""
    call = f"candidate({args_text})"
    check = check_expression(expected, expected_text)
    if also is not None:
        check = f"({check}) or ({check_expression(*also)})"
        source = f"assert {call} in ({expected_text}, {also[1]})"
    elif check.startswith("v[0] =="):
        source = f"assert {call} == {expected_text}"
    else:
        source = f"assert {check.replace('v[0]', call)}"
    # The call is the assertion's message: a failed plus case says which input it was.
    return CheckCase(
        f"{prefix}{index}",
        source,
        "compare",
        calls=(call,),
        check=f"assert {check}, {json.dumps(call)}",
    )


def args_literal(args: tuple[Any, ...]) -> str | None:
    """The arguments as they appear in a call, or None when one is not a literal."""
    texts = [literal(a) for a in args]
    if any(t is None for t in texts):
        return None
    return ", ".join(t for t in texts if t is not None)


def agrees(a: Any, b: Any) -> bool:
    """Whether two references' answers are the same expected value: equal literals, floats
    within the checks' tolerance (one reference sums in another order)."""
    if type(a) is float or type(b) is float:
        if type(a) not in (int, float) or type(b) not in (int, float):
            return False
        return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))
    if type(a) in (list, tuple) and type(b) is type(a):
        return len(a) == len(b) and all(agrees(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(agrees(a[k], b[k]) for k in a)
    return type(a) is type(b) and literal(a) == literal(b) and a == b
