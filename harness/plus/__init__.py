"""Plus checks: more inputs per problem, generated offline from its reference solution.

A suite asks for plus cases by marking its problems (:func:`request_plus`: the
``humaneval-plus`` and ``mbpp-plus`` suites, ``--llm-plus N`` for any function-style suite);
:func:`expand_plus` then adds them where a sandbox is at hand, before the per-case time limits
are measured (it is registered as a problem step of the pipeline, :mod:`harness.pipeline.steps`),
so plus cases get limits from the reference's own times like every other case. See :mod:`harness.plus.generate` for how inputs are
made and :mod:`harness.plus.cases` for what a plus case is.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from harness.pipeline.steps import register_problem_step
from harness.plus.cases import PREFIX, is_plus
from harness.records import Problem
from harness.sandbox import Sandbox

REQUEST_KEY = "plus_request"  # metadata: {"n": N, "seed": S}, set by request_plus
STATS_KEY = "plus"  # metadata: what generation did (counts, seconds, reason for none)
DEFAULT_COUNT = 32

__all__ = ["DEFAULT_COUNT", "PREFIX", "expand_plus", "is_plus", "only_for", "request_plus"]


def request_plus(
    problems: Sequence[Problem], count: int = DEFAULT_COUNT, seed: int = 0, suite: str | None = None
) -> list[Problem]:
    """``problems`` marked for ``count`` plus cases each (renamed to ``suite`` when given)."""
    out = []
    for problem in problems:
        metadata = {**problem.metadata, REQUEST_KEY: {"n": int(count), "seed": int(seed)}}
        changes: dict[str, object] = {"metadata": metadata}
        if suite is not None:
            changes["suite"] = suite
        out.append(dataclasses.replace(problem, **changes))  # type: ignore[arg-type]
    return out


def only_for(problems: Sequence[Problem], task_ids: set[str]) -> list[Problem]:
    """``problems`` with the plus request kept only for ``task_ids`` (those with samples): a
    run of a few samples does not generate inputs for the whole benchmark."""
    return [
        p
        if p.task_id in task_ids or REQUEST_KEY not in p.metadata
        else dataclasses.replace(
            p, metadata={k: v for k, v in p.metadata.items() if k != REQUEST_KEY}
        )
        for p in problems
    ]


def expand_plus(problems: Sequence[Problem], sandbox: Sandbox) -> list[Problem]:
    """Each requested problem with its plus cases appended (a no-op for the others)."""
    out = []
    for problem in problems:
        request = problem.metadata.get(REQUEST_KEY)
        if not request or STATS_KEY in problem.metadata:  # not asked, or expanded already
            out.append(problem)
            continue
        # Imported here: it loads hypothesis, which a run without plus cases never needs.
        from harness.plus.generate import plus_cases_for

        base = dataclasses.replace(
            problem, metadata={k: v for k, v in problem.metadata.items() if k != STATS_KEY}
        )
        started = time.perf_counter()
        result = plus_cases_for(base, sandbox, count=request["n"], seed=request["seed"])
        stats = {
            **result.stats,
            "cases": len(result.cases),
            "wall_s": round(time.perf_counter() - started, 3),
        }
        if result.reason:
            stats["reason"] = result.reason
        out.append(
            dataclasses.replace(
                problem,
                cases=problem.cases + result.cases,
                metadata={**problem.metadata, STATS_KEY: stats},
            )
        )
    return out


register_problem_step("plus", expand_plus)  # the pipeline runs it before calibration
