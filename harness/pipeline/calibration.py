"""Run each reference solution several times, and trust (and cache) only what a healthy run showed.

The per-case time limits come from the reference's own runtime, and a
cache that kept a broken run's timings would poison every later run: zeros from a sandbox that
could not start gave every case the 1 s floor, and a reference that needs 1.8 s then timed out in
a healthy sandbox. So a reference is run with several seeds for ``random`` (``SEEDS``), its
verdict is judged here as the generated tests would judge it (every case ``ok``, and each
``compare`` check holding over the values sent back), and:

* a reference that passes every run gets the median of its per-case times, cached;
* one that passes some runs is *flaky* (its verdicts would be random), a data defect, cached;
* one that fails every run is a data defect for this session only, never cached (the cause may
  be this run's environment: a memory limit, a missing file);
* a run the sandbox could not do (an infrastructure error) stores nothing at all.

The cache key holds everything that changes a timing or a verdict: the problem's fingerprint,
coverage on or off, bubblewrap or not, and the memory limit (decision 10).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import queue
import statistics
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.completions import assemble_program
from harness.oracles import judge as judge_with_oracle
from harness.paths import cache_dir, write_cache_file
from harness.pipeline.data_tests import FROM_DATA
from harness.pipeline.runtime import build_request
from harness.records import CheckCase, Problem
from harness.sandbox import SampleExecution, SampleRequest, Sandbox

SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
CALIBRATION_LIMIT_S = 20.0  # per case: generous, so a slow reference is measured, not cut off
CACHE_FOLDER = "reference_calibration"  # one file per cache key
# 3: one file per key, so a run reads only its own problems' entries (2, one file of every
# entry ever stored, cost a quarter of a second to parse per call once it held EvalPlus's
# problems); older files are never read.
CACHE_FORMAT = 3
MAX_WORKERS = 8


@dataclass(frozen=True)
class Calibration:
    """What the runs of one reference showed.

    ``seeds``: the seeds of the runs the sandbox completed (infrastructure errors left out);
    ``passed``: those whose run passed; ``durations``: per case, the median over passing runs
    (empty when none passed); ``failure``: the first failing run's first failing case;
    ``cacheable``: whether this may be stored (see the module docstring).
    """

    seeds: tuple[int, ...]
    passed: tuple[int, ...]
    durations: dict[str, float]
    failure: str = ""
    cacheable: bool = False

    @property
    def defect(self) -> str | None:
        """The data defect these runs show, or ``None`` when the reference is sound."""
        if not self.seeds or len(self.passed) == len(self.seeds):
            return None
        if not self.passed:
            return f"reference fails its own checks: {self.failure}"
        failed = [s for s in self.seeds if s not in self.passed]
        return (
            f"flaky reference: passed {len(self.passed)} of {len(self.seeds)} runs with seeds "
            f"{_seed_list(self.seeds)}; failed with seed{'s' if len(failed) > 1 else ''} "
            f"{_seed_list(failed)}: {self.failure}"
        )


def _seed_list(seeds: Sequence[int]) -> str:
    return ", ".join(str(s) for s in seeds)


def calibration_key(problem: Problem, *, coverage: bool, bwrap: bool, memory_mb: int) -> str:
    """The cache key: everything that changes a reference's timing or verdict."""
    return (
        f"{problem.fingerprint()}|coverage={int(coverage)}|bwrap={int(bwrap)}"
        f"|memory_mb={int(memory_mb)}"
    )


def sandbox_key(problem: Problem, sandbox: Sandbox, *, coverage: bool) -> str:
    return calibration_key(
        problem,
        coverage=coverage,
        bwrap=sandbox.uses_bwrap,
        memory_mb=sandbox.settings.memory_mb,
    )


def calibrate(
    problems: Sequence[Problem],
    sandbox: Sandbox,
    *,
    coverage: bool = False,
    seeds: Sequence[int] = SEEDS,
    workers: int | None = None,
) -> dict[str, Calibration]:
    """``{task_id: Calibration}`` for each problem with a reference and no known defect.

    Cached verdicts are reused; the rest are measured (``len(seeds)`` runs each, spread over
    ``workers`` sandboxes like ``sandbox``; default: one per CPU) and the healthy ones stored.
    """
    seeds = tuple(seeds)
    todo = [
        p
        for p in problems
        if p.reference.strip()
        and p.cases
        and not p.defects
        # limits the data gives (a judge's, harness.stdio) are not derived from a reference
        and not p.metadata.get("limits_from_data")
    ]
    keys = {p.task_id: sandbox_key(p, sandbox, coverage=coverage) for p in todo}
    cached = read_entries(keys.values())
    result: dict[str, Calibration] = {}
    measure: list[Problem] = []
    for problem in todo:
        entry = cached.get(keys[problem.task_id])
        found = _from_entry(entry, problem, seeds)
        if found is not None:
            result[problem.task_id] = found
        else:
            measure.append(problem)
    fresh = _measure(measure, sandbox, coverage=coverage, seeds=seeds, workers=workers)
    result.update(fresh)
    write_entries(
        {
            keys[p.task_id]: _to_entry(fresh[p.task_id])
            for p in measure
            if fresh[p.task_id].cacheable
        }
    )
    return result


# -- running -----------------------------------------------------------------------------------
def _measure(
    problems: Sequence[Problem],
    sandbox: Sandbox,
    *,
    coverage: bool,
    seeds: tuple[int, ...],
    workers: int | None,
) -> dict[str, Calibration]:
    """Run every (problem, seed) pair, in parallel over a few sandboxes, and judge each run."""
    if not problems:
        return {}
    requests = [calibration_request(p, coverage) for p in problems]
    jobs = [(i, seed) for i in range(len(problems)) for seed in seeds]
    count = max(1, min(workers or _cpus(), len(jobs), MAX_WORKERS))
    runs: dict[tuple[int, int], SampleExecution] = {}
    with _sandboxes(sandbox, count) as pool:

        def run(job: tuple[int, int]) -> SampleExecution:
            index, seed = job
            request = dataclasses.replace(requests[index], seed=seed)
            box = pool.get()
            try:
                execution = box.run(request)
                if execution.infra_error:  # one fresh try, as the suite's runtime gives samples
                    execution = box.run(request)
                return execution
            finally:
                pool.put(box)

        with ThreadPoolExecutor(count, thread_name_prefix="codeeval-calibration") as executor:
            for job, execution in zip(jobs, executor.map(run, jobs), strict=True):
                runs[job] = execution
    return {
        p.task_id: judge_runs(p, [(seed, runs[(i, seed)]) for seed in seeds])
        for i, p in enumerate(problems)
    }


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def _sandboxes(sandbox: Sandbox, count: int) -> Iterator[queue.Queue[Sandbox]]:
    """``sandbox`` and ``count - 1`` more like it (same settings and mode), closed afterwards.

    One sandbox runs one sample at a time; calibration runs at the start of every fresh suite,
    so it uses every CPU (a fork server starts in about 0.1 s).
    """
    pool: queue.Queue[Sandbox] = queue.Queue()
    pool.put(sandbox)
    extra = [
        Sandbox(dataclasses.replace(sandbox.settings, use_bwrap=sandbox.uses_bwrap))
        for _ in range(count - 1)
    ]
    for box in extra:
        pool.put(box)
    try:
        yield pool
    finally:
        for box in extra:
            box.close()


def calibration_request(problem: Problem, coverage: bool) -> SampleRequest:
    """The reference's request, with limits generous enough to measure a slow reference."""
    limited = dataclasses.replace(
        problem,
        cases=tuple(dataclasses.replace(c, timeout_s=CALIBRATION_LIMIT_S) for c in problem.cases),
    )
    program = assemble_program(limited, limited.reference).program
    return build_request(limited, program, coverage=coverage)


def judge_runs(problem: Problem, runs: Sequence[tuple[int, SampleExecution]]) -> Calibration:
    """One problem's calibration from its runs (``(seed, execution)``, in seed order), judged
    as the generated tests judge a sample; decides too whether it may be cached."""
    checks = _TrustedChecks(problem)
    seeds: list[int] = []
    passed: list[int] = []
    timings: dict[str, list[float]] = {c.case_id: [] for c in problem.cases}
    failure = ""
    complete = True
    timed_out = False
    for seed, execution in runs:
        if _unhealthy(problem, execution):
            complete = False
            continue
        seeds.append(seed)
        why = checks.failure(execution)
        if why is None:
            passed.append(seed)
            for case_id, found in timings.items():
                found.append(execution.cases[case_id].duration_s)
            continue
        failure = failure or why
        timed_out = timed_out or any(c.status == "timeout" for c in execution.cases.values())
    durations = {case_id: statistics.median(found) for case_id, found in timings.items() if passed}
    sound = all(math.isfinite(d) and d > 0 for d in durations.values())
    calibration = Calibration(tuple(seeds), tuple(passed), durations if sound else {}, failure)
    # Stored: healthy, complete runs with real timings; a flaky verdict too, unless a failing
    # run timed out (that may be this machine's load). A reference failing every run: never.
    cacheable = complete and sound and bool(passed) and (len(passed) == len(seeds) or not timed_out)
    return dataclasses.replace(calibration, cacheable=cacheable)


def _unhealthy(problem: Problem, execution: SampleExecution) -> bool:
    """The sandbox did not do this run (never the reference's fault): it proves nothing."""
    if execution.infra_error:
        return True
    return any(
        c.case_id not in execution.cases or execution.cases[c.case_id].status == "error"
        for c in problem.cases
    )


class _TrustedChecks:
    """The trusted side of a generated test module, for one problem's reference runs.

    As ``harness.pipeline.compile.render_test_module`` writes it: the problem's ``test_setup`` at module
    level, then per ``compare`` case its ``prelude``, ``v`` (the values sent back) and ``check``.
    """

    def __init__(self, problem: Problem):
        self.problem = problem
        self._module: dict[str, Any] | None = None
        self._setup_error = ""
        self._code: dict[str, Any] = {}

    def failure(self, execution: SampleExecution) -> str | None:
        """The first failing case of this run, described; ``None`` when every case passed."""
        for case in self.problem.cases:
            got = execution.cases[case.case_id]
            if got.status != "ok":
                return f"{case.case_id}: {_describe(got)}"
            if case.mode == "compare":
                why = self._check(case, list(got.values or ()))
                if why:
                    return f"{case.case_id}: {why}"
        return None

    def _check(self, case: CheckCase, values: list[Any]) -> str | None:
        if case.oracle:  # judged by a named oracle, as the generated test does
            return judge_with_oracle(case.oracle, values, case.expected)
        module = self._setup()
        if module is None:
            return f"the test setup raised {self._setup_error}"
        namespace = dict(module)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if case.prelude:
                    exec(self._compiled(case.prelude), namespace)  # noqa: S102 - trusted test code
                namespace["v"] = values
                exec(self._compiled(case.check), namespace)  # noqa: S102 - trusted test code
        except AssertionError:
            return f"check failed: {case.check.strip()[:200]}"
        except Exception as exc:  # noqa: BLE001 - any error of the check fails the case
            return f"check raised {type(exc).__name__}: {str(exc)[:200]}"
        return None

    def _setup(self) -> dict[str, Any] | None:
        if self._module is None and not self._setup_error:
            module: dict[str, Any] = {"__name__": "codeeval_calibration"}
            # Tests from data: their setup runs only in the sandbox, their checks are pure.
            setup = "import math" if self.problem.metadata.get(FROM_DATA) else None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    source = setup or self.problem.test_setup
                    exec(self._compiled(source), module)  # noqa: S102 - trusted
                self._module = module
            except Exception as exc:  # noqa: BLE001 - reported as the reference's failure
                self._setup_error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return self._module

    def _compiled(self, source: str) -> Any:
        if source not in self._code:
            self._code[source] = compile(source, "<calibration>", "exec")
        return self._code[source]


def _describe(case: Any) -> str:
    if case.status == "raised" and case.exception:
        return f"raised {case.exception.get('type')}: {case.exception.get('message', '')[:200]}"
    return (case.message or case.status)[:200]


# -- the cache ---------------------------------------------------------------------------------
def cache_folder() -> Path:
    return cache_dir() / CACHE_FOLDER


def entry_path(key: str) -> Path:
    """The file of one cache key (named by its hash: keys hold ``|`` and ``=``)."""
    return cache_folder() / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def read_entries(keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored entries of ``keys``; a missing or unreadable file, another format or
    another key's file counts as no entry."""
    found: dict[str, dict[str, Any]] = {}
    for key in keys:
        try:
            data = json.loads(entry_path(key).read_text())
        except (OSError, ValueError):
            continue
        if (
            isinstance(data, dict)
            and data.get("format") == CACHE_FORMAT
            and data.get("key") == key
            and isinstance(data.get("entry"), dict)
        ):
            found[key] = data["entry"]
    return found


def write_entries(entries: dict[str, dict[str, Any]]) -> None:
    """Store each entry in its own file, whole or not at all (a concurrent run that stores
    other problems' entries loses none of them, and none of these)."""
    for key, entry in entries.items():
        write_cache_file(
            entry_path(key), json.dumps({"format": CACHE_FORMAT, "key": key, "entry": entry})
        )


def _to_entry(calibration: Calibration) -> dict[str, Any]:
    return {
        "seeds": list(calibration.seeds),
        "passed": list(calibration.passed),
        "durations": calibration.durations,
        "failure": calibration.failure,
    }


def _from_entry(entry: Any, problem: Problem, seeds: tuple[int, ...]) -> Calibration | None:
    """A cached entry, only when it is one a healthy run could have stored; else ``None``."""
    if not isinstance(entry, dict):
        return None
    try:
        stored_seeds = tuple(int(s) for s in entry["seeds"])
        passed = tuple(int(s) for s in entry["passed"])
        durations = {str(k): float(v) for k, v in entry["durations"].items()}
        failure = str(entry.get("failure", ""))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if stored_seeds != seeds or not passed or not set(passed) <= set(seeds):
        return None
    if set(durations) != {c.case_id for c in problem.cases}:
        return None
    if not all(math.isfinite(d) and d > 0 for d in durations.values()):
        return None
    if len(passed) < len(seeds) and not failure:
        return None
    return Calibration(stored_seeds, passed, durations, failure, cacheable=True)
