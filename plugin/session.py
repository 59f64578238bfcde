"""The controller side of an evaluation: build the suite, gather verdicts, write the results.

One :class:`EvalSession` is registered on the controller (never on xdist workers) when
``--llm-eval`` or ``--llm-compiled`` is given.
"""

from __future__ import annotations

import functools
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from harness.jsonlines import dumps, loads
from harness.pipeline.compile import PROBLEMS_FILE, SAMPLE_COSTS, SAMPLES_FILE, load_manifest
from harness.pipeline.problem_file import ProblemFile
from harness.pipeline.results import CaseOutcome, SampleOutcomes, build_row, summarize
from harness.records import Problem, Sample
from plugin.lookup import ROW_ATTR

SUITE_FOLDER = "suite"


class EvalSession:
    """Builds the generated suite at configure time and writes results at the end."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.out_dir = Path(config.getoption("llm_out")).resolve()
        self.ks = _parse_ks(config.getoption("llm_k"))
        self.input_errors: list[str] = []
        self.outcomes: dict[tuple[str, str], SampleOutcomes] = {}
        self.started = time.time()
        self.rows: list[dict[str, Any]] = []
        self.summary: dict[str, Any] = {}
        compiled = config.getoption("llm_compiled")
        if compiled:
            self.root = Path(compiled).resolve()
            self.settings = load_manifest(self.root)["settings"]
        else:
            self.root = self.out_dir / SUITE_FOLDER
            self.settings = self._build_suite()
        # Parsed when first asked for: the controller needs most problems' suite alone.
        self.problems = ProblemFile(self.root / PROBLEMS_FILE)
        # Read beside the workers' start (tens of milliseconds for thousands of samples, each
        # with its program), not before it: the rows need them, the start does not.
        samples_path = self.root / SAMPLES_FILE
        samples_path.stat()  # a suite without it fails here, as it always did
        reader = ThreadPoolExecutor(1, thread_name_prefix="codeeval-samples")
        self._samples_future = reader.submit(_read_jsonl, samples_path)
        reader.shutdown(wait=False)
        self._built: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
        # Rows built where the samples were judged (a sample item's call report carries its
        # row's JSON text): kept as text, parsed once at the end.
        self._texts: dict[tuple[str, str], str] = {}
        self._modules: dict[tuple[str, str], str] | None = None  # (folder, file) -> task id
        # A run narrowed to some samples (-k, -m, --deselect, --lf, node ids) writes rows for
        # those; any other run writes one row for every sample given.
        option = config.option
        self.narrowed = bool(
            getattr(option, "keyword", "")
            or getattr(option, "markexpr", "")
            or getattr(option, "deselect", None)
            or getattr(option, "lf", False)
            or (config.args_source == pytest.Config.ArgsSource.ARGS and config.args)
        )
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            config.args.append(str(self.root))
        else:
            config.args[:] = [str(self.root)]

    @functools.cached_property
    def samples(self) -> list[dict[str, Any]]:
        """The suite's samples.jsonl rows, in its order."""
        return self._samples_future.result()

    @functools.cached_property
    def _samples_by_key(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {(s["task_id"], s["sample_id"]): s for s in self.samples}

    # -- building the suite -------------------------------------------------------------------
    def _build_suite(self) -> dict[str, Any]:
        from harness.pipeline.prepare import RunSettings, RunSetupError, prepare_suite
        from harness.plus import only_for, request_plus  # plus cases: made in prepare_problems

        config = self.config
        data_dir = config.getoption("llm_data_dir")
        settings = RunSettings(
            reward=config.getoption("llm_reward"),
            memory_mb=config.getoption("llm_memory_mb"),
            timeout_s=config.getoption("llm_timeout"),
            hide_paths=(data_dir,) if data_dir else (),
            extra={
                "suites": config.getoption("llm_eval").split(","),
                "split": config.getoption("llm_split"),
                "samples": config.getoption("llm_samples"),
                "k": self.ks,
                "plus": config.getoption("llm_plus"),
            },
            session_scores=True,
            every_case=bool(config.getoption("llm_every_case") or config.getoption("llm_per_case")),
        )
        problems = self._load_problems()
        try:
            samples = self._load_samples(problems, settings)
            if config.getoption("llm_plus") is not None:
                problems = request_plus(problems, config.getoption("llm_plus"))
            problems = only_for(problems, {s.task_id for s in samples})
            # The folder is kept: unchanged modules keep pytest's rewritten bytecode
            # (compile_suite removes modules of problems no longer in the run).
            prepare_suite(problems, samples, self.root, settings)
        except RunSetupError as exc:
            option = "--llm-reward " if exc.setting == "reward" else ""
            raise pytest.UsageError(f"{option}{exc}") from None
        return load_manifest(self.root)["settings"]

    def _load_problems(self) -> list[Problem]:
        from suites import load_suite

        problems: list[Problem] = []
        for name in self.config.getoption("llm_eval").split(","):
            try:
                problems += load_suite(
                    name.strip(),
                    split=self.config.getoption("llm_split"),
                    data_dir=self.config.getoption("llm_data_dir"),
                )
            except (OSError, ValueError) as exc:  # SuiteError and SplitError are ValueErrors
                raise pytest.UsageError(f"--llm-eval {name.strip()}: {exc}") from None
        seen: dict[str, str] = {}
        for problem in problems:  # task ids key samples and results: they must not repeat
            other = seen.setdefault(problem.task_id, problem.suite)
            if other != problem.suite:
                raise pytest.UsageError(
                    f"--llm-eval: {other} and {problem.suite} share task ids ({problem.task_id}), "
                    "and results are keyed by task id: evaluate them in separate runs (a plus "
                    "suite already reports pass@k on the original checks beside its own, in "
                    "summary.json: suites.<suite>.base)"
                )
        return problems

    def _load_samples(self, problems: list[Problem], settings: Any) -> list[Sample]:
        from harness.pipeline.prepare import check_setup
        from harness.samples import canonical_samples, read_samples

        source = self.config.getoption("llm_samples")
        if source == "canonical":
            return canonical_samples(problems)
        if source is None:
            # Whatever can refuse the run is checked before a model loads: the suite and its
            # data (loaded above), the reward config and the sandbox here, the model's
            # registry entry in the generation hook.
            check_setup(problems, self.root, settings)
            self.out_dir.mkdir(parents=True, exist_ok=True)
            generated = self.config.hook.pytest_llm_generate_samples(
                config=self.config, problems=problems, out_dir=self.out_dir
            )
            if generated is None:
                raise pytest.UsageError(
                    "--llm-eval needs samples: give --llm-samples FILE (or 'canonical'), or a model "
                    "with --llm-model NAME"
                )
            source = str(generated)
        if not Path(source).is_file():
            raise pytest.UsageError(f"--llm-samples {source}: no such file (or 'canonical')")
        samples, problems_found = read_samples(Path(source), {p.task_id: p for p in problems})
        self.input_errors = [str(p) for p in problems_found]
        return samples

    # -- xdist ----------------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_newgateway(self, gateway: Any) -> None:
        from plugin.remote import before_node_setup

        before_node_setup(self.config, gateway)  # no controller paths in a remote's arguments

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["codeeval_suite_dir"] = str(self.root)
        from plugin.batch import SETTINGS_KEY, node_settings
        from plugin.queueing import queue_without_debug_lines
        from plugin.remote import prepare_node

        queue_without_debug_lines(node)  # its messages: no debug line built unless --debug

        prepare_node(self.config, node, self.root)  # remote workers get the suite itself
        settings = node_settings(self.config, node)  # local workers report in batches
        if settings is not None:
            node.workerinput[SETTINGS_KEY] = settings

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.samples:
            from plugin.remote import report_empty_worker

            report_empty_worker(self.config, node, ids, self.root)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        # Shares of samples sent ahead (plugin.scheduler): every worker busy from the first
        # sample to the last, every case of a sample on one worker, read-ahead kept.
        if config.getvalue("dist") in ("load", "loadfile"):
            from plugin.batch import BatchReceiver
            from plugin.scheduler import ModuleScheduling

            costs = load_manifest(self.root).get(SAMPLE_COSTS)  # absent in older suites
            return ModuleScheduling(config, log, receiver=BatchReceiver(config), costs=costs)
        return None

    # -- gathering verdicts ---------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = getattr(report, ROW_ATTR, None)
        if row is not None and (report.when == "call" or report.failed):
            task_id, sample_id, text = row
            if task_id in self.problems:
                self._texts[(task_id, sample_id)] = text
            return
        props = dict(report.user_properties).get("codeeval")
        if not props:
            key = self._sample_of(report.nodeid)
            if key is not None and report.failed:  # e.g. its worker crashed while judging it
                self._unjudged(key, report)
            return
        key = (props["task_id"], props["sample_id"])
        if key[0] not in self.problems:
            return
        outcomes = self._outcomes(key)
        if props.get("execution"):
            outcomes.execution = props["execution"]
        if "cases" in props:  # a sample item: every case's verdict at once
            if report.when == "call" or report.failed:
                for case_id, status, message, duration in props["cases"]:
                    outcomes.cases[case_id] = CaseOutcome(case_id, status, message, duration)
                # The row is built now, while the controller waits for workers, not at the end.
                self._built[key] = self._row(key, outcomes)
            return
        if "case_id" not in props:
            if report.failed:  # a sample item that failed before judging its cases
                self._unjudged(key, report)
            return
        status = _case_status(report, props)
        if status is None:
            return
        message = ""
        if report.failed or hasattr(report, "wasxfail"):
            message = _short_message(report)
        outcomes.cases[props["case_id"]] = CaseOutcome(
            props["case_id"], status, message, float(props.get("case_duration_s", report.duration))
        )

    def _outcomes(self, key: tuple[str, str]) -> SampleOutcomes:
        outcomes = self.outcomes.get(key)
        if outcomes is None:
            suite = self.problems.suite_of(key[0])
            outcomes = self.outcomes[key] = SampleOutcomes(suite, key[0], key[1])
        return outcomes

    def _sample_of(self, nodeid: str) -> tuple[str, str] | None:
        """The sample of a sample item's node id (``.../<suite>/test_<task>.py::sample[ID]``)."""
        path, _, name = nodeid.partition("::")
        if not (name.startswith("sample[") and name.endswith("]")):
            return None
        if self._modules is None:
            from harness.pipeline.compile import module_file

            self._modules = {}
            for task_id, suite in self.problems.suites.items():
                module = module_file(self.root, suite, task_id)
                self._modules[(module.parent.name, module.name)] = task_id
        parts = path.replace("\\", "/").split("/")
        task_id = self._modules.get((parts[-2] if len(parts) > 1 else "", parts[-1]))
        return None if task_id is None else (task_id, name[len("sample[") : -1])

    def _unjudged(self, key: tuple[str, str], report: pytest.TestReport) -> None:
        """A sample whose item failed without verdicts: every case undecided gets the reason."""
        if key in self._texts:  # judged already (a later phase failed): its row stands
            return
        reason = _short_message(report) or "the item failed"
        status = _unjudged_status(reason)
        self._fill(key, status, f"not judged: {reason}")

    def _fill(self, key: tuple[str, str], status: str, message: str) -> None:
        outcomes = self._outcomes(key)
        for case in self.problems[key[0]].cases:
            if case.case_id not in outcomes.cases:
                outcomes.cases[case.case_id] = CaseOutcome(case.case_id, status, message)
        self._built.pop(key, None)

    def _fill_missing(self, session: pytest.Session) -> None:
        """One row for every sample given that no report reached: the summary counts every
        sample, so pass@k is never computed over the rest alone."""
        if self.narrowed:
            return
        stopped = session.shouldstop or session.shouldfail
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:
            why = "the run was interrupted"
        elif stopped:
            why = f"the run stopped early ({stopped})"
        else:
            why = "no report of it arrived"
        for sample in self.samples:
            key = (sample["task_id"], sample["sample_id"])
            if key not in self.outcomes and key not in self._texts and key[0] in self.problems:
                self._fill(key, "error", f"not judged: {why}")

    # -- writing results ------------------------------------------------------------------------
    def _row(self, key: tuple[str, str], outcomes: SampleOutcomes) -> tuple[dict[str, Any], str]:
        """The results.jsonl row of a sample, and its JSON text when no reward will change it."""
        row = build_row(self.problems[key[0]], outcomes, self._samples_by_key.get(key, {}))
        return row, "" if self.settings.get("reward") else dumps(row)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._fill_missing(session)
        built: list[tuple[tuple[str, str], dict[str, Any] | None, str]] = [
            (key, None, text) for key, text in self._texts.items()
        ]
        for key, outcomes in self.outcomes.items():
            if key not in self._texts:
                built.append((key, *(self._built.get(key) or self._row(key, outcomes))))
        keys = self.outcomes.keys() | self._texts
        tasks = {task_id: _natural(task_id) for task_id in {task_id for task_id, _ in keys}}
        ids = {sample_id: _natural(sample_id) for sample_id in {sample_id for _, sample_id in keys}}
        suite_of = self.problems.suite_of
        built.sort(key=lambda b: (suite_of(b[0][0]), tasks[b[0][0]], ids[b[0][1]]))
        rows = [row if row is not None else loads(text) for _, row, text in built]
        reward = self.settings.get("reward")
        if reward:
            from harness.reward import load_reward_config, score_rows

            rows = score_rows(rows, self.problems, load_reward_config(reward))
        settings = {
            **self.settings.get("extra", {}),
            "reward": reward,
            "wall_time_s": round(time.time() - self.started, 3),
        }
        summary = summarize(rows, self.ks, settings)
        summary["input_errors"] = self.input_errors
        self.rows, self.summary = rows, summary
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with open(self.out_dir / "results.jsonl", "w", encoding="utf-8") as fh:
            if reward:
                fh.writelines(json.dumps(row) + "\n" for row in rows)
            else:
                fh.writelines(text + "\n" for _, _, text in built)
        self._write_summary()
        self.config.hook.pytest_llm_results(
            config=self.config, rows=rows, summary=summary, out_dir=self.out_dir
        )
        self._write_summary()
        if self.input_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _write_summary(self) -> None:
        (self.out_dir / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        tr.section("codeeval summary")
        for line in self.input_errors:
            tr.write_line(f"input error: {line}", yellow=True)
        ks = sorted({k for entry in self.summary.get("suites", {}).values() for k in _ks_of(entry)})
        header = f"{'suite':<18}{'problems':>9}{'samples':>9}{'passed':>8}{'failed':>8}{'timeout':>8}{'errors':>8}"
        header += "".join(f"{'pass@' + str(k):>10}" for k in ks)
        tr.write_line(header)
        for suite, entry in self.summary.get("suites", {}).items():
            if len(suite) > 17:  # jsonl:/a/long/path/problems.jsonl
                suite = "…" + suite[-16:]
            line = f"{suite:<18}{entry['problems']:>9}{entry['samples']:>9}{entry['passed']:>8}"
            line += f"{entry['failed']:>8}{entry['timeout']:>8}{entry['errors'] + entry['data_errors']:>8}"
            line += _pass_at_cells(entry, ks)
            tr.write_line(line)
        languages = self.summary.get("languages", {})
        if len(languages) > 1 or any(len(e.get("suites", ())) > 1 for e in languages.values()):
            for language, entry in languages.items():  # pooled over the language's suites
                line = f"{'[' + language + ']':<18}{entry['problems']:>9}{entry['samples']:>9}"
                line += f"{entry['passed']:>8}{entry['failed']:>8}{entry['timeout']:>8}"
                line += f"{entry['errors'] + entry['data_errors']:>8}"
                line += _pass_at_cells(entry, ks)
                tr.write_line(line)
        for suite, entry in self.summary.get("suites", {}).items():
            if "base" in entry:  # a suite with plus cases (harness.plus)
                pairs = ", ".join(
                    f"{key} {entry['base'][key]:.3f} -> {entry[key]:.3f}"
                    for key in entry["base"]
                    if key.startswith("pass@") and key in entry
                )
                tr.write_line(f"{suite}: original checks -> with plus cases: {pairs}")
        for item in self.summary.get("data_errors", []):
            tr.write_line(
                f"data error (not counted): {item['task_id']}: {item['reason']}", yellow=True
            )
        tr.write_line(
            f"results: {self.out_dir / 'results.jsonl'}  summary: {self.out_dir / 'summary.json'}"
        )
        tr.write_line(f"generated suite (rerun with plain pytest): {self.root}")
        if self.config.option.tbstyle == "no":
            tr.write_line("per-case failure messages: results.jsonl (or here with --tb=line -rf)")


def _case_status(report: pytest.TestReport, props: dict[str, Any]) -> str | None:
    """The case's status from its report, or None while the case is not decided yet."""
    if report.when == "setup":
        if report.failed:
            return "error"
        if report.skipped and hasattr(report, "wasxfail"):
            return None
        return "skipped" if report.skipped else None
    if report.when != "call":
        return "error" if report.failed else None
    if hasattr(report, "wasxfail"):
        return "passed" if report.passed else "failed"
    if report.passed:
        return "passed"
    if props.get("sandbox_status") == "timeout":
        return "timeout"
    if props.get("sandbox_status") == "error":
        return "error"
    return "failed"


def _unjudged_status(reason: str) -> str:
    """The verdict of a sample item that failed before its verdicts were made: pytest-timeout's
    guard is the sample's timeout, and a worker that died while judging it died on the
    candidate's values (only those are judged there); anything else is the harness's error."""
    if "Timeout" in reason and "pytest-timeout" in reason:
        return "timeout"
    if "crashed while running" in reason:
        return "failed"
    return "error"


def _short_message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = (
        crash.message
        if crash is not None
        else str(report.longrepr or getattr(report, "wasxfail", ""))
    )
    return text.strip()[:300]


def _parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(k) for k in text.split(",") if k.strip()})
    except ValueError:
        raise pytest.UsageError(
            f"--llm-k takes integers separated by commas, got {text!r}"
        ) from None
    if not ks or ks[0] < 1:
        raise pytest.UsageError(f"--llm-k values must be >= 1, got {text!r}")
    return ks


def _ks_of(entry: dict[str, Any]) -> list[int]:
    return [int(key.split("@")[1]) for key in entry if key.startswith("pass@")]


def _pass_at_cells(entry: dict[str, Any], ks: list[int]) -> str:
    """The terminal table's pass@k columns; "-" where a suite has no such k (none at all
    when no sample of it could be judged: only errors and data errors)."""
    cells = []
    for k in ks:
        value = entry.get(f"pass@{k}")
        cells.append(f"{'-':>10}" if value is None else f"{value:>10.3f}")
    return "".join(cells)


_DIGITS = re.compile(r"(\d+)")


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path) as fh:
        return [loads(line) for line in fh if line.strip()]
