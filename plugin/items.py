"""How a generated module becomes pytest items: one item per sample (default) or per case.

A generated module holds one function per check case. By default the plugin collects it as one
:class:`SampleItem` per sample, which runs every case function against that sample's execution
(:func:`harness.pipeline.judge.judge_one`, the function the in-process path uses too) and fails with the failing cases' rewritten asserts; each
case's outcome still reaches ``results.jsonl``. One item per sample instead of one per case
makes a benchmark run 5-10x fewer pytest items, the main cost of the trusted side.
``--llm-per-case`` keeps pytest's own items: one per case and sample, through the ``sandbox``
fixture (``plugin.fixtures``).

While pytest reports one sample, the fork server already runs the next ones: each item tells
the suite which samples come next (:meth:`harness.pipeline.runtime.LoadedSuite.plan`).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import pytest

from harness.jsonlines import dumps
from harness.pipeline.judge import judge_one
from harness.pipeline.results import CaseOutcome, SampleOutcomes, build_row, execution_record
from harness.pipeline.runtime import READ_AHEAD
from harness.pipeline.verdicts import SandboxInfrastructureError, case_functions, load_check_module
from harness.sandbox import SampleExecution


class SampleFailed(Exception):
    """Some cases of the sample did not pass (the item's failure; details in the verdicts)."""

    def __init__(self, verdicts: list[CaseOutcome]):
        super().__init__(f"{sum(v.status != 'passed' for v in verdicts)} case(s) did not pass")
        self.verdicts = verdicts


class GeneratedModule(pytest.Module):
    """A generated test module, collected as one item per sample of its task."""

    def _getobj(self) -> Any:
        # Imported as the in-process path imports it (same assertion rewriting, cached code).
        try:
            module = load_check_module(self.path)
        except SyntaxError as exc:
            raise self.CollectError(f"generated module does not compile: {exc}") from exc
        self.config.pluginmanager.consider_module(module)
        return module

    def collect(self) -> list[pytest.Item]:
        from plugin.lookup import suite_of

        suite = suite_of(self.path)
        task_id = self.obj.TASK_ID
        items = [
            SampleItem.from_parent(self, name=f"sample[{sample_id}]", sample_id=sample_id)
            for sample_id in suite.sample_ids.get(task_id, [])
        ]
        for index, item in enumerate(items):
            item.siblings, item.index = items, index
        return items


class SampleItem(pytest.Item):
    """Every check case of one sample, judged in the trusted process."""

    def __init__(self, *, sample_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sample_id = sample_id
        self.siblings: list[SampleItem] = []
        self.index = 0
        self.verdicts: list[CaseOutcome] = []
        self.execution: SampleExecution | None = None
        self.row_text = ""  # the sample's results.jsonl row, once judged (plugin.batch)

    @property
    def task_id(self) -> str:
        return self.parent.obj.TASK_ID  # type: ignore[union-attr]

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.task_id} sample {self.sample_id}"

    def runtest(self) -> None:
        from plugin.lookup import suite_of

        # The sample's record goes on the report first: whatever is raised below (a fault of
        # the harness, pytest-timeout's guard, Ctrl-C), the controller still writes its row.
        self.row_text = ""
        report: dict[str, Any] = {"task_id": self.task_id, "sample_id": self.sample_id}
        self.user_properties.append(("codeeval", report))
        suite = suite_of(self.path)
        problem = suite.problems[self.task_id]
        report["suite"] = problem.suite

        def record(execution: SampleExecution, ran_here: bool) -> None:
            if ran_here:
                report["execution"] = execution_record(execution)
            self.execution = execution

        functions = case_functions(problem, self.parent.obj)  # type: ignore[union-attr]
        key = (self.task_id, self.sample_id)
        self.verdicts = judge_one(
            suite, key, functions, upcoming=self._upcoming(), on_execution=record
        )
        report["cases"] = [[v.case_id, v.status, v.message, v.duration_s] for v in self.verdicts]
        # The row is built here, where the sample was judged: the controller only writes it
        # (one process serves every worker, so its work per sample bounds the run).
        row = _row(suite, problem, report)
        self.row_text = dumps(row)
        reward = suite.settings.get("reward")
        if reward:  # its per-program analyzers run here too (plugin.ahead)
            from plugin.ahead import analyze_later

            analyze_later(self.config, reward, row, problem)
        if self.execution is not None and self.execution.infra_error:
            raise SandboxInfrastructureError(self.execution.infra_error)
        if any(v.status != "passed" for v in self.verdicts):
            raise SampleFailed(self.verdicts)

    def _upcoming(self) -> list[tuple[str, str]]:
        """The samples this process will judge next (read ahead on the fork server)."""
        from plugin.lookup import NEXT_ITEM, queued_items

        nxt = self.stash.get(NEXT_ITEM, None)
        if not isinstance(nxt, SampleItem):
            return []
        queued = queued_items(self.config, READ_AHEAD - 1)
        if queued is not None:  # an xdist worker: what the scheduler sent it, in order
            ahead = [nxt, *queued]
        elif self.config.getoption("dist", "no") == "no":  # one process runs every item
            ahead = nxt.siblings[nxt.index : nxt.index + READ_AHEAD]
        else:
            ahead = [nxt]
        return [(s.task_id, s.sample_id) for s in ahead if isinstance(s, SampleItem)]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SampleFailed):
            lines = [
                f"{v.case_id} {v.status}: {v.message}"
                for v in excinfo.value.verdicts
                if v.status != "passed"
            ]
            return "\n".join(lines)
        return super().repr_failure(excinfo)


# Each loaded suite's samples.jsonl rows by (task id, sample id), built once per process.
_SAMPLE_ROWS: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)


def _row(suite: Any, problem: Any, report: dict[str, Any]) -> dict[str, Any]:
    """The results.jsonl row of a judged sample item, as the controller would build it from
    the item's report (the same problem and samples files, the same verdicts)."""
    rows = _SAMPLE_ROWS.get(suite)
    if rows is None:
        rows = _SAMPLE_ROWS[suite] = {(r["task_id"], r["sample_id"]): r for r in suite.sample_rows}
    key = (report["task_id"], report["sample_id"])
    outcomes = SampleOutcomes(problem.suite, *key)
    if report.get("execution"):
        execution = outcomes.execution = dict(report["execution"])
        if "notes" in execution:  # build_row appends to it: the report keeps its own list
            execution["notes"] = list(execution["notes"])
    for case_id, status, message, duration in report["cases"]:
        outcomes.cases[case_id] = CaseOutcome(case_id, status, message, float(duration))
    return build_row(problem, outcomes, rows.get(key, {}))
