"""A compiled suite run as a real pytest session (``evaluate(..., pytest_session=True)``).

For callers who want pytest's own items, hooks and plugins around the judging: the session is
``pytest --llm-compiled ROOT`` (this project's pytest plugin, found through its entry point),
and its rows are the ones :func:`harness.pipeline.judge.judge_suite` gives.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.pipeline.prepare import PreparedSuite


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


def run_pytest_session(
    prepared: PreparedSuite, out: Path, workers: int, quiet: bool
) -> list[dict[str, Any]]:
    """The rows of ``prepared``'s suite, from a pytest session in this process."""
    _forget_modules(prepared.compiled.rewritten)
    collector = _Collector()
    # Its own ini: the caller's pytest configuration (addopts, testpaths) must not leak in.
    # Root "/" makes module names full paths, so two folders never share a cached module.
    ini = out / "pytest.ini"
    ini.write_text("[pytest]\n")
    args = [
        "--llm-compiled", str(prepared.root), "--llm-out", str(out), "-c", str(ini),
        "--rootdir", "/", "--import-mode=importlib", "-p", "no:cacheprovider",
        "-p", "no:codeeval_gate", "-q", "--no-header",
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


def _forget_modules(paths: Sequence[Path]) -> None:
    """Drop imported test modules whose files changed: pytest's importlib mode would reuse them."""
    changed = {str(p.resolve()) for p in paths}
    if not changed:
        return
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py") and str(Path(file).resolve()) in changed:
            del sys.modules[name]
