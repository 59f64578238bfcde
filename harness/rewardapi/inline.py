"""Inline problems: a problem given in the request instead of a suite's task id.

Fields (all strings; docs/reward_api.md):

- ``prompt``: what the model was asked. When it holds the entry point's ``def`` line, a
  completion may continue it (HumanEval style) or be a whole solution; otherwise it is prose and
  the completion must be a whole solution (plain or in a markdown block; as for the suites,
  :mod:`harness.completions`).
- ``entry_point``: the function under test.
- ``tests``: either a HumanEval-style module defining ``def check(candidate):`` (helpers and
  imports beside it allowed), or plain ``assert`` lines that call the entry point by name
  (MBPP style), turned into such a module. Each assert becomes one check case judged in the
  trusted process; the candidate never runs an assert.
- ``reference`` (optional): a whole reference solution. It calibrates the per-case time limits
  (10x its time, at least 1 s); without one each case gets the default limit.
- ``language`` (optional, default ``python``): ``js``, ``cpp``, ``java`` or ``rs`` translate the
  Python problem (typed Python signature in ``prompt``, Python tests, Python reference) the
  way the ``humaneval-js`` ... suites are built (:mod:`suites.multipl`).

A problem is built once per content: its task id is ``inline/<hash>`` of the five fields, and
the built :class:`Problem` is kept (the suite compiler and the calibration cache key on the
same content, so later batches reuse both).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict

from harness.pipeline.checks import CheckSplitError, split_check
from harness.pipeline.data_tests import confine_data_tests
from harness.records import Problem
from harness.rewardapi.items import InlineSpec, RewardInputError
from suites.defects import missing_module_defects, parse_error
from suites.mbpp import check_module

INLINE_SUITE = "inline"
CACHE_SIZE = 4096  # problems kept; a trainer's data set is usually far smaller
_CHECK_DEF = re.compile(r"^def check\(", re.MULTILINE)


def content_hash(spec: InlineSpec) -> str:
    """A stable hash of everything that defines the problem."""
    payload = json.dumps(
        [spec.prompt, spec.tests, spec.entry_point, spec.language, spec.reference],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def build_problem(spec: InlineSpec, where: str) -> Problem:
    """The :class:`Problem` of ``spec``; raises :class:`RewardInputError` for tests that cannot
    be judged or a language that is not known."""
    task_id = f"{INLINE_SUITE}/{content_hash(spec)}"
    if _CHECK_DEF.search(spec.tests):
        test_source, names = spec.tests, ("candidate",)
    else:  # assert lines calling the entry point by name
        lines = [line for line in spec.tests.splitlines() if line.strip()]
        test_source, names = check_module([], "", lines), (spec.entry_point,)
    try:
        test_setup, cases = split_check(test_source, names)
    except CheckSplitError as exc:
        raise RewardInputError(f"{where}.tests", str(exc)) from None
    if not cases:
        raise RewardInputError(
            f"{where}.tests", f"holds no check that calls {names[0]} (nothing to judge)"
        )
    if spec.reference:
        problem = parse_error(spec.reference, "reference")
        if problem:
            raise RewardInputError(f"{where}.reference", problem)
    defects = missing_module_defects([test_source], "tests")
    defects += missing_module_defects([spec.reference], "reference") if spec.reference else []
    python = Problem(
        suite=INLINE_SUITE,
        task_id=task_id,
        prompt=spec.prompt,
        entry_point=spec.entry_point,
        cases=cases,
        reference=spec.reference,
        test_setup=test_setup,
        candidate_names=names,
        defects=tuple(defects),
        metadata={"test_source": test_source, "prompt_kind": prompt_kind(spec)},
    )
    if spec.language == "python":
        return confine_data_tests(python)
    # A compiled language's driver has no judge: a check that is not pure is left out.
    return confine_data_tests(_translated(python, spec.language, where), judge=False)


def prompt_kind(spec: InlineSpec) -> str:
    """``code`` when the prompt holds the entry point's stub (a completion may continue it),
    else ``text``: prose that never becomes part of the program."""
    stub = re.compile(rf"^\s*(async\s+)?def\s+{re.escape(spec.entry_point)}\s*\(", re.MULTILINE)
    return "code" if stub.search(spec.prompt) else "text"


def _translated(problem: Problem, language: str, where: str) -> Problem:
    from harness.languages import NAMES
    from suites.multipl import translated_problem

    if language not in NAMES:
        known = ", ".join(["python", *NAMES])
        raise RewardInputError(f"{where}.language", f"unknown language {language!r} ({known})")
    return translated_problem(problem, language, f"{INLINE_SUITE}-{language}")


class InlineCache:
    """Built inline problems by content hash (least recently used dropped first)."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._problems: OrderedDict[str, Problem] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0  # how many problems were built (the rest came from the cache)

    def get(self, spec: InlineSpec, where: str) -> Problem:
        key = content_hash(spec)
        with self._lock:
            problem = self._problems.get(key)
            if problem is not None:
                self._problems.move_to_end(key)
                return problem
        problem = build_problem(spec, where)
        with self._lock:
            self.builds += 1
            self._problems[key] = problem
            while len(self._problems) > self.size:
                self._problems.popitem(last=False)
        return problem
