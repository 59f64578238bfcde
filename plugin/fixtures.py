"""Collection and fixtures of generated test modules (runs wherever the suite runs: the
controller without xdist, or each xdist worker).

A module inside a compiled suite is collected as one item per sample (:mod:`plugin.items`);
with ``--llm-per-case`` as pytest's own items, one per case and sample, parametrized over
``sample_id`` and given the :func:`sandbox` fixture.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from harness.pipeline.cpu_budget import CASE_BUDGET_S, check_budget
from harness.pipeline.verdicts import (
    SampleCheck,
    SandboxInfrastructureError,
    stable_assert_messages,
)
from plugin.lookup import NEXT_ITEM, ROW_ATTR, suite_of, suite_root

__all__ = ["SampleCheck", "SandboxInfrastructureError", "sandbox", "suite_of"]


def _per_case(config: pytest.Config) -> bool:
    return bool(config.getoption("llm_per_case", False))


def pytest_pycollect_makemodule(module_path: Path, parent: Any) -> Any:
    """Generated modules become one item per sample (unless ``--llm-per-case``)."""
    if _per_case(parent.config) or not module_path.name.startswith("test_"):
        return None
    if suite_root(module_path) is None:
        return None
    from plugin.items import GeneratedModule

    return GeneratedModule.from_parent(parent, path=module_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, Any]:
    """A sample item's verdicts ride on its call report only (the teardown report would
    carry them again: under xdist every report is serialized to the controller). Once it was
    judged they ride as its row alone, built where it was judged (``ROW_ATTR``: ``[task id,
    sample id, JSON text]``): the same verdicts kept as properties too would be encoded by
    the worker and decoded by the controller a second time. A sample that failed before it
    was judged keeps its properties (the controller names it from them)."""
    report = yield
    if call.when == "call" and getattr(item, "sample_id", None) is not None:
        item.user_properties[:] = [p for p in item.user_properties if p[0] != "codeeval"]
        row_text = getattr(item, "row_text", "")
        if row_text:
            setattr(report, ROW_ATTR, [item.task_id, item.sample_id, row_text])  # type: ignore[attr-defined]
            report.user_properties = list(item.user_properties)  # the report's, less the verdicts
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Per-case items explain failed comparisons as sample items do (stable messages), and
    their checks get the per-case budget (only tests of a compiled suite: another project's
    test may use a fixture of that name)."""
    if "sandbox" not in getattr(item, "fixturenames", ()):
        return (yield)
    if suite_root(Path(item.path)) is None:
        with stable_assert_messages():
            return (yield)
    with stable_assert_messages(), check_budget(CASE_BUDGET_S):
        return (yield)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize each generated test over the samples of its task (``--llm-per-case``)."""
    if "sandbox" not in metafunc.fixturenames or not hasattr(metafunc.module, "TASK_ID"):
        return
    suite = suite_of(metafunc.definition.path)
    metafunc.parametrize("sample_id", suite.sample_ids.get(metafunc.module.TASK_ID, []))


@pytest.fixture
def sandbox(request: pytest.FixtureRequest, sample_id: str) -> SampleCheck:
    """Runs the sample (once per worker) in the sandbox and gives the test its case results."""
    from harness.pipeline.results import execution_record

    suite = suite_of(request.path)
    task_id = request.module.TASK_ID
    problem = suite.problems[task_id]
    nxt = request.node.stash.get(NEXT_ITEM, None)
    callspec = getattr(nxt, "callspec", None)
    if callspec is not None and hasattr(nxt, "module"):
        suite.plan([(nxt.module.TASK_ID, callspec.params.get("sample_id"))])
    execution, ran_here = suite.execution_with_retry(task_id, sample_id)
    report: dict[str, Any] = {
        "suite": problem.suite,
        "task_id": task_id,
        "sample_id": sample_id,
        "case_id": request.function.__name__[len("test_") :],
    }
    if ran_here:
        report["execution"] = execution_record(execution)
    request.node.user_properties.append(("codeeval", report))
    if execution.infra_error:
        report["sandbox_status"] = "error"
        raise SandboxInfrastructureError(execution.infra_error)
    return SampleCheck(problem, execution, report)
