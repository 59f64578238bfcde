"""Per-case time limits derived from the reference solution's own runtime.

Each case's limit is ``max(floor, multiplier × reference time)``; ``--llm-timeout`` replaces
all of them. Reference times come from :mod:`harness.pipeline.calibration`: measured in the sandbox over
several seeded runs, cached only from healthy runs, so the same samples get the same limits (and
verdicts) on every run. :func:`prepare_problems` is the one entry point the plugin, ``evaluate``
and the benchmarks share: limits, and references that fail or pass only by chance marked as data
defects (never scored).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.pipeline.calibration import calibrate
from harness.records import Problem, replaced
from harness.sandbox import Sandbox

DEFAULT_FLOOR_S = 1.0
DEFAULT_MULTIPLIER = 10.0


def prepare_problems(
    problems: Sequence[Problem],
    sandbox: Sandbox,
    *,
    coverage: bool = False,
    override_s: float | None = None,
    cap_s: float | None = None,
) -> list[Problem]:
    """``problems`` ready to compile: per-case limits, ``metadata["reference_durations"]``, and
    a data defect for each reference that fails any of its calibration runs.

    With ``coverage`` the reference runs under the same tracer as the samples will, so the
    efficiency analyzer compares like with like. ``override_s`` and ``cap_s``: see
    :func:`with_timeouts`. Plus cases (``harness.plus``) are added before, by the pipeline's
    problem steps (:mod:`harness.pipeline.steps`), so they are calibrated like the others.
    """
    calibrations = calibrate(problems, sandbox, coverage=coverage)
    prepared = []
    for problem in problems:
        calibration = calibrations.get(problem.task_id)
        durations = calibration.durations if calibration is not None else {}
        defect = calibration.defect if calibration is not None else None
        if defect:
            problem = dataclasses.replace(problem, defects=(*problem.defects, defect))
        prepared.append(with_timeouts(problem, durations, override_s=override_s, cap_s=cap_s))
    return prepared


def reference_durations(
    problems: Sequence[Problem], sandbox: Sandbox, *, coverage: bool = False
) -> dict[str, dict[str, float]]:
    """``{task_id: {case_id: seconds}}`` of each reference that passed its calibration runs.

    Kept for callers that only want timings; :func:`prepare_problems` also marks defects.
    A problem without trustworthy timings maps to ``{}`` (its limits fall back to the default).
    """
    calibrations = calibrate(problems, sandbox, coverage=coverage)
    return {
        p.task_id: calibrations[p.task_id].durations if p.task_id in calibrations else {}
        for p in problems
    }


def with_timeouts(
    problem: Problem,
    durations: dict[str, float],
    *,
    override_s: float | None = None,
    cap_s: float | None = None,
    floor_s: float = DEFAULT_FLOOR_S,
    multiplier: float = DEFAULT_MULTIPLIER,
) -> Problem:
    """A copy of ``problem`` whose cases carry their time limits.

    ``override_s`` replaces every limit (``--llm-timeout``); ``cap_s`` only lowers the derived
    ones (a reward config's ``test_timeout``). A case without a measured time gets
    ``multiplier × floor_s``: unknown is not fast.
    """
    cases = []
    for case in problem.cases:
        if override_s is not None:
            limit = override_s
        else:
            limit = max(floor_s, multiplier * durations.get(case.case_id, floor_s))
            if cap_s is not None:
                limit = min(limit, cap_s)
        cases.append(replaced(case, timeout_s=round(limit, 3)))
    metadata = {**problem.metadata, "reference_durations": durations}
    return dataclasses.replace(problem, cases=tuple(cases), metadata=metadata)
