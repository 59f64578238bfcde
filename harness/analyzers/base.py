"""What every analyzer is: a name, a version and a batch function over :class:`Subject` s.

An analyzer maps a batch of evaluated samples to one JSON-ready report each (a ``TypedDict``
in its module). It runs over the whole batch at once so that tools with a start-up cost
(bandit, ruff, mypy) run once per batch, never once per sample. A report that could not be
made is ``{"error": "..."}``; a sample is never lost because an analyzer failed.
"""

from __future__ import annotations

import ast
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.program_ast import Failure, parse_with_failure
from harness.records import Problem

Report = dict[str, Any]


@dataclass
class Subject:
    """One evaluated sample: its result row, its problem and the program text that ran."""

    row: dict[str, Any]
    problem: Problem | None
    program: str
    _parse: tuple[ast.Module | None, Failure | None] | None = field(default=None, repr=False)

    @property
    def tree(self) -> ast.Module | None:
        """The parsed program (``None`` when it does not parse), parsed once per batch."""
        return self._parsed()[0]

    @property
    def parse_failure(self) -> Failure | None:
        """Why the program does not parse (``None`` when it does), from the same parse."""
        return self._parsed()[1]

    @property
    def parsed_tree(self) -> ast.Module | None:
        """The tree if an analyzer parsed the program already (None: not parsed, or it does
        not parse); for readers that would otherwise parse it again, never a parse itself."""
        return self._parse[0] if self._parse is not None else None

    def _parsed(self) -> tuple[ast.Module | None, Failure | None]:
        if self._parse is None:
            self._parse = parse_with_failure(self.program)
        return self._parse


class Analyzer(Protocol):
    """``static`` analyzers read only the program (cacheable by its hash); the others read the
    execution record, which is cheap to summarize and differs from run to run."""

    name: str
    version: str
    static: bool
    # optional ``subprocess = True``: the work happens in another process, so the analyzer may
    # run in a thread beside the in-process ones
    # optional ``per_program = True``: a static analyzer whose cost per program does not depend
    # on the batch (no tool to start), so a judging worker may analyze its own share ahead of
    # the caller (:func:`harness.analyzers.analyze_ahead`)

    def analyze(self, subjects: Sequence[Subject]) -> list[Report]: ...


def program_of(row: Mapping[str, Any], problem: Problem | None) -> str:
    """The program that ran: the row's ``program``, else the prompt + the completion."""
    program = row.get("program")
    if program:
        return str(program)
    prompt = problem.prompt if problem is not None else ""
    return prompt + str(row.get("completion") or "")


def error_report(exc: BaseException) -> Report:
    return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def write_programs(folder: Path, subjects: Sequence[Subject]) -> list[Path]:
    """Each program as ``s<i>.py`` in ``folder`` (for tools that read files)."""
    paths = []
    for i, subject in enumerate(subjects):
        path = folder / f"s{i}.py"
        path.write_text(subject.program)
        paths.append(path)
    return paths


def scan_parsed_programs(
    subjects: Sequence[Subject], prefix: str, scan: Callable[[list[Path]], list[Report]]
) -> list[Report]:
    """Run a file-based tool once over every program that parses; the others are skipped.

    ``scan`` gets the written files, in the order of the parsed subjects, and returns one
    report per file (it runs while the files exist).
    """
    parsed = [i for i, s in enumerate(subjects) if s.tree is not None]
    reports: list[Report] = [{"skipped": "the program does not parse"} for _ in subjects]
    if parsed:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            paths = write_programs(Path(tmp).resolve(), [subjects[i] for i in parsed])
            for i, report in zip(parsed, scan(paths), strict=True):
                reports[i] = report
    return reports
