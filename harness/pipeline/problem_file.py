"""A compiled suite's problems.jsonl, each problem parsed the first time it is asked for.

Every process that judges a suite reads this file: each xdist worker, each worker of
``evaluate(workers=N)``, and pytest's controller, which writes the rows. Parsed whole, HumanEval+'s
(164 problems, 124,253 cases, 111 MB) costs each of them about 1.3 s of CPU before its first
sample, and N workers parse it N times though each judges only its share of the problems.
Here opening the file reads each line's suite, task id and prompt (the first keys compile_suite
writes) and where the line lies; a problem is parsed when it is first asked for, so N workers
parse the file about once between them. A line that does not start that way is parsed whole
at once, so any file of problems still reads.
"""

from __future__ import annotations

import json
import mmap
import re
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.gcpause import paused_gc
from harness.records import Problem, problem_from_json

# The start of a line as compile_suite writes it: {"suite":"...","task_id":"...",
# "prompt":"...", ... (the prompt kept as JSON text: the history wants every problem's), with
# or without a space after each separator (json's or orjson's way of writing it).
_STRING = rb'"(?:[^"\\]|\\.)*"'
_HEADER = re.compile(
    rb'\{"suite": ?('
    + _STRING
    + rb'), ?"task_id": ?('
    + _STRING
    + rb'), ?(?:"prompt": ?('
    + _STRING
    + rb"), ?)?"
)


def _lines(path: Path) -> Iterator[tuple[int, int, tuple[str, str, bytes | None] | None, bytes]]:
    """Each line of ``path``: where it starts and ends, the names at its start (see
    :func:`_names`) and, only where they are missing, the line itself. The file is mapped, not
    read: HumanEval+'s lines are 700 KB each, and copying them cost every process 0.15 s."""
    with open(path, "rb") as fh:
        if fh.seek(0, 2) == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            size, start = len(mapped), 0
            while start < size:
                newline = mapped.find(b"\n", start)
                end = size if newline < 0 else newline + 1
                names = _names(mapped, start, end)
                yield start, end, names, b"" if names is not None else mapped[start:end]
                start = end


def _names(text: bytes | mmap.mmap, start: int, end: int) -> tuple[str, str, bytes | None] | None:
    """The suite, task id and prompt (as JSON text, if there) at the start of the line
    ``text[start:end]``, if it starts as compile_suite writes."""
    header = _HEADER.match(text, start, end)
    if header is None:
        return None
    try:
        suite, task_id = json.loads(header[1]), json.loads(header[2])
    except ValueError:
        return None
    return suite, task_id, header[3]


class ProblemFileError(ValueError):
    """A line of the problems file is not a problem (names the file and the line)."""


class ProblemFile(Mapping[str, Problem]):
    """The problems of ``path`` by task id, in the file's order, each parsed on first use."""

    def __init__(self, path: Path):
        self.path = path
        self._spans: dict[str, tuple[int, int, int]] = {}  # task id -> offset, length, line
        self._suites: dict[str, str] = {}
        self._prompts: dict[str, bytes] = {}  # JSON text, decoded when asked for
        self._parsed: dict[str, Problem] = {}
        self._lock = threading.Lock()
        for number, (start, end, names, line) in enumerate(_lines(path), 1):
            problem = None
            if names is None:
                if not line.strip():
                    continue
                problem = self._parse(line, number)  # not as compile_suite writes: now
                names = (problem.suite, problem.task_id, None)
            suite, task_id, prompt = names
            for known in (self._spans, self._prompts, self._parsed):
                known.pop(task_id, None)  # a task id given twice: the last line wins
            self._spans[task_id] = (start, end - start, number)
            self._suites[task_id] = suite
            if prompt is not None:
                self._prompts[task_id] = prompt
            if problem is not None:
                self._parsed[task_id] = problem

    def suite_of(self, task_id: str) -> str:
        """The suite of ``task_id``'s problem, without parsing it (KeyError if not here)."""
        return self._suites[task_id]

    def prompt_of(self, task_id: str) -> str:
        """The prompt of ``task_id``'s problem, parsing the problem only if its line does not
        start with it (KeyError if not here)."""
        raw = self._prompts.get(task_id)
        if raw is not None and task_id not in self._parsed:
            try:
                prompt = json.loads(raw)
            except ValueError:
                prompt = None
            if type(prompt) is str:
                return prompt
        return self[task_id].prompt

    @property
    def suites(self) -> Mapping[str, str]:
        """Each task id's suite, in the file's order (nothing parsed)."""
        return self._suites

    def __getitem__(self, task_id: str) -> Problem:
        problem = self._parsed.get(task_id)
        if problem is not None:
            return problem
        offset, length, number = self._spans[task_id]
        with self._lock:
            problem = self._parsed.get(task_id)
            if problem is None:
                with open(self.path, "rb") as fh:
                    fh.seek(offset)
                    line = fh.read(length)
                problem = self._parse(line, number)
                if problem.task_id != task_id:  # the file was written again since it was opened
                    raise ProblemFileError(
                        f"{self.path}, line {number}: task_id is {problem.task_id!r}, expected "
                        f"{task_id!r} (the file changed while it was in use)"
                    )
                self._parsed[task_id] = problem
        return problem

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._spans

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def parsed_count(self) -> int:
        """How many problems have been parsed so far (for tests and memory inspection)."""
        return len(self._parsed)

    def _parse(self, line: bytes, number: int) -> Problem:
        try:
            with paused_gc():  # a tree of fresh objects
                data: Any = json.loads(line)
                if type(data) is not dict:
                    raise ValueError("not a JSON object")
                return problem_from_json(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise ProblemFileError(f"{self.path}, line {number}: not a problem: {exc}") from None
