"""EvalPlus's oracle (HumanEval+ and MBPP+), as ``evalplus`` 0.3.1 judges one input.

``expected`` holds ``out`` (the reference's output, tagged), ``atol`` (the tolerance in force
when this input is judged, see below), ``kind`` and, for the oracles that look at the input,
``args``. Kinds:

- ``exact``: ``out == expected``; when that fails and a tolerance applies, the types must be
  the same (and the lengths, for lists and tuples) and ``numpy.allclose(rtol=1e-7, atol)``;
- ``poly`` (HumanEval/32, ``find_zero``): ``|poly(xs, out)| <= atol``, no comparison;
- ``set`` (MBPP+'s set-equality tasks): ``set(out) == set(expected)``;
- ``not_none`` (MBPP+ tasks whose output is not data): the reference's output says only
  whether it was None; a bool output is compared as is;
- ``always`` (Mbpp/164), ``zero_ok`` (Mbpp/295), ``surface`` (Mbpp/581), ``digits``
  (Mbpp/558): EvalPlus's special oracles, which also accept another answer.

The tolerance: a problem's ``atol``; when it is 0 and an expected output is a float (or a list
or tuple of floats), 1e-6 from that input on. EvalPlus keeps that 1e-6 for the later inputs
of the same group (base or plus) too: the suite loader (suites.evalplus) writes the tolerance
in force before each input into its ``atol``, and the float rule for the input itself is
applied here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.oracles import brief, decoded, mismatch

FLOAT_ATOL = 1e-6  # EvalPlus's tolerance for float outputs when the problem gives none
RTOL = 1e-7  # numpy.testing.assert_allclose's default, which EvalPlus passes to allclose


def is_floats(value: Any) -> bool:
    """A float, a non-empty list or tuple of floats only, or a float numpy array."""
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(item, float) for item in value)
    if isinstance(value, np.ndarray):
        return value.dtype in (np.float64, np.float32)
    return False


def poly(xs: Sequence[Any], x: Any) -> float:
    """``xs[0] + xs[1] x + xs[2] x^2 + ...``, each power with ``math.pow`` (as HumanEval/32)."""
    return sum([coeff * math.pow(x, power) for power, coeff in enumerate(xs)])


def pyramid_surface(base_edge: Any, height: Any) -> int:
    """Mbpp/581's other reading: ``height`` is the apex's distance to the base, rounded."""
    slant = math.sqrt((base_edge / 2) ** 2 + height**2)
    lateral = 4 * (base_edge * slant) / 2
    return round(base_edge**2 + lateral)


def digit_distance(first: Any, second: Any) -> int:
    """Mbpp/558's other reading: the shorter number padded with leading zeros."""
    left, right = str(first), str(second)
    width = max(len(left), len(right))
    left, right = left.zfill(width), right.zfill(width)
    return sum(abs(int(a) - int(b)) for a, b in zip(left, right, strict=True))


def evalplus(values: Sequence[Any], expected: Any) -> str | None:
    """EvalPlus's verdict on one input: None when it passes, else why not."""
    out = values[0] if values else None
    kind = expected.get("kind", "exact")
    atol = float(expected.get("atol", 0.0))
    try:
        if kind == "poly":
            (xs,) = decoded(expected["args"])
            residue = abs(poly(xs, out))
            return None if residue <= atol else f"|poly(xs, {out!r})| = {residue:g} > {atol:g}"
        want = decoded(expected["out"])
        match = _special(kind, out, want, atol, expected)
        if atol == 0 and _floats_expected(expected, want):
            atol = FLOAT_ATOL
        if not match and atol != 0:
            return _close(out, want, atol)
        return None if match else mismatch(out, want)
    except Exception as exc:  # noqa: BLE001 - EvalPlus fails an input whose check raises
        return f"the oracle raised {type(exc).__name__} on the output {_brief(out)}"


# Where an expected output's "all floats" is kept in its parsed case (a walk over a million
# floats for HumanEval/130, once per case rather than once per sample).
_FLOATS = "\0floats"


def _floats_expected(expected: Any, want: Any) -> bool:
    """``is_floats(want)``, once per case: the parsed expected output is kept and shared."""
    floats = expected.get(_FLOATS)
    if floats is None:
        floats = expected[_FLOATS] = is_floats(want)
    return bool(floats)


def _special(kind: str, out: Any, want: Any, atol: float, expected: Any) -> bool:
    """Whether ``out`` matches before any tolerance, by the kind's rule (raises: no match)."""
    if kind == "set":
        return set(out) == set(want)
    if kind == "not_none":
        return bool(out == want) if isinstance(out, bool) else want == (out is not None)
    match = bool(out == want)
    if kind == "always":
        return True
    if kind == "zero_ok":
        return match or bool(out == 0)
    if kind == "surface":
        return match or abs(out - pyramid_surface(*decoded(expected["args"]))) <= atol
    if kind == "digits":
        return match or bool(out == digit_distance(*decoded(expected["args"])))
    return match


def _close(out: Any, want: Any, atol: float) -> str | None:
    if type(out) is not type(want):
        return f"expected a {type(want).__name__} close to {_brief(want)}, got {_brief(out)}"
    if isinstance(want, (list, tuple)) and len(out) != len(want):
        return mismatch(out, want)
    if bool(np.allclose(out, want, rtol=RTOL, atol=atol)):
        return None
    return f"not within atol={atol:g}: " + mismatch(out, want)


def _brief(value: Any) -> str:
    return brief(value, 80)
