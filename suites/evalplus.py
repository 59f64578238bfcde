"""EvalPlus's benchmarks: ``humaneval-plus`` (HumanEval+ v0.1.10), ``humaneval-plus-mini``
(HumanEval+ Mini v0.1.10) and ``mbpp-plus`` (MBPP+ v0.2.0), exactly as ``evalplus`` 0.3.1
runs them.

The records come from the mirror folder (``$CODEEVAL_DATA_DIR/evalplus/``, the files
``evalplus`` downloads; see that folder's README) or, without one, the hub. Prompts are
EvalPlus's own (HumanEval+: a signature and docstring the answer continues; MBPP+: a text
prompt, ``prompt_kind == "text"``). Every input of ``base_input`` and ``plus_input`` becomes
one compare case, ``base_N`` or ``plus_N`` (``plus_`` cases count as plus cases for
``summary.json``'s base and base+plus pass@k): the sandbox calls ``candidate(*input)`` and sends
the value back, and EvalPlus's oracle (:mod:`harness.oracles.evalplus`) judges it in the
trusted process against the reference's output on the same input. Those outputs are not in
the data: :mod:`suites.evalplus_expected` computes them by running the canonical solution in
the sandbox when a run prepares its problems, and caches them by the data file's hash.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.records import MEMORY_MB, STOP_AT_FIRST_FAILURE, CheckCase, Problem
from suites import evalplus_expected  # registers the expected outputs' step
from suites.errors import SuiteError
from suites.evalplus_inputs import mbpp_inputs, python_literal

HUMANEVAL_PLUS = "humaneval-plus"
HUMANEVAL_PLUS_MINI = "humaneval-plus-mini"
MBPP_PLUS = "mbpp-plus"
DATA_FOLDER = "evalplus"  # under the data folder


# suite -> (file name in the mirror, data version, hub data set, EvalPlus's dataset name)
DATASETS: dict[str, tuple[str, str, str, str]] = {
    HUMANEVAL_PLUS: (
        "HumanEvalPlus-v0.1.10.jsonl.gz",
        "HumanEval+ v0.1.10",
        "evalplus/humanevalplus",
        "humaneval",
    ),
    HUMANEVAL_PLUS_MINI: (
        "HumanEvalPlus-Mini-v0.1.10.jsonl.gz",
        "HumanEval+ Mini v0.1.10",
        "evalplus/humanevalplus",
        "humaneval",
    ),
    MBPP_PLUS: ("MbppPlus-v0.2.0.jsonl.gz", "MBPP+ v0.2.0", "evalplus/mbppplus", "mbpp"),
}
REQUIRED_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input")
# evalplus's memory limit for a judged program (EVALPLUS_MAX_MEMORY_BYTES's default): Mbpp/255's
# reference, and any right answer, builds 1.6 M tuples (1.1 GB) on one input.
MEMORY_MB_EVALPLUS = 4096


def load_humaneval_plus(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """HumanEval+ v0.1.10: 164 problems, split ``test``."""
    return {"test": load_dataset(HUMANEVAL_PLUS, data_dir)}


def load_humaneval_plus_mini(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """HumanEval+ Mini v0.1.10: the same 164 problems with fewer plus inputs."""
    return {"test": load_dataset(HUMANEVAL_PLUS_MINI, data_dir)}


def load_mbpp_plus(data_dir: Path | None = None) -> dict[str, list[Problem]]:
    """MBPP+ v0.2.0: 378 problems, split ``test``."""
    return {"test": load_dataset(MBPP_PLUS, data_dir)}


def data_file(suite: str, data_dir: Path | None) -> Path | None:
    """The mirrored data file of ``suite`` in ``data_dir`` (or its ``evalplus/``), if any."""
    name = DATASETS[suite][0]
    if data_dir is None:
        return None
    for folder in (Path(data_dir) / DATA_FOLDER, Path(data_dir)):
        if (folder / name).is_file():
            return folder / name
    return None


def load_dataset(suite: str, data_dir: Path | None = None) -> list[Problem]:
    """The problems of ``suite``, from the mirror when there is one, else the hub."""
    path = data_file(suite, data_dir)
    if path is not None:
        records, digest = read_records(path)
        where = str(path)
    else:
        records, digest, where = _from_hub(suite, data_dir)
    return [problem_from_record(suite, r, digest, f"{where}:{n}") for n, r in records]


def read_records(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """``(line number, record)`` of a ``.jsonl`` or ``.jsonl.gz`` file, and the sha256 of
    its uncompressed text (the key of the expected outputs' cache)."""
    raw = path.read_bytes()
    text = gzip.decompress(raw) if path.suffix == ".gz" else raw
    records = []
    for number, line in enumerate(text.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{number}: not valid JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise SuiteError(f"{path}:{number}: a record must be a JSON object")
        records.append((number, record))
    return records, hashlib.sha256(text).hexdigest()


def _from_hub(suite: str, data_dir: Path | None) -> tuple[list[tuple[int, dict]], str, str]:
    hub = DATASETS[suite][2]
    try:
        from suites.hub import load_hub_dataset

        rows = list(load_hub_dataset(hub, split="test"))
    except Exception as exc:  # offline, no package, a hub error: all mean "not here"
        raise SuiteError(
            f"{suite}: no mirror ({DATA_FOLDER}/{DATASETS[suite][0]} under {data_dir or '$CODEEVAL_DATA_DIR'}) "
            f"and the hub data set {hub} could not be loaded: {exc}"
        ) from exc
    text = "\n".join(json.dumps(row, sort_keys=True, default=str) for row in rows)
    return list(enumerate(rows, start=1)), hashlib.sha256(text.encode()).hexdigest(), hub


def problem_from_record(suite: str, record: Mapping[str, Any], digest: str, where: str) -> Problem:
    """One EvalPlus record as a :class:`Problem` whose cases still lack their expected outputs."""
    for name in REQUIRED_FIELDS:
        if name not in record:
            raise SuiteError(f"{where}: field {name!r} is missing")
    for name in ("task_id", "prompt", "entry_point", "canonical_solution"):
        if not isinstance(record[name], str):
            raise SuiteError(f"{where}: field {name!r} must be a string")
    task_id, dataset = record["task_id"], DATASETS[suite][3]
    groups = {
        "base": _inputs(record, "base_input", where),
        "plus": _inputs(record, "plus_input", where),
    }
    if dataset == "mbpp":
        groups = {name: mbpp_inputs(task_id, inputs) for name, inputs in groups.items()}
    cases = tuple(
        CheckCase(
            case_id=f"{group}_{index}",
            source=f"EvalPlus {group} input {index} of {task_id}",
            mode="compare",
            calls=(f"candidate(*{literal})",),
            oracle=evalplus_expected.ORACLE,
        )
        for group, inputs in groups.items()
        for index, literal in enumerate(_literals(inputs, f"{group}_input", where))
    )
    atol = record.get("atol", 0)
    if not isinstance(atol, (int, float)) or isinstance(atol, bool):
        raise SuiteError(f"{where}: field 'atol' must be a number, got {atol!r}")
    prompt, solution = record["prompt"], record["canonical_solution"]
    return Problem(
        suite=suite,
        task_id=task_id,
        prompt=prompt,
        entry_point=record["entry_point"],
        cases=cases,
        # What evalplus runs for its expected outputs (MBPP+'s prompt is only a docstring).
        reference=prompt + solution,
        candidate_names=("candidate",),
        metadata={
            "prompt_kind": "code" if dataset == "humaneval" else "text",
            "data_version": DATASETS[suite][1],
            "evalplus": {"dataset": dataset, "data_sha256": digest, "atol": float(atol)},
            "contract": str(record.get("contract", "")),
            # As evalplus without --test-details: a sample stops at its first failed input
            # when only the verdict is wanted (harness.pipeline.sample_parts).
            STOP_AT_FIRST_FAILURE: True,
            MEMORY_MB: MEMORY_MB_EVALPLUS,
        },
    )


def _inputs(record: Mapping[str, Any], field: str, where: str) -> list[Any]:
    inputs = record.get(field, [])
    if inputs == {}:  # Mbpp/793's plus_input: evalplus iterates it, so no inputs
        inputs = []
    if not isinstance(inputs, list) or not all(isinstance(i, list) for i in inputs):
        raise SuiteError(f"{where}: field {field!r} must be a list of argument lists")
    return inputs


def _literals(inputs: list[Any], field: str, where: str) -> list[str]:
    """Each input's argument list as source text (:func:`python_literal`)."""
    try:
        return [python_literal(args) for args in inputs]
    except TypeError as exc:
        raise SuiteError(f"{where}: field {field!r}: {exc}") from None
