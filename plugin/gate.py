"""The CI regression gate and run history options of the codeeval-rl plugin.

On the controller, after the core plugin has written ``results.jsonl`` and ``summary.json``,
:func:`pytest_llm_results` records the run in the history database, compares it with the
baseline (``--llm-baseline``) problem by problem, checks the floor (``--llm-fail-under``),
adds ``summary["gate"]`` and ``summary["history"]`` and writes ``OUT/report.html``. With a
baseline or a floor, the session's exit status is the gate's verdict (set last, in
:func:`pytest_sessionfinish`), while failed samples still show as failed tests.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

GATE_KEY = pytest.StashKey["GateState"]()


@dataclass
class GateState:
    """The gate's settings and findings for one session (controller only)."""

    baseline_arg: str | None
    max_drop: float
    confidence: float
    fail_under: float | None
    record: bool
    baseline: Any = None  # RunData of a baseline file, loaded at configure time
    baseline_source: str | None = None  # the baseline actually compared with
    verdicts: list[Any] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    run_id: int | None = None
    history_path: Path | None = None
    report_path: Path | None = None
    done: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.baseline_arg) or self.fail_under is not None

    @property
    def passed(self) -> bool:
        return self.error is None and all(v.passed for v in self.verdicts)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("codeeval", "codeeval-rl: evaluate code written by language models")
    group.addoption(
        "--llm-baseline",
        dest="llm_baseline",
        default=None,
        metavar="PATH|history",
        help="gate against a baseline: an earlier run's summary.json (results.jsonl beside it) or "
        "out dir, or 'history' (the latest run of the same model, suite and split)",
    )
    group.addoption(
        "--llm-max-drop",
        dest="llm_max_drop",
        type=float,
        default=0.0,
        metavar="X",
        help="tolerated absolute drop of pass@1 against the baseline (default 0.0)",
    )
    group.addoption(
        "--llm-fail-under",
        dest="llm_fail_under",
        type=float,
        default=None,
        metavar="P",
        help="fail the session when pass@1 of a suite is below P (0..1)",
    )
    group.addoption(
        "--llm-confidence",
        dest="llm_confidence",
        type=float,
        default=0.95,
        metavar="C",
        help="a drop fails the gate only when the paired test rejects noise at this confidence "
        "(default 0.95)",
    )
    group.addoption(
        "--llm-no-history",
        dest="llm_no_history",
        action="store_true",
        default=False,
        help="do not record this run in the run history ($CODEEVAL_HISTORY)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Check the gate's options and load a baseline file before any work is done."""
    if hasattr(config, "workerinput"):
        return
    max_drop = config.getoption("llm_max_drop", 0.0)
    confidence = config.getoption("llm_confidence", 0.95)
    fail_under = config.getoption("llm_fail_under", None)
    if not 0.0 <= max_drop <= 1.0:
        raise pytest.UsageError(
            f"--llm-max-drop must be in [0, 1] (absolute pass@1), got {max_drop}"
        )
    if not 0.0 < confidence < 1.0:
        raise pytest.UsageError(f"--llm-confidence must be in (0, 1), got {confidence}")
    if fail_under is not None and not 0.0 <= fail_under <= 1.0:
        raise pytest.UsageError(f"--llm-fail-under must be in [0, 1], got {fail_under}")
    state = GateState(
        baseline_arg=config.getoption("llm_baseline", None),
        max_drop=max_drop,
        confidence=confidence,
        fail_under=fail_under,
        record=not config.getoption("llm_no_history", False),
    )
    if state.baseline_arg and state.baseline_arg != "history":
        from harness.report.rundata import RunFileError, load_out_dir

        try:
            state.baseline = load_out_dir(state.baseline_arg)
        except RunFileError as exc:
            raise pytest.UsageError(f"--llm-baseline: bad baseline: {exc}") from None
    config.stash[GATE_KEY] = state


@pytest.hookimpl(optionalhook=True)
def pytest_llm_results(
    config: pytest.Config, rows: list[dict[str, Any]], summary: dict[str, Any], out_dir: Path
) -> None:
    """Record the run, apply the gate and write the report (controller only)."""
    state = config.stash.get(GATE_KEY, None)
    if state is None:
        return
    from harness.history import History

    settings = summary.get("settings") or {}
    model = config.getoption("llm_model", None) or settings.get("model") or ""
    split = settings.get("split") or ""
    suites = list(summary.get("suites") or {})
    history = History()
    state.history_path = history.path
    baseline = _resolve_baseline(state, history, model=model, split=split, suites=suites)
    state.baseline_source = baseline.source if baseline is not None else None
    if state.enabled and state.error is None:
        _judge(state, rows, suites, baseline)
    if state.record:
        try:
            state.run_id = history.record(
                summary=summary,
                rows=rows,
                model=model,
                split=split,
                code_version=code_version(config.rootpath),
                out_dir=out_dir,
                prompts=_prompts(config),
            )
            summary["history"] = {"run_id": state.run_id, "path": str(history.path)}
        except Exception as exc:  # noqa: BLE001 - a broken history must not hide the results
            state.notes.append(f"run not recorded in {history.path}: {exc}")
    summary["gate"] = _gate_summary(state)
    state.done = True
    _write_report(state, rows, summary, out_dir, model, history)


def _prompts(config: pytest.Config) -> dict[str, str]:
    """Each problem's prompt, for the history (a value-based trainer learns from them)."""
    session = config.pluginmanager.get_plugin("codeeval-session")
    problems = getattr(session, "problems", None) or {}
    prompt_of = getattr(problems, "prompt_of", None)  # read without parsing each problem
    if prompt_of is not None:
        return {str(task): str(prompt_of(task)) for task in problems}
    return {str(task): str(getattr(p, "prompt", "")) for task, p in problems.items()}


def _resolve_baseline(
    state: GateState, history: Any, *, model: str, split: str, suites: list[str]
) -> Any:
    from harness.report.rundata import RunFileError, check_suites, load_history_run

    if state.baseline_arg == "history":
        try:
            found = history.latest_comparable(model=model, suites=suites, split=split)
        except Exception as exc:  # noqa: BLE001 - report a broken database as a gate error
            state.error = f"--llm-baseline history: cannot read {history.path}: {exc}"
            return None
        if found is None:
            state.notes.append(
                f"no earlier run of model '{model or '(none)'}' on {', '.join(suites)}"
                f"{' split ' + split if split else ''} in {history.path}: nothing to compare "
                "with, this run becomes the baseline"
            )
            return None
        return load_history_run(found.id, history)
    if state.baseline is not None:
        try:
            check_suites(state.baseline, suites)
        except RunFileError as exc:
            state.error = f"--llm-baseline: bad baseline: {exc}"
            return None
    return state.baseline


def _judge(state: GateState, rows: list[dict[str, Any]], suites: list[str], baseline: Any) -> None:
    from harness.gate import compare_suite, problem_results

    for suite in suites:
        errors = sum(1 for r in rows if r.get("suite") == suite and r.get("status") == "error")
        if errors:
            state.notes.append(
                f"{suite}: {errors} sample(s) ended in an error (infrastructure or data) and are "
                "left out of the comparison"
            )
        state.verdicts.append(
            compare_suite(
                suite,
                problem_results(rows, suite),
                problem_results(baseline.rows, suite) if baseline is not None else None,
                max_drop=state.max_drop,
                confidence=state.confidence,
                fail_under=state.fail_under,
            )
        )


def _gate_summary(state: GateState) -> dict[str, Any]:
    return {
        "enabled": state.enabled,
        "passed": state.passed,
        "baseline": state.baseline_source,
        "max_drop": state.max_drop,
        "confidence": state.confidence,
        "fail_under": state.fail_under,
        "error": state.error,
        "notes": list(state.notes),
        "suites": {v.suite: v.to_json() for v in state.verdicts},
        "report": report_lines(state),
    }


def report_lines(state: GateState) -> list[str]:
    """The gate's report, as printed in the terminal summary."""
    from harness.gate import format_verdict

    lines: list[str] = []
    if state.baseline_source is not None:
        lines.append(f"baseline: {state.baseline_source}")
    for verdict in state.verdicts:
        lines.extend(format_verdict(verdict))
    lines.extend(f"note: {n}" for n in state.notes)
    if state.error:
        lines.append(f"error: {state.error}")
    if state.enabled:
        lines.append(f"gate: {'passed' if state.passed else 'FAILED'}")
    return lines


def _write_report(
    state: GateState,
    rows: list[dict[str, Any]],
    summary: dict[str, Any],
    out_dir: Path,
    model: str,
    history: Any,
) -> None:
    from harness.report import RunData, write_report

    run = RunData(
        label=str(out_dir),
        summary=summary,
        rows=rows,
        source=str(out_dir / "summary.json"),
        run_id=state.run_id,
        model=model,
    )
    try:
        state.report_path = write_report(run, out_dir / "report.html", history)
    except Exception as exc:  # noqa: BLE001 - a plotting failure must not hide the results
        state.notes.append(f"report not written: {type(exc).__name__}: {exc}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Make the exit status the gate's verdict (the core wrote the results before this)."""
    state = session.config.stash.get(GATE_KEY, None)
    if state is None or not state.enabled:
        return
    if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return  # interrupted, internal error, nothing collected: not the gate's call
    if state.error is not None:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    if not state.done:
        return
    input_errors = _input_errors(session.config)
    if not state.passed or input_errors:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        session.exitstatus = pytest.ExitCode.OK


def _input_errors(config: pytest.Config) -> list[Any]:
    core = config.pluginmanager.get_plugin("codeeval-session")
    return list(getattr(core, "input_errors", []) or [])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(GATE_KEY, None)
    if state is None or not (state.done or state.error):
        return
    tr = terminalreporter
    tr.section("codeeval gate" if state.enabled else "codeeval history and report")
    for line in report_lines(state):
        red = line.startswith(("error:", "gate: FAILED")) or "-- FAILED" in line
        green = line == "gate: passed"
        tr.write_line(line, red=red, green=green)
    if state.run_id is not None:
        tr.write_line(f"history: recorded as run {state.run_id} in {state.history_path}")
    if state.report_path is not None:
        tr.write_line(f"report: {state.report_path}")


def code_version(root: Path | None = None) -> str:
    """The package version, plus ``git describe`` of the project when it is a git checkout."""
    try:
        version = importlib.metadata.version("codeeval-rl")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=root or Path.cwd(),
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return version
    described = out.stdout.strip()
    return f"{version} (git {described})" if out.returncode == 0 and described else version
