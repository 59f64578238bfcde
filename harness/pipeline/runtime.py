"""The trusted side of a generated suite at run time (inside each pytest/xdist worker).

A :class:`LoadedSuite` reads a compiled suite folder once per process, runs each sample in the
sandbox the first time one of its cases asks, and keeps the :class:`SampleExecution` so the other
cases of that sample (scheduled on the same worker: the plugin groups tests by file) reuse it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.completions import prompt_context
from harness.jsonlines import loads
from harness.language_hooks import LanguageHooks, hooks_for, language_of
from harness.memo import IdentityMemo
from harness.pipeline import known_values
from harness.pipeline.compile import PROBLEMS_FILE, SAMPLES_FILE, load_manifest, module_file
from harness.pipeline.problem_file import ProblemFile
from harness.pipeline.sample_parts import Part, parts_of
from harness.records import Problem
from harness.sandbox import CaseRequest, SampleExecution, SampleRequest, Sandbox, SandboxSettings
from harness.sandbox.shared import shared_sandbox

DEFAULT_CASE_TIMEOUT_S = 5.0
READ_AHEAD = 8  # samples queued on the fork server beyond the one being judged


def build_request(
    problem: Problem,
    program: str,
    *,
    coverage: bool = False,
    seed: int = 0,
    parts: tuple[Part, ...] = (),
) -> SampleRequest:
    """The sandbox request that runs every case of ``problem`` against ``program``; in
    ``parts`` (harness.pipeline.sample_parts), when more than one, the child waiting after
    each until the caller has judged it."""
    cases = case_requests(problem)
    pauses = tuple(start for start, _stop in parts[1:])
    return SampleRequest(
        # a part's first time-out already fails the sample: its other cases cost nothing
        timeouts_in_a_row=1 if pauses else 2,
        pauses=pauses,
        program=program,
        entry_point=problem.entry_point,
        cases=cases,
        test_setup=problem.test_setup,
        budget_s=sum(c.timeout_s for c in cases) + 1.0,
        coverage=coverage,
        seed=seed,
        deps_path=problem.metadata.get("deps_overlay", ""),  # harness.deps: fetched packages
        helpers=trusted_helpers(problem),
        known=known_values.passed_values.of(problem),
    )


def trusted_helpers(problem: Problem) -> str:
    """The prompt's definitions that sandbox-mode checks use (not the entry point's stub).

    Only problems with sandbox-mode cases need them; Python prompts only.
    """
    if not any(c.mode == "sandbox" for c in problem.cases):
        return ""
    key = (problem.program_setup, problem.prompt, problem.entry_point)
    cached = _helpers.get(key)
    if cached is None:
        if len(_helpers) > 4096:
            _helpers.clear()
        context = prompt_context(problem.prompt, problem.entry_point)
        cached = _helpers[key] = "\n".join(p for p in (problem.program_setup, context) if p)
    return cached


_helpers: dict[tuple[str, str, str], str] = {}


def case_requests(problem: Problem) -> tuple[CaseRequest, ...]:
    """The sandbox's view of the problem's cases (built once per problem and reused).

    Kept by the identity of the cases' tuple (held, so its id is not reused): hashing a
    thousand cases for every part of every sample cost half a millisecond each time."""
    cases = problem.cases
    return _case_requests.get(
        cases,
        lambda: tuple(
            CaseRequest(
                case_id=case.case_id,
                mode=case.mode,
                prelude=case.prelude,
                calls=case.calls,
                statement=case.statement,
                timeout_s=case.timeout_s or DEFAULT_CASE_TIMEOUT_S,
            )
            for case in cases
        ),
    )


_case_requests: IdentityMemo[tuple[CaseRequest, ...]] = IdentityMemo()


def sample_budget_s(problem: Problem) -> float:
    return sum(c.timeout_s or DEFAULT_CASE_TIMEOUT_S for c in problem.cases) + 1.0


def suite_sandbox_settings(root: Path, settings: dict[str, Any]) -> SandboxSettings:
    """The settings of the sandbox that runs the samples of the suite in ``root`` (its
    manifest's ``settings``): the suite folder itself is hidden from the candidates."""
    return SandboxSettings(
        memory_mb=int(settings.get("memory_mb", 1024)),
        hide_paths=tuple(settings.get("hide_paths", ())) + (str(root),),
    )


def start_suite_sandbox(root: Path) -> None:
    """Start the fork server that will run the samples of the suite in ``root``, without
    waiting for it: an xdist worker calls it before collecting, so that the server's start (a
    tenth of a second or more) overlaps the collection instead of delaying the first sample.
    It is the sandbox :class:`LoadedSuite` later asks for (the same settings, so the same
    shared sandbox). A suite folder that cannot be read is left for the collection to report."""
    try:
        settings = suite_sandbox_settings(root, load_manifest(root)["settings"])
    except (OSError, ValueError, KeyError):
        return
    shared_sandbox(settings).start_soon()


class LoadedSuite:
    """A compiled suite folder, as the worker sees it."""

    def __init__(self, root: Path):
        self.root = root
        self.settings: dict[str, Any] = load_manifest(root)["settings"]
        # Each problem parsed when first asked for: a worker judges only its share of them.
        self.problems = ProblemFile(root / PROBLEMS_FILE)
        self.module_paths = {t: module_file(root, s, t) for t, s in self.problems.suites.items()}
        self.programs: dict[tuple[str, str], str] = {}
        self.sample_ids: dict[str, list[str]] = {}
        self.sample_rows: list[dict[str, Any]] = []  # samples.jsonl, in its order
        with open(root / SAMPLES_FILE) as fh:
            for line in fh:
                row = loads(line)
                self.sample_rows.append(row)
                self.programs[(row["task_id"], row["sample_id"])] = row["program"]
                self.sample_ids.setdefault(row["task_id"], []).append(row["sample_id"])
        self._executions: dict[tuple[str, str], SampleExecution] = {}
        self._tickets: dict[tuple[str, str], int] = {}  # submitted to the sandbox, not collected
        self._first_parts: dict[tuple[str, str], int] = {}  # the same, of a sample in parts
        self._parts: dict[str, tuple[Part, ...]] = {}
        self._sandbox: Sandbox | None = None
        self.sandbox_settings = suite_sandbox_settings(root, self.settings)

    def plan(self, keys: Iterable[tuple[str, str]]) -> None:
        """Start the sandbox on samples that will be asked for soon (read-ahead).

        The fork server runs them one after another while this process judges and reports
        the current one. Samples already run or queued are skipped.
        """
        for key in keys:
            if key in self._executions or key in self._tickets or key not in self.programs:
                continue
            if key in self._first_parts and self.sandbox.holds(self._first_parts[key]):
                continue  # queued (one the sandbox stopped, passed by, is queued anew)
            if language_of(self.problems[key[0]]) is not None:
                continue  # a compiled language's sample runs when asked (its driver)
            if self.in_parts(key[0]):
                self._first_parts[key] = self.sandbox.submit(self._request(key, in_parts=True))
            else:
                self._tickets[key] = self.sandbox.submit(self._request(key))

    def in_parts(self, task_id: str) -> bool:
        """Whether the task's samples run in parts that stop at the first failed one (Python
        value-path problems only: a compiled language's driver runs a sample whole)."""
        return len(self.parts(task_id)) > 1 and language_of(self.problems[task_id]) is None

    def parts(self, task_id: str) -> tuple[Part, ...]:
        """The parts the task's samples run in (:mod:`harness.pipeline.sample_parts`)."""
        parts = self._parts.get(task_id)
        if parts is None:
            parts = self._parts[task_id] = parts_of(self.problems[task_id])
        return parts

    @property
    def sandbox(self) -> Sandbox:
        """This suite's sandbox (kept: its tickets belong to it)."""
        if self._sandbox is None:
            self._sandbox = shared_sandbox(self.sandbox_settings)
        return self._sandbox

    def _request(self, key: tuple[str, str], in_parts: bool = False) -> SampleRequest:
        return build_request(
            self.problems[key[0]],
            self.programs[key],
            coverage=bool(self.settings.get("coverage")),
            parts=self.parts(key[0]) if in_parts else (),
        )

    def execution_parts(self, task_id: str, sample_id: str) -> PartsRun:
        """The sample run in its parts (:mod:`harness.pipeline.sample_parts`): one child,
        which waits at the end of each part until the caller, having judged it, asks for the
        next; the caller stops after a failed part (:meth:`PartsRun.stop`), and no work is
        spent on a part that would not be judged. The fork server meanwhile holds the samples
        read ahead. An infrastructure fault gets one fresh run."""
        key = (task_id, sample_id)
        ticket = self._first_parts.pop(key, None)
        if ticket is None or not self.sandbox.holds(ticket):
            ticket = self.sandbox.submit(self._request(key, in_parts=True))
        return PartsRun(self, key, ticket)

    def execution(self, task_id: str, sample_id: str) -> tuple[SampleExecution, bool]:
        """The sample's execution, and whether this call ran it (False: it came from the cache)."""
        key = (task_id, sample_id)
        if key in self._executions:
            return self._executions[key], False
        language = hooks_for(self.problems[task_id])
        if language is not None:
            self._executions[key] = self._native(key, language)
            return self._executions[key], True
        first_part = self._first_parts.pop(key, None)
        if first_part is not None and self.sandbox.holds(first_part):
            self.sandbox.parts(first_part).stop()  # planned in parts, asked for whole
        ticket = self._tickets.pop(key, None)
        if ticket is None:
            ticket = self.sandbox.submit(self._request(key))
        execution = self.sandbox.collect(ticket)
        self._executions[key] = execution
        return execution, True

    def _native(self, key: tuple[str, str], language: LanguageHooks) -> SampleExecution:
        """A JavaScript, C++, Java or Rust sample: compiled and run by its driver, sandboxed."""
        return language.execute(
            self.problems[key[0]],
            self.programs[key],
            hide=self.sandbox_settings.hide_paths,
            memory_mb=self.sandbox_settings.memory_mb,
            timeout_override_s=(self.settings.get("extra") or {}).get("timeout"),
        )

    def kept_executions(self) -> int:
        """How many samples' executions this suite keeps (for items of one case each)."""
        return len(self._executions)

    def release(self, task_id: str, sample_id: str) -> None:
        """Drop the sample's kept execution once it is judged whole (by ``judge_one``): only a
        run of one item per case (``--llm-per-case``) asks for it again. Kept, every decoded
        value of every sample judged here would stay alive, and each full collection of the
        garbage collector would walk them all again."""
        self._executions.pop((task_id, sample_id), None)

    def execution_with_retry(self, task_id: str, sample_id: str) -> tuple[SampleExecution, bool]:
        """Like :meth:`execution`, but an infrastructure fault gets one fresh try."""
        execution, ran = self.execution(task_id, sample_id)
        if ran and execution.infra_error:
            del self._executions[(task_id, sample_id)]
            execution, ran = self.execution(task_id, sample_id)
        return execution, ran


class PartsRun:
    """A sample's parts as :func:`harness.pipeline.judge.judge_one` reads them: iterate for
    each part's execution (one may hold several parts, where the child's module failed, or
    the rest of the sample after a time-out), :meth:`stop` to run no more. An infrastructure
    fault gets one fresh run of the sample, the parts read already skipped."""

    def __init__(self, suite: LoadedSuite, key: tuple[str, str], ticket: int) -> None:
        self._suite, self._key = suite, key
        self._parts = suite.sandbox.parts(ticket)
        self._read = 0
        self._retried = False

    def __iter__(self) -> PartsRun:
        return self

    def __next__(self) -> SampleExecution:
        execution = next(self._parts)
        if execution.infra_error and not self._retried:
            self._retried = True
            sandbox = self._suite.sandbox
            self._parts = sandbox.parts(sandbox.submit(self._suite._request(self._key, True)))
            for _ in range(self._read):
                skipped = next(self._parts, None)
                if skipped is None or skipped.infra_error:
                    return execution
            execution = next(self._parts, execution)
        self._read += 1
        return execution

    def stop(self) -> SampleExecution | None:
        """Run no more of the sample: the execution of what it did not run (its output and
        accounting), None when it had ended."""
        return self._parts.stop()


_suites: dict[Path, tuple[tuple[int, int], LoadedSuite]] = {}
_MAX_LOADED_SUITES = 4  # a trainer compiles a suite per batch: keep memory bounded


def loaded_suite(root: Path) -> LoadedSuite:
    """The suite compiled in ``root``, read again whenever its samples file changed."""
    stat = (root / SAMPLES_FILE).stat()
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _suites.get(root)
    if cached is None or cached[0] != version:
        while len(_suites) >= _MAX_LOADED_SUITES:
            _suites.pop(next(iter(_suites)))
        cached = _suites[root] = (version, LoadedSuite(root))
    return cached[1]
