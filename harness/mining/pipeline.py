"""Repository → mined suite: find functions, map tests to them, build and validate problems.

1. Parse the repository's modules and list the functions and methods worth mining.
2. Run the whole test suite once in the sandbox under coverage.py, a context per test
   (doctests included), and map each function to the tests that executed its body.
3. For each function: its prompt (``harness.mining.context``), the repository copy with its
   body removed, and checks: the tests that pass with the original body (run in the sandbox)
   and fail with a body that raises ``NotImplementedError``. No such test: dropped, with why.
4. Features and a tier per problem; the suite (one JSONL line per problem) and a report.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.mining.context import DocParagraph, build_prompt, read_docs
from harness.mining.model import FORMAT, HOLE, Drop, MineReport, MiningError, Target
from harness.mining.problem import inside_source, problem_from_record, program_setup
from harness.mining.snapshot import pack, snapshot_files
from harness.mining.source import (
    DOC_DIRS,
    TEST_DIRS,
    ModuleInfo,
    find_targets,
    hole_module,
    is_package_file,
    is_test_file,
    read_modules,
    reference_body,
)
from harness.mining.tiers import features, tier
from harness.pipeline.runtime import build_request
from harness.sandbox import CaseRequest, SampleExecution, SampleRequest, Sandbox, SandboxSettings

Progress = Callable[[str], None]


@dataclass
class MineOptions:
    """Knobs of a mining run (``codeeval mine --help`` documents each)."""

    max_checks: int = 20
    context_tokens: int = 1024
    coverage_budget_s: float = 900.0
    check_budget_s: float = 120.0
    memory_mb: int = 2048
    limit: int | None = None  # validate at most this many functions (a quick look)
    select: str | None = None  # only targets whose id (path::qualname) contains this
    use_bwrap: bool | None = None


def test_layout(root: Path, files: dict[str, bytes]) -> tuple[list[str], list[str]]:
    """pytest's arguments for the whole suite (tests and modules, for doctests), and the
    folders that go on ``sys.path`` (``src`` in a src layout)."""
    pythonpath = ["src"] if (root / "src").is_dir() else []
    tops: set[str] = set()
    tests = False
    for rel in files:
        if not rel.endswith(".py"):
            continue
        parts = rel.split("/")
        if is_test_file(rel) and parts[-1] != "conftest.py":
            tests = True
        if parts[0] in DOC_DIRS:
            continue
        if parts[0] == "src" and len(parts) > 2:
            tops.add("/".join(parts[:2]))
        elif len(parts) > 1 and parts[0] not in ("src",):
            tops.add(parts[0])
        elif len(parts) == 1 and (is_package_file(rel) or is_test_file(rel)):
            if parts[0] != "conftest.py":
                tops.add(rel)
    if not tests:
        raise MiningError(f"{root}: found no test files (test_*.py, *_test.py, tests/)")
    ordered = sorted(tops, key=lambda p: (p.split("/")[0] in TEST_DIRS, p))
    return ["--doctest-modules", "--continue-on-collection-errors", *ordered], pythonpath


def run_coverage(
    sandbox: Sandbox,
    files: dict[str, bytes],
    targets: list[Target],
    args: list[str],
    pythonpath: list[str],
    budget_s: float,
) -> dict[str, Any]:
    """The whole test suite under coverage in the sandbox: outcomes, doctests, tests per target."""
    spec = {
        "zip": pack(files),
        "targets": [[t.target_id, t.path, t.hole_start, t.end_line] for t in targets],
        "args": args,
        "pythonpath": pythonpath,
        "reporter": inside_source("inside_reporter"),
        "driver": inside_source("inside_coverage"),
    }
    request = SampleRequest(
        program=inside_source("inside_check"),
        entry_point="__mine_coverage__",
        cases=(
            CaseRequest("coverage", "compare", calls=("__mine_coverage__()",), timeout_s=budget_s),
        ),
        test_setup=f"_MINED_SPEC = {spec!r}\n",
        budget_s=budget_s + 1.0,
    )
    execution = sandbox.run(request)
    case = execution.cases.get("coverage")
    if execution.infra_error or case is None or case.status != "ok" or not case.values:
        why = execution.infra_error or (case and (case.message or case.exception or case.status))
        raise MiningError(
            f"the coverage run of the tests failed: {why}\n{execution.stderr[-2000:]}"
        )
    result = json.loads(case.values[0])
    if "error" in result:
        raise MiningError(f"the coverage run of the tests failed: {result['error']}")
    return result


def mine(
    repo: str | Path,
    output: str | Path,
    options: MineOptions | None = None,
    progress: Progress | None = None,
) -> MineReport:
    """Mine ``repo`` into the suite ``output`` (JSONL) and ``output``'s report (``.report.json``)."""
    options = options or MineOptions()
    say = progress or (lambda _msg: None)
    root = Path(repo).resolve()
    if not root.is_dir():
        raise MiningError(f"{repo}: not a folder")
    name = root.name
    report = MineReport(repository=str(root))
    started = time.perf_counter()

    modules = read_modules(root)
    if not modules:
        raise MiningError(f"{root}: holds no Python modules outside its tests")
    targets: list[Target] = []
    for info in modules.values():
        found, skipped = find_targets(info)
        targets += found
        report.drops += [Drop(target_id, reason) for target_id, reason in skipped]
    report.functions_found = len(targets) + len(report.drops)
    files = snapshot_files(root)
    args, pythonpath = test_layout(root, files)
    docs = read_docs(root)
    report.seconds["discover"] = time.perf_counter() - started
    say(
        f"{report.functions_found} functions in {len(modules)} modules; running the tests under coverage"
    )

    sandbox = Sandbox(SandboxSettings(memory_mb=options.memory_mb, use_bwrap=options.use_bwrap))
    try:
        t0 = time.perf_counter()
        coverage = run_coverage(
            sandbox, files, targets, args, pythonpath, options.coverage_budget_s
        )
        report.seconds["coverage"] = time.perf_counter() - t0
        outcomes: dict[str, str] = coverage["outcomes"]
        report.tests_run = len(outcomes)
        report.tests_failed = sum(1 for o in outcomes.values() if o in ("failed", "error"))
        doctests = set(coverage.get("doctests", ()))
        say(f"{report.tests_run} tests ran ({report.tests_failed} failed on the original code)")

        t0 = time.perf_counter()
        records: list[dict[str, Any]] = []
        validated = 0
        for target in targets:
            ran = [
                t for t in coverage["ran"].get(target.target_id, []) if outcomes.get(t) == "passed"
            ]
            if options.select and options.select not in target.target_id:
                report.drops.append(Drop(target.target_id, "not selected (--select)"))
                continue
            if not coverage["ran"].get(target.target_id):
                report.drops.append(Drop(target.target_id, "no test executes its body"))
                continue
            if not ran:
                report.drops.append(
                    Drop(target.target_id, "the tests that execute it fail on the original code")
                )
                continue
            if options.limit is not None and validated >= options.limit:
                report.drops.append(Drop(target.target_id, "over --limit (not validated)"))
                continue
            validated += 1
            record, drop = _problem(
                sandbox,
                root,
                name,
                modules,
                docs,
                target,
                ran,
                doctests,
                files,
                pythonpath,
                options,
            )
            if drop is not None:
                report.drops.append(drop)
                say(f"  dropped {target.target_id}: {drop.reason}")
                continue
            records.append(record)
            report.problems.append(
                {
                    "task_id": record["task_id"],
                    "tier": record["tier"],
                    "features": record["features"],
                }
            )
            say(f"  {record['task_id']}: {record['tier']} {record['features']}")
        report.seconds["validate"] = time.perf_counter() - t0
    finally:
        sandbox.close()

    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")
    report.seconds["total"] = time.perf_counter() - started
    report_path(out).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return report


def report_path(suite: Path) -> Path:
    return suite.with_name(suite.stem + ".report.json")


def _package_of(module: ModuleInfo) -> str:
    """The package a relative import in this module resolves against."""
    if module.path.endswith("__init__.py"):
        return module.module
    return module.module.rpartition(".")[0]


def _rank_tests(target: Target, tests: list[str], doctests: set[str]) -> list[str]:
    """Tests most about this function first: its own doctest, tests named after it, other
    tests, then other functions' doctests (which only pass through it)."""
    own_doctest = f"{target.module}.{target.qualname}"
    name = target.name.strip("_").lower()

    def key(test: str) -> tuple[int, str]:
        if test in doctests:
            rank = 0 if test.endswith("::" + own_doctest) else 3
        else:
            rank = 1 if name and name in test.rsplit("::", 1)[-1].lower() else 2
        return rank, test

    return sorted(tests, key=key)


def _problem(
    sandbox: Sandbox,
    root: Path,
    repo_name: str,
    modules: dict[str, ModuleInfo],
    docs: list[DocParagraph],
    target: Target,
    tests: list[str],
    doctests: set[str],
    files: dict[str, bytes],
    pythonpath: list[str],
    options: MineOptions,
) -> tuple[dict[str, Any], Drop | None]:
    module = modules[target.path]
    body = reference_body(module.text, target)
    prompt = build_prompt(target, module, modules, docs, body, repo_name, options.context_tokens)
    candidates = _rank_tests(target, tests, doctests)[: options.max_checks * 2]
    record: dict[str, Any] = {
        "format": FORMAT,
        "task_id": f"{repo_name}/{target.module}:{target.qualname}",
        "prompt": prompt,
        "entry_point": target.name,
        "canonical_solution": body,
        "repository": repo_name,
        "repository_path": str(root),  # hidden from the sandbox when the suite runs
        "path": target.path,
        "qualname": target.qualname,
        "class_name": target.class_name,
        "hole_line": target.hole_start,
        "indent": target.indent,
        "pythonpath": pythonpath,
        "program_setup": program_setup(
            target.header_names,
            [m.module.split(".")[0] for m in modules.values() if m.module],
            _package_of(module),
        ),
        "repository_zip": pack(files, {target.path: hole_module(module.text, target)}),
    }
    setup = record["program_setup"]  # as the plugin assembles it: setup + prompt + completion
    passing, failures = _passing(
        sandbox, record, candidates, doctests, setup + prompt + body, options
    )
    if not passing:
        return record, Drop(
            target.target_id, "the original body fails its tests in the sandbox", failures[:1500]
        )
    stub = setup + prompt + f"{target.indent}{HOLE}\n"
    still = set(_passing(sandbox, record, passing, doctests, stub, options)[0])
    checks = [t for t in passing if t not in still][: options.max_checks]
    if not checks:
        return record, Drop(
            target.target_id, "no test tells the original body from one raising NotImplementedError"
        )
    record["tests"] = checks
    record["doctest"] = any(t in doctests for t in checks)
    record["features"] = features(
        prompt + body, target.qualname, body, len(target.uses), len(checks)
    )
    record["tier"] = tier(record["features"])
    return record, None


def _passing(
    sandbox: Sandbox,
    record: dict[str, Any],
    tests: list[str],
    doctests: set[str],
    program: str,
    options: MineOptions,
) -> tuple[list[str], str]:
    """The tests among ``tests`` that pass against ``program`` in the sandbox, and the
    failure messages of the others."""
    trial = {
        **record,
        "tests": tests,
        "doctest": any(t in doctests for t in tests),
        "tier": "",
        "features": {},
    }
    problem = problem_from_record(trial, "mining")
    cases = tuple(
        c if i else replace(c, timeout_s=options.check_budget_s)
        for i, c in enumerate(problem.cases)
    )
    problem = replace(problem, cases=cases)
    execution: SampleExecution = sandbox.run(build_request(problem, program))
    if execution.infra_error:
        raise MiningError(
            f"the sandbox failed while checking {record['task_id']}: {execution.infra_error}"
        )
    passed, failures = [], []
    for case in problem.cases:
        outcome = execution.cases.get(case.case_id)
        if outcome is not None and outcome.status == "ok":
            passed.append(case.source)
        elif outcome is not None:
            failures.append(outcome.message or str(outcome.exception or outcome.status))
    return passed, "\n".join(failures)


def print_report(report: MineReport, stream: Any = None) -> None:
    """A short human summary: counts, tiers with features, drop reasons, times."""
    out = stream or sys.stdout
    data = report.to_json()
    print(f"{report.repository}: {data['functions_found']} functions found, "
          f"{data['problems_emitted']} problems emitted, {data['dropped']} dropped", file=out)  # fmt: skip
    print(
        f"tests: {report.tests_run} ran, {report.tests_failed} failed on the original code",
        file=out,
    )
    for name, count in data["per_tier"].items():
        print(f"  {name}: {count}", file=out)
        for problem in report.problems:
            if problem["tier"] == name:
                print(f"    {problem['task_id']}  {problem['features']}", file=out)
    for reason, count in data["drop_reasons"].items():
        print(f"  dropped ({count}): {reason}", file=out)
    print("seconds: " + ", ".join(f"{k} {v}" for k, v in data["seconds"].items()), file=out)
