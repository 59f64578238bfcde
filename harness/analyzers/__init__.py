"""Analyzers: independent, cached reports per evaluated sample.

Each analyzer (one module each) maps a batch of samples to one small JSON report per sample
and carries a version string. :func:`run_analyzers` runs the requested ones over a batch:
static analyzers (they read only the program) are looked up in the cache first, by the hash of
(program text, problem fingerprint, analyzer version), and the misses run in one batch per
analyzer (bandit once, ruff once, mypy once). Dynamic analyzers (tests, coverage, efficiency)
summarize the execution record, which is cheaper than hashing it, so they are not cached. An
analyzer that fails gives ``{"error": ...}`` for the samples it could not report on.

==============  =======  =====================================================
name            module   report
==============  =======  =====================================================
syntax          syntax         ok, line, col, message
structure       structure      entry point, signature, undefined names, functions
tests           outcomes       pass fraction, counts, exception types, failures
coverage        coverage_rate  line_rate, branch_rate (measured in the sandbox)
radon           radon_metrics  complexity, maintainability, Halstead volume, raw
bandit          bandit_scan    issues with test id, severity, confidence
style           style          ruff findings: count, codes
efficiency      efficiency     runtime vs the reference (else the batch's median), memory
types           types_check    mypy errors (optional, off by default)
==============  =======  =====================================================
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.analyzers.bandit_scan import BanditAnalyzer
from harness.analyzers.base import Analyzer, Report, Subject, error_report, program_of
from harness.analyzers.cache import AnalyzerCache, cache_key, problem_fingerprint, shared_cache
from harness.analyzers.coverage_rate import CoverageAnalyzer
from harness.analyzers.efficiency import EfficiencyAnalyzer
from harness.analyzers.outcomes import TestsAnalyzer
from harness.analyzers.radon_metrics import RadonAnalyzer
from harness.analyzers.structure import StructureAnalyzer
from harness.analyzers.style import StyleAnalyzer
from harness.analyzers.syntax import SyntaxAnalyzer
from harness.analyzers.types_check import TypesAnalyzer
from harness.program_ast import MAX_ANALYZED_CHARS
from harness.records import Problem

ANALYZERS: dict[str, Analyzer] = {
    a.name: a
    for a in (
        SyntaxAnalyzer(),
        StructureAnalyzer(),
        TestsAnalyzer(),
        CoverageAnalyzer(),
        RadonAnalyzer(),
        BanditAnalyzer(),
        StyleAnalyzer(),
        EfficiencyAnalyzer(),
        TypesAnalyzer(),
    )
}
DEFAULT_ON: tuple[str, ...] = tuple(n for n in ANALYZERS if n != "types")

__all__ = [
    "ANALYZERS",
    "DEFAULT_ON",
    "Analyzer",
    "AnalyzerCache",
    "Report",
    "Subject",
    "analyze_ahead",
    "register",
    "run_analyzers",
]


def register(analyzer: Analyzer) -> None:
    """Add (or replace) an analyzer by its ``name``."""
    ANALYZERS[analyzer.name] = analyzer


def run_analyzers(
    subjects: Sequence[Subject],
    names: Sequence[str],
    cache: AnalyzerCache | None = None,
    timings: dict[str, float] | None = None,
) -> list[dict[str, Report]]:
    """``{analyzer name: report}`` per subject, for the analyzers in ``names``."""
    cache = cache if cache is not None else shared_cache()
    results: list[dict[str, Report]] = [{} for _ in subjects]
    jobs = _jobs(subjects, names, cache, results)
    outputs = _run_jobs(jobs, subjects, timings)
    for (analyzer, indices, keys), reports in zip(jobs, outputs, strict=True):
        for i, report in zip(indices, reports, strict=True):
            results[i][analyzer.name] = report
        if keys:
            cache.put_many((keys[i], report) for i, report in zip(indices, reports, strict=True))
    return results


def analyze_ahead(
    judged: Sequence[tuple[dict[str, Any], Problem | None]], names: Sequence[str]
) -> None:
    """Store in the shared cache what the ``per_program`` analyzers among ``names`` report on
    the programs of ``judged`` (result rows, each with its problem), for a caller that will
    ask :func:`run_analyzers` for them.

    A judging worker calls it on the samples it judged, so that parsing and walking the
    programs is spread over the workers instead of done one program after another in the
    caller, whose :func:`run_analyzers` then finds the reports on disk. It is only ahead of
    time: a report not stored (a cache that cannot be written, an analyzer that failed) is
    made by the caller as before, so nothing is raised here.
    """
    ahead = [n for n in names if getattr(ANALYZERS.get(n), "per_program", False)]
    if not ahead or not judged:
        return
    subjects = [Subject(row, problem, program_of(row, problem)) for row, problem in judged]
    cache = shared_cache()
    try:
        run_analyzers(subjects, ahead, cache)
    except Exception:  # noqa: BLE001 - the caller analyzes what is missing itself
        pass
    finally:
        cache.memory.clear()  # the caller reads them from disk: a worker holds no reports


TOO_LONG: Report = {"error": f"program too long to analyze: over {MAX_ANALYZED_CHARS:,} characters"}

# One analyzer's work: the subjects (by index) it must run on, and their cache keys (none for
# an analyzer whose reports depend on the run, not only on the program).
Job = tuple[Analyzer, list[int], list[str]]


def _jobs(
    subjects: Sequence[Subject],
    names: Sequence[str],
    cache: AnalyzerCache,
    results: list[dict[str, Report]],
) -> list[Job]:
    """What is left to run once cached reports are placed in ``results``."""
    by_problem: dict[int, str] = {}  # one fingerprint per problem object in the batch
    fingerprints = [
        by_problem.get(id(s.problem))
        or by_problem.setdefault(id(s.problem), problem_fingerprint(s.problem))
        for s in subjects
    ]
    jobs: list[Job] = []
    for name in names:
        analyzer = ANALYZERS[name]
        if not analyzer.static:
            jobs.append((analyzer, list(range(len(subjects))), []))
            continue
        keys = [
            cache_key(name, analyzer.version, s.program, fp)
            for s, fp in zip(subjects, fingerprints, strict=True)
        ]
        found = cache.get_many(keys)
        missing = []
        for i, key in enumerate(keys):
            if len(subjects[i].program) > MAX_ANALYZED_CHARS:
                # Past the trusted side's bound an analyzer of programs does not read it (a
                # parse and a walk cost about 15 s of CPU per MB, the tools' own more).
                results[i][name] = dict(TOO_LONG)
            elif key in found:
                results[i][name] = found[key]
            else:
                missing.append(i)
        if missing:
            jobs.append((analyzer, missing, keys))
    return jobs


def _run_jobs(
    jobs: list[Job], subjects: Sequence[Subject], timings: dict[str, float] | None
) -> list[list[Report]]:
    """Each job's reports, in the jobs' order."""
    # An analyzer that runs in a subprocess (ruff) works in a thread while the in-process ones
    # run here, one after the other: CPython 3.11's ast module is not safe to use from two
    # threads at once (SystemError: AST constructor recursion depth mismatch).
    outputs: list[list[Report]] = [[] for _ in jobs]
    background = [
        i for i, (a, _, _) in enumerate(jobs) if getattr(a, "subprocess", False) and len(jobs) > 1
    ]
    with ThreadPoolExecutor(max_workers=max(1, len(background))) as pool:
        futures = {
            i: pool.submit(_run_one, jobs[i][0], subjects, jobs[i][1], timings) for i in background
        }
        for i, (analyzer, indices, _) in enumerate(jobs):
            if i not in futures:
                outputs[i] = _run_one(analyzer, subjects, indices, timings)
        for i, future in futures.items():
            outputs[i] = future.result()
    return outputs


def _run_one(
    analyzer: Analyzer,
    subjects: Sequence[Subject],
    indices: list[int],
    timings: dict[str, float] | None,
) -> list[Report]:
    start = time.perf_counter()
    batch = [subjects[i] for i in indices]
    try:
        reports = analyzer.analyze(batch)
        if len(reports) != len(batch):
            raise RuntimeError(f"{len(reports)} reports for {len(batch)} samples")
    except Exception as exc:  # one analyzer's failure must not lose the batch
        reports = [error_report(exc) for _ in batch]
    if timings is not None:
        timings[analyzer.name] = timings.get(analyzer.name, 0.0) + time.perf_counter() - start
    return reports
