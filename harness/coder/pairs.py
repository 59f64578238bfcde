"""Completion pairs: ``DATASET/level_N/pairs/pairK/{input.txt, output.txt, meta.json}``.

``codeeval coder pairs`` builds an offline data set from the reference solutions of HumanEval
and MBPP, into the cache folder (never the repository), at three levels of difficulty:

- ``level_0``: the function's last line is missing;
- ``level_1``: the body after its first lines (a third of them, at least one) is missing;
- ``level_2``: the whole body after the signature and docstring is missing;
- ``level_3``: hand-picked real-world snippets whose next line calls a library in a way
  models tend to get wrong (bundled in ``snippets.json``; no tests).

``meta.json`` names the source problem (suite and task id), so the ``tests`` analyzer and the
tests metric can run the problem's own checks on the completed program in the sandbox.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from harness.paths import cache_dir
from harness.program_ast import parse_program
from harness.records import Problem

LEVELS: dict[int, str] = {
    0: "the last line",
    1: "the rest of the body after its first lines",
    2: "the whole body after the signature and docstring",
    3: "real-world snippets (library calls)",
}
DEFAULT_SUITES: tuple[str, ...] = ("humaneval", "mbpp-sanitized")


def default_dataset() -> Path:
    return cache_dir() / "coder" / "pairs"


@dataclass(frozen=True)
class Pair:
    """One completion pair: the code to complete, the ground truth, and where it came from."""

    input: str
    output: str
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def name(self) -> str:
        return self.path.name if self.path else ""

    @property
    def has_tests(self) -> bool:
        return bool(self.meta.get("suite") and self.meta.get("task_id"))


def split_reference(program: str, entry_point: str) -> dict[int, tuple[str, str]]:
    """``{level: (input, output)}`` for levels 0-2 of one reference program.

    The split points are line boundaries inside the entry point's function: before its last
    line (level 0), after the first third of its body lines (level 1), after its docstring
    (level 2). A level that would repeat a shorter one (a one-line body) is left out.
    """
    found = _entry_body(program, entry_point)
    if found is None:
        return {}
    start, end = found
    lines = program.splitlines(keepends=True)
    while end > start and not lines[end - 1].strip():
        end -= 1
    body_lines = [i for i in range(start, end) if lines[i].strip()]
    if not body_lines:
        return {}

    def cut(at: int) -> tuple[str, str]:
        return "".join(lines[:at]), "".join(lines[at:end])

    levels = {2: cut(start)}
    if len(body_lines) >= 2:
        levels[0] = cut(body_lines[-1])
    if len(body_lines) >= 3:
        levels[1] = cut(body_lines[max(1, len(body_lines) // 3)])
    return {k: v for k, v in levels.items() if v[1].strip()}


def _entry_body(program: str, entry_point: str) -> tuple[int, int] | None:
    """The 0-based first line of the entry point's body after its docstring, and the end of
    the function (exclusive); None when there is no such function or no body."""
    tree = parse_program(program)
    if tree is None:
        return None
    functions = [
        n
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry_point
    ]
    if not functions:
        return None
    function = functions[-1]
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring belongs to the input
    if not body or function.end_lineno is None:
        return None
    return body[0].lineno - 1, function.end_lineno


def build_pairs(
    out: Path | None = None,
    suites: Sequence[str] = DEFAULT_SUITES,
    limit: int | None = None,
    data_dir: str | None = None,
) -> dict[int, int]:
    """Write the offline data set; ``limit``: problems per suite. Returns pairs per level."""
    from suites import load_suite

    out = out or default_dataset()
    counts: dict[int, int] = {}
    for level in LEVELS:
        shutil.rmtree(out / f"level_{level}", ignore_errors=True)  # a rebuild replaces it whole
    for suite in suites:
        problems = load_suite(suite, data_dir=data_dir) if data_dir else load_suite(suite)
        for problem in problems[:limit] if limit else problems:
            if problem.defects:
                continue  # a known-broken problem would blame the model for the data
            program = _with_task(problem)
            for level, (text, truth) in sorted(
                split_reference(program, problem.entry_point).items()
            ):
                meta = {"suite": problem.suite, "task_id": problem.task_id, "level": level}
                _write_pair(out, level, counts, Pair(text, truth, meta))
    for snippet in bundled_snippets():
        meta = {"level": 3, "note": snippet.get("note", "")}
        _write_pair(out, 3, counts, Pair(snippet["input"], snippet["output"], meta))
    return counts


def _with_task(problem: Problem) -> str:
    """The reference, led by the task as a comment where the prompt is prose (MBPP): without it
    a bare signature would not say what the function should do."""
    text = str(problem.metadata.get("text") or "").strip()
    if problem.metadata.get("prompt_kind") != "text" or not text:
        return problem.reference
    header = "".join(f"# {line}\n" for line in text.splitlines())
    return header + problem.reference


def _write_pair(out: Path, level: int, counts: dict[int, int], pair: Pair) -> None:
    index = counts.get(level, 0)
    counts[level] = index + 1
    folder = out / f"level_{level}" / "pairs" / f"pair{index}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "input.txt").write_text(pair.input)
    (folder / "output.txt").write_text(pair.output)
    (folder / "meta.json").write_text(json.dumps(pair.meta, indent=1) + "\n")


def bundled_snippets() -> list[dict[str, str]]:
    text = (resources.files("harness.coder") / "snippets.json").read_text()
    return list(json.loads(text))


def level_dirs(dataset: Path, levels: Sequence[int] | None = None) -> list[Path]:
    """The ``level_N`` folders of a data set (all of them, or those of ``levels``)."""
    if levels is not None:
        return [dataset / f"level_{n}" for n in levels]
    return sorted(dataset.glob("level_*"), key=lambda p: int(p.name.split("_")[1]))


def load_pairs(level_dir: Path, limit: int | None = None) -> list[Pair]:
    """The pairs of one level, in the order of their numbers."""
    folder = level_dir / "pairs"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no pairs here (build them with `codeeval coder pairs`)")
    found = sorted(
        (p for p in folder.iterdir() if p.is_dir() and p.name.startswith("pair")),
        key=lambda p: int(p.name[4:]) if p.name[4:].isdigit() else 10**9,
    )
    pairs = []
    for path in found[:limit] if limit else found:
        meta_file = path / "meta.json"
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        pairs.append(
            Pair((path / "input.txt").read_text(), (path / "output.txt").read_text(), meta, path)
        )
    return pairs


_problems: dict[tuple[str, str], Problem] = {}


def problem_of(pair: Pair, data_dir: str | None = None) -> Problem | None:
    """The benchmark problem a pair came from (its tests), loaded once per process.

    ``data_dir``: the local benchmark mirrors (default ``$CODEEVAL_DATA_DIR``, else the hub).
    """
    if not pair.has_tests:
        return None
    key = (str(pair.meta["suite"]), str(pair.meta["task_id"]))
    if key not in _problems:
        from suites import load_suite

        for problem in load_suite(key[0], data_dir=data_dir):
            _problems[(key[0], problem.task_id)] = problem
    return _problems.get(key)


def iter_levels(
    dataset: Path, levels: Sequence[int] | None, limit: int | None
) -> Iterator[tuple[Path, list[Pair]]]:
    for level_dir in level_dirs(dataset, levels):
        yield level_dir, load_pairs(level_dir, limit)
