"""Score completions from Python, through the same generated suites and sandbox as the plugin.

    rows = evaluate(problems, samples, reward="weighted")

Each call compiles the samples into a generated suite and runs it in a real pytest session
(in this process by default, so the sandbox's fork server is reused across calls, as a trainer
needs), then returns the ``results.jsonl`` rows: verdicts, per-case outcomes and, with a
reward, ``analyzers``, ``reward``, ``reward_parts`` and ``feedback``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.compile import SuiteSettings, compile_suite
from harness.records import Problem, Sample

if TYPE_CHECKING:
    from harness.executors import Executor


class EvaluationError(RuntimeError):
    """The pytest session that scores the samples could not run."""


class _Collector:
    """Receives the rows from the session (a pytest plugin object)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] | None = None

    def pytest_llm_results(
        self, config: pytest.Config, rows: list[dict[str, Any]], summary: dict, out_dir: Path
    ) -> None:
        self.rows = rows


def evaluate(
    problems: Sequence[Problem],
    samples: Sequence[Sample],
    *,
    reward: Any = None,
    out_dir: str | Path | None = None,
    workers: int = 0,
    timeout_s: float | None = None,
    memory_mb: int = 1024,
    quiet: bool = True,
    pytest_session: bool = False,
    executor: str | Executor = "local",
    address: str | None = None,
    row_extras: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate ``samples`` of ``problems``; rows in the order of ``samples``.

    ``reward``: None, a preset name or YAML path, or a loaded ``RewardConfig``.
    ``workers``: 0 runs in this process; N > 0 uses N pytest-xdist workers.
    ``pytest_session``: run the generated suite in a real pytest session even with 0 workers.
    By default (0 workers) the suite's check functions are judged right here, without a
    session per call: the same generated modules, the same sandbox and the same judging code
    as the plugin's items (:mod:`harness.verdicts`), so the rows are the same either way.
    ``out_dir``: where results go (default: a folder per problem set under the temp folder,
    reused by later calls so pytest's caches stay warm).
    ``executor``: where the batch is scored: ``"local"`` (this process), ``"ray"`` (Ray
    actors, the batch split by problem; :mod:`harness.executors.ray_executor`) or any
    :class:`harness.executors.Executor`; the rows are the same. ``address``: an existing Ray
    cluster's (``ray://host:10001`` or ``auto``); default: the connected one, or a new local one.
    ``row_extras``: one dict per sample (in the order of ``samples``) put on its row before the
    reward is computed: what a trainer knows beside the program (MAGRPO's ``agent_code`` and
    ``required_methods`` for ClassEval's class levels). The batch is otherwise scored exactly
    as without them: the reward config's allow-list, limits and coverage all apply.
    """
    if row_extras is not None and len(row_extras) != len(samples):
        raise ValueError(
            f"row_extras has {len(row_extras)} entries for {len(samples)} samples: one per sample"
        )
    if not isinstance(executor, str) or executor != "local" or address is not None:
        from harness.executors import executor_for

        chosen = executor_for(executor, address) if isinstance(executor, str) else executor
        options = dict(reward=reward, out_dir=out_dir, workers=workers, timeout_s=timeout_s)
        options.update(memory_mb=memory_mb, quiet=quiet, pytest_session=pytest_session)
        if row_extras is not None:  # only when given: an executor without them still works
            options["row_extras"] = row_extras
        return chosen.evaluate(problems, samples, **options)
    from harness.sandbox import SandboxSettings
    from harness.sandbox.probe import check_sandbox
    from harness.sandbox.shared import shared_sandbox
    from harness.timeouts import prepare_problems

    if not samples:
        return []
    reward_config = _reward_config(reward)
    known = {p.task_id for p in problems}
    unknown = sorted({s.task_id for s in samples} - known)
    if unknown:
        raise ValueError(
            f"samples name tasks that are not among the problems: {', '.join(unknown[:5])}"
        )
    if reward_config is not None:  # its allow-list joins each problem's (harness.deps)
        from harness.deps.resolve import apply_run_dependencies, reward_dependencies

        problems = apply_run_dependencies(problems, *reward_dependencies(reward_config))
    if reward_config is not None and reward_config.memory_limit:
        memory_mb = reward_config.memory_limit  # the reward's evaluation limits bind the sandbox
    cap = reward_config.test_timeout if reward_config is not None else None
    out = (Path(out_dir) if out_dir is not None else _default_out_dir()).resolve()
    root = out / "suite"
    root.mkdir(parents=True, exist_ok=True)
    # The sandbox that probes and calibrates is the one the suite runs in (its folder hidden).
    from harness.mining.problem import hide_paths as mined_repositories

    mined = mined_repositories(problems)  # original repositories of mined problems
    sandbox_settings = SandboxSettings(memory_mb=memory_mb, hide_paths=(*mined, str(root)))
    check_sandbox(sandbox_settings)  # SandboxUnusable: one message, why and what to do
    sandbox = shared_sandbox(sandbox_settings)
    needs_coverage = bool(reward_config is not None and reward_config.needs_coverage)
    timed = prepare_problems(
        problems, sandbox, coverage=needs_coverage, override_s=timeout_s, cap_s=cap
    )
    settings = SuiteSettings(
        memory_mb=memory_mb,
        coverage=bool(reward_config is not None and reward_config.needs_coverage),
        hide_paths=mined,
    )
    compiled = compile_suite(timed, _unique_ids(samples), root, settings)
    if workers or pytest_session:
        _forget_modules(compiled.rewritten)
        rows = _run_session(root, out, workers, quiet)
    else:
        rows = _judge_here(root)
        _write_rows(out, rows)
    if row_extras is not None:
        rows = with_extras(rows, _unique_ids(samples), row_extras)
    if reward_config is not None:
        from harness.reward import score_rows

        rows = score_rows(rows, {p.task_id: p for p in timed}, reward_config)
    order = {(s.task_id, s.sample_id): i for i, s in enumerate(_unique_ids(samples))}
    rows.sort(key=lambda r: order.get((r["task_id"], r["sample_id"]), len(order)))
    return rows


def _run_session(root: Path, out: Path, workers: int, quiet: bool) -> list[dict[str, Any]]:
    collector = _Collector()
    # Its own ini: the caller's pytest configuration (addopts, testpaths) must not leak in.
    # Root "/" makes module names full paths, so two folders never share a cached module.
    ini = out / "pytest.ini"
    ini.write_text("[pytest]\n")
    args = [
        "--llm-compiled", str(root), "--llm-out", str(out), "-c", str(ini), "--rootdir", "/",
        "--import-mode=importlib", "-p", "no:cacheprovider", "-p", "no:codeeval_gate", "-q", "--no-header",
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
    ]  # fmt: skip
    if workers:
        args += ["-n", str(workers)]
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
        code = pytest.main(args, plugins=[collector])
    if collector.rows is None:
        raise EvaluationError(
            f"the evaluation session ended with {code!r} before writing results:\n"
            f"{sink.getvalue()[-3000:]}"
        )
    return collector.rows


def _judge_here(root: Path) -> list[dict[str, Any]]:
    """The rows of a compiled suite, judged in this process (no pytest session)."""
    from harness.results import CaseOutcome, SampleOutcomes, build_row, execution_record
    from harness.runtime import READ_AHEAD, loaded_suite
    from harness.verdicts import case_functions, judge_sample, load_check_module

    suite = loaded_suite(root)
    keys = [(row["task_id"], row["sample_id"]) for row in suite.sample_rows]
    functions = {}
    rows = []
    for index, (key, sample) in enumerate(zip(keys, suite.sample_rows, strict=True)):
        suite.plan(keys[index : index + READ_AHEAD + 1])
        problem = suite.problems[key[0]]
        if key[0] not in functions:
            module = load_check_module(suite.module_paths[key[0]])
            functions[key[0]] = case_functions(problem, module)
        outcomes = SampleOutcomes(problem.suite, key[0], key[1])
        try:
            execution, _ = suite.execution_with_retry(*key)
            outcomes.execution = execution_record(execution)
            verdicts = judge_sample(problem, functions[key[0]], execution)
        except Exception as exc:  # noqa: BLE001 - the harness's fault: this sample's row says so
            reason = f"not judged: {type(exc).__name__}: {exc}"[:300]
            verdicts = [CaseOutcome(c.case_id, "error", reason) for c in problem.cases]
        outcomes.cases = {v.case_id: v for v in verdicts}
        rows.append(build_row(problem, outcomes, sample))  # one row per sample, always
    return rows


def _write_rows(out: Path, rows: list[dict[str, Any]]) -> None:
    """results.jsonl and summary.json, as the pytest session writes them."""
    from harness.results import summarize

    with open(out / "results.jsonl", "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    summary = summarize(rows, [1], {"path": "in-process"})
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def _forget_modules(paths: Sequence[Path]) -> None:
    """Drop imported test modules whose files changed: pytest's importlib mode would reuse them."""
    changed = {str(p.resolve()) for p in paths}
    if not changed:
        return
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py") and str(Path(file).resolve()) in changed:
            del sys.modules[name]


def with_extras(
    rows: Sequence[dict[str, Any]],
    samples: Sequence[Sample],
    extras: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """``rows`` with each sample's extras added (``samples`` with their unique ids, as the rows
    name them; ``extras`` in their order)."""
    by_key = {(s.task_id, s.sample_id): e for s, e in zip(samples, extras, strict=True)}
    return [{**row, **by_key.get((row["task_id"], row["sample_id"]), {})} for row in rows]


def _reward_config(reward: Any) -> Any:
    if reward is None:
        return None
    if isinstance(reward, (str, os.PathLike)):
        from harness.reward import load_reward_config

        return load_reward_config(str(reward))
    return reward


def _unique_ids(samples: Sequence[Sample]) -> list[Sample]:
    """Samples whose ids are unique within their task (missing or repeated ids get an index)."""
    seen: dict[str, set[str]] = {}
    result = []
    for sample in samples:
        ids = seen.setdefault(sample.task_id, set())
        sample_id = sample.sample_id
        if not sample_id or sample_id in ids:
            sample_id = str(len(ids))
            while sample_id in ids:
                sample_id += "_"
            sample = Sample(**{**sample.__dict__, "sample_id": sample_id})
        ids.add(sample_id)
        result.append(sample)
    return result


def _default_out_dir() -> Path:
    """One folder per process, reused by every call.

    Its suite folder is hidden from its own fork server, so a trainer's batches all run on one
    warm server (a folder per problem set would start a server per set); an unchanged module
    is not rewritten, and concurrent processes never write into each other's suite.
    """
    return Path(tempfile.gettempdir()) / f"codeeval-{os.getuid()}" / f"eval-{os.getpid()}"
