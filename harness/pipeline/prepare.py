"""Prepare a run: reward config, dependencies, limits, the sandbox, time limits, the suite.

Every way in (the plugin's session, :func:`harness.evaluate.evaluate`, the executors' actors)
prepares a batch with :func:`prepare_suite`, so a fix here is a fix for all.
A setting that cannot work raises :class:`RunSetupError` naming the setting; the plugin shows
it as a usage error.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from harness.pipeline.compile import CompiledSuite, SuiteSettings, compile_suite
from harness.pipeline.steps import run_problem_steps
from harness.pipeline.timeouts import prepare_problems
from harness.records import EVERY_CASE, MEMORY_MB, Problem, Sample
from harness.sandbox import Sandbox, SandboxSettings
from harness.sandbox.probe import ProbedFirst, SandboxUnusable, check_sandbox, start_probe
from harness.sandbox.shared import shared_sandbox


class RunSetupError(ValueError):
    """A run that cannot start; ``setting`` names what to change (``reward``, ``sandbox``)."""

    def __init__(self, setting: str, message: str):
        super().__init__(message)
        self.setting = setting


@dataclass(frozen=True)
class RunSettings:
    """How a batch is judged (the same for every way in)."""

    reward: Any = None  # None, a preset name, a YAML path, or a loaded RewardConfig
    # The sandbox's memory cap (a reward config's limit wins); a problem may ask for more
    # (``metadata["memory_mb"]``: EvalPlus's, evalplus's own 4 GiB), and then gets it.
    memory_mb: int = 1024
    timeout_s: float | None = None  # replaces every case's calibrated limit
    hide_paths: tuple[str, ...] = ()  # folders the candidate must not see (a data folder)
    extra: Mapping[str, Any] = field(default_factory=dict)  # recorded in the manifest
    # Name the reward in the manifest, so the pytest session scores the rows (the plugin, and a
    # later plain `pytest OUT/suite`); evaluate() scores them itself, after its row extras.
    session_scores: bool = False
    # Judge every case of every sample, even after one failed (per-case detail): problems
    # that stop at their first failed case when only the verdict is wanted then do not.
    every_case: bool = False


@dataclass
class PreparedSuite:
    """A compiled suite, and what judging and scoring it need."""

    root: Path
    problems: list[Problem]  # with calibrated time limits and data defects
    reward_config: Any  # the loaded RewardConfig, or None
    compiled: CompiledSuite


def load_reward(reward: Any) -> Any:
    """The loaded reward config of ``reward`` (a preset name, a YAML path, or a config)."""
    if reward is None or reward == "":
        return None
    if not isinstance(reward, (str, os.PathLike)):
        return reward
    from harness.reward import load_reward_config

    try:
        return load_reward_config(str(reward))
    except (OSError, ValueError) as exc:
        raise RunSetupError("reward", f"{reward}: {exc}") from None


def unique_ids(samples: Sequence[Sample]) -> list[Sample]:
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


def hidden_sources(problems: Iterable[Problem]) -> list[str]:
    """Folders a problem names as its answer's source (a mined problem's repository): the
    candidate must not read the body it should write from there."""
    found = {p for problem in problems for p in problem.metadata.get("hide_paths", ())}
    return sorted(p for p in found if Path(p).exists())


def check_setup(
    problems: Sequence[Problem], root: Path, settings: RunSettings
) -> tuple[Any, SandboxSettings]:
    """The run's loaded reward config and its sandbox's settings, both checked: a reward
    config that does not load, or a sandbox that cannot run candidates here, raises
    :class:`RunSetupError` within seconds. A caller with a long step before
    :func:`prepare_suite` (a model generating the samples) calls it first; the probe's
    outcome is cached, so :func:`prepare_suite` does not pay for it twice."""
    reward_config, sandbox_settings = _unprobed_setup(problems, root, settings)
    try:
        check_sandbox(sandbox_settings)
    except SandboxUnusable as exc:
        raise RunSetupError("sandbox", str(exc)) from None
    return reward_config, sandbox_settings


def _unprobed_setup(
    problems: Sequence[Problem], root: Path, settings: RunSettings
) -> tuple[Any, SandboxSettings]:
    """:func:`check_setup` before its sandbox probe."""
    reward_config = load_reward(settings.reward)
    memory_mb = settings.memory_mb
    if reward_config is not None:
        memory_mb = reward_config.memory_limit or memory_mb
    memory_mb = max([memory_mb, *(int(p.metadata.get(MEMORY_MB, 0)) for p in problems)])
    root.mkdir(parents=True, exist_ok=True)  # hidden from the first server start on
    hidden = [*settings.hide_paths, *hidden_sources(problems)]
    sandbox_settings = SandboxSettings(memory_mb=memory_mb, hide_paths=(*hidden, str(root)))
    return reward_config, sandbox_settings


def prepare_suite(
    problems: Sequence[Problem], samples: Sequence[Sample], root: Path, settings: RunSettings
) -> PreparedSuite:
    """Compile ``samples`` of ``problems`` into ``root``, ready to judge.

    The reward config's allow-list joins each problem's dependencies, its limits bind the
    sandbox, and each problem gets per-case time limits from its reference (calibrated in
    the very sandbox the samples will run in: the suite folder and ``hide_paths`` hidden).
    The sandbox is probed (:func:`check_setup`) while the suite is prepared: its server
    starts and runs the probe beside this work, and nothing runs in it before the probe
    passed.
    """
    reward_config, sandbox_settings = _unprobed_setup(problems, root, settings)
    start_probe(sandbox_settings)
    memory_mb = sandbox_settings.memory_mb
    cap_s = None
    coverage = False
    every_case = settings.every_case
    if reward_config is not None:
        problems = _with_reward_dependencies(problems, reward_config, settings.reward)
        cap_s = reward_config.test_timeout
        coverage = bool(reward_config.needs_coverage)
        every_case = every_case or coverage or reward_config.every_case
    if every_case:
        problems = [_every_case(p) for p in problems]
    hidden = [*settings.hide_paths, *hidden_sources(problems)]
    suite_settings = SuiteSettings(
        memory_mb=memory_mb,
        coverage=coverage,
        hide_paths=hidden,
        reward=str(settings.reward) if settings.session_scores and settings.reward else None,
        extra={**settings.extra, "timeout": settings.timeout_s},
    )
    # The sandbox's own interface, each sample after the probe's verdict.
    sandbox = cast(Sandbox, ProbedFirst(shared_sandbox(sandbox_settings), sandbox_settings))
    try:
        problems = run_problem_steps(problems, sandbox)  # products' steps (plus cases) first
        timed = prepare_problems(
            problems, sandbox, coverage=coverage, override_s=settings.timeout_s, cap_s=cap_s
        )
        compiled = compile_suite(timed, samples, root, suite_settings)
        check_sandbox(sandbox_settings)  # by now only the probe's own sample is left to wait for
    except SandboxUnusable as exc:
        raise RunSetupError("sandbox", str(exc)) from None
    return PreparedSuite(root, timed, reward_config, compiled)


def _every_case(problem: Problem) -> Problem:
    """``problem`` flagged to have every case judged (a partial-credit reward, coverage or
    per-case detail asks for it)."""
    return dataclasses.replace(problem, metadata={**problem.metadata, EVERY_CASE: True})


def _with_reward_dependencies(
    problems: Sequence[Problem], reward_config: Any, reward: Any
) -> list[Problem]:
    """Each problem's dependencies plus the reward config's allow-list (harness.deps): each
    runs with its overlay, or is a data defect naming ``codeeval deps fetch``."""
    from harness.deps.resolve import apply_run_dependencies, reward_dependencies

    try:
        return apply_run_dependencies(problems, *reward_dependencies(reward_config))
    except ValueError as exc:  # the suite and the reward config pin a module differently
        raise RunSetupError("reward", f"{reward}: {exc}") from None
