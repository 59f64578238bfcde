"""The expected outputs of EvalPlus's cases: the canonical solution run on every input.

``evalplus`` computes them the same way (``get_groundtruth``: the reference called on each
input) and keeps them by the data file's hash; here the reference runs in the sandbox the
samples will use, once per problem, when a run prepares its problems (a problem step, so only
the problems a run asks for), and the outputs are cached in
``cache_dir()/evalplus/<sha256 of the data>/<task>.json``. A reference that fails an input makes the
problem a data defect (never cached: the cause may be this machine).

An output over the channel's decoding bounds (HumanEval/15's strings of 6.9 M characters,
/130's lists of a million numbers, Mbpp/255's 1.6 M tuples) comes back as its digest by
equality (``harness.sandbox.channel.canonical``) and is kept as that: a sample's output on
the same input, sent whole or as a digest too, is then compared with it as ``==`` compares.

Each case's ``expected`` then holds what EvalPlus's oracle needs: the output (tagged), the
oracle kind (EvalPlus picks its special oracles by entry point name), the tolerance in force
before the input (EvalPlus's float rule sticks for the rest of the group), and the input for
the oracles that look at it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.jsonlines import loads
from harness.oracles import decoded, encoded
from harness.oracles.evalplus import FLOAT_ATOL, is_floats
from harness.paths import cache_dir, write_cache_file
from harness.pipeline.runtime import build_request
from harness.pipeline.steps import register_problem_step
from harness.records import CheckCase, Problem, replaced
from harness.sandbox import SampleExecution, Sandbox
from harness.sandbox.channel.codec import Opaque

ORACLE = "evalplus"  # the oracle of EvalPlus's own cases (base_N, plus_N): this step fills them
REFERENCE_LIMIT_S = 20.0  # per input: the reference is measured, never cut short
IN_FLIGHT = 8  # references queued on the fork server at once
# 5: a canonical output over the channel's decoding bounds is kept as its digest by equality
# (harness.sandbox.channel.canonical), judged like any other output
# 6: each case's ``expected`` text is kept, not re-serialized by every run (HumanEval+'s are
# 70 MB of JSON: /130's hundred lists of 100,000 floats)
CACHE_FORMAT = 6

# EvalPlus's special oracles, chosen by entry point name (as evalplus does).
MBPP_SET_EQUAL = frozenset(
    "similar_elements find_char_long common_in_nested_lists extract_singly larg_nnum "
    "intersection_array find_dissimilar Diff".split()
)
MBPP_NOT_NONE = frozenset({"check_str", "text_match_three", "text_starta_endb"})
MBPP_SPECIAL = {
    "are_equivalent": "always",
    "sum_div": "zero_ok",
    "surface_Area": "surface",
    "digit_distance_nums": "digits",
}
NEEDS_ARGS = frozenset({"poly", "surface", "digits"})


def oracle_kind(dataset: str, entry_point: str) -> str:
    """Which of EvalPlus's oracles judges a problem's inputs."""
    if dataset == "humaneval":
        return "poly" if entry_point == "find_zero" else "exact"
    if entry_point in MBPP_SPECIAL:
        return MBPP_SPECIAL[entry_point]
    if entry_point in MBPP_SET_EQUAL:
        return "set"
    return "not_none" if entry_point in MBPP_NOT_NONE else "exact"


def with_expected(problems: Sequence[Problem], sandbox: Sandbox) -> list[Problem]:
    """``problems`` with every EvalPlus case's ``expected`` filled (the problem step)."""
    todo = [p for p in problems if _needs_expected(p)]
    if not todo:
        return list(problems)
    outputs: dict[str, dict[str, Any]] = {}
    for digest in sorted({p.metadata["evalplus"]["data_sha256"] for p in todo}):
        share = [p for p in todo if p.metadata["evalplus"]["data_sha256"] == digest]
        outputs.update({f"{digest}/{k}": v for k, v in _outputs(digest, share, sandbox).items()})
    done, wanted = [], {id(p) for p in todo}
    for problem in problems:
        if id(problem) in wanted:
            entry = outputs[f"{problem.metadata['evalplus']['data_sha256']}/{problem.task_id}"]
            problem = _filled(problem, entry)
        done.append(problem)
    return done


def _needs_expected(problem: Problem) -> bool:
    return "evalplus" in problem.metadata and any(
        c.oracle == ORACLE and not c.expected for c in problem.cases
    )


def _own_cases(problem: Problem) -> list[CheckCase]:
    """EvalPlus's own cases of ``problem``; others (``--llm-plus``'s ``plus_gen_N``, judged by
    their own oracle) are left as they are."""
    return [c for c in problem.cases if c.oracle == ORACLE]


_lock = threading.Lock()


def _outputs(digest: str, problems: list[Problem], sandbox: Sandbox) -> dict[str, Any]:
    """``{task_id: {"expected": {case_id: text}} or {"error": why}}``, cached by digest, one
    file per problem (a run reads only its problems'), failures too unless the sandbox or
    the machine may be their cause."""
    folder = cache_dir() / "evalplus" / digest
    with _lock:
        found = {p.task_id: _read(_entry_path(folder, p.task_id)) for p in problems}
        missing = [p for p in problems if found[p.task_id] is None]
        for start in range(0, len(missing), IN_FLIGHT):
            batch = missing[start : start + IN_FLIGHT]
            tickets = [sandbox.submit(_reference_request(p)) for p in batch]
            for problem, ticket in zip(batch, tickets, strict=True):
                entry = _reference_outputs(problem, sandbox.collect(ticket))
                if "error" not in entry:
                    entry = {"expected": _expected_texts(problem, entry)}
                found[problem.task_id] = entry
                if not entry.get("transient"):
                    text = json.dumps({"format": CACHE_FORMAT, **entry})
                    write_cache_file(_entry_path(folder, problem.task_id), text)
    return found


def _entry_path(folder: Path, task_id: str) -> Path:
    return folder / (task_id.replace("/", "_") + ".json")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = loads(path.read_bytes())  # orjson: a third of json's time on 165,000 texts
    except (OSError, ValueError):
        return None
    if type(data) is not dict or data.pop("format", None) != CACHE_FORMAT:
        return None
    return data


def _reference_request(problem: Problem) -> Any:
    cases = tuple(replaced(c, timeout_s=REFERENCE_LIMIT_S) for c in _own_cases(problem))
    return build_request(replaced(problem, cases=cases), problem.reference)


def _reference_outputs(problem: Problem, execution: SampleExecution) -> dict[str, Any]:
    """The reference's outputs per group (encoded), or why there are none."""
    if execution.infra_error:
        why = f"the sandbox could not run the reference: {execution.infra_error}"
        return {"error": why, "transient": True}
    not_none = oracle_kind(_dataset(problem), problem.entry_point) == "not_none"
    groups: dict[str, Any] = {"base": [], "plus": []}
    for case in _own_cases(problem):
        got = execution.cases.get(case.case_id)
        if got is None or got.status != "ok" or not got.values:
            why = got.message or got.status if got is not None else "no result"
            if got is not None and got.exception:
                why = f"{got.exception.get('type')}: {got.exception.get('message', '')}"
            why = f"the canonical solution failed on {case.case_id}: {why}"[:300]
            # A value over the channel's bounds fails the same way on every machine: cached.
            transient = (
                got is None
                or "MemoryError" in why
                or (got.status in ("timeout", "crashed", "error") and "value too large" not in why)
            )
            return {"error": why, "transient": transient}
        value = got.values[0]
        if isinstance(value, Opaque) and not not_none:  # no plain form at all: no data
            why = f"the canonical solution's output on {case.case_id} cannot be sent as data "
            return {"error": why + f"({value!r})"[:200], "transient": False}
        group = case.case_id.rsplit("_", 1)[0]
        groups[group].append(encoded(value is not None if not_none else value))
    return groups


def _dataset(problem: Problem) -> str:
    return str(problem.metadata["evalplus"]["dataset"])


def _filled(problem: Problem, entry: dict[str, Any]) -> Problem:
    """``problem`` with each case's ``expected``, or a data defect when there are none."""
    if "error" in entry:
        return replaced(problem, defects=(*problem.defects, str(entry["error"])))
    texts = entry["expected"]
    cases = [
        replaced(case, expected=texts[case.case_id]) if case.oracle == ORACLE else case
        for case in problem.cases
    ]
    return replaced(problem, cases=tuple(cases))


def _expected_texts(problem: Problem, outputs: dict[str, Any]) -> dict[str, str]:
    """Each case's ``expected`` (JSON text): what EvalPlus's oracle needs of its input."""
    kind = oracle_kind(_dataset(problem), problem.entry_point)
    atol = float(problem.metadata["evalplus"]["atol"])
    in_force = {"base": atol, "plus": atol}  # EvalPlus checks each group in its own process
    texts: dict[str, str] = {}
    for case in _own_cases(problem):
        group, _, index = case.case_id.rpartition("_")
        out = outputs[group][int(index)]
        payload: dict[str, Any] = {"kind": kind, "atol": in_force[group]}
        if kind != "poly":
            payload["out"] = out
            if in_force[group] == 0 and is_floats(decoded(out)):
                in_force[group] = FLOAT_ATOL  # from this input on, for the rest of the group
        if kind in NEEDS_ARGS:
            payload["args"] = encoded(_call_args(case))
        texts[case.case_id] = json.dumps(payload)
    return texts


def _call_args(case: CheckCase) -> Any:
    """The input of a ``candidate(*LITERAL)`` call, evaluated without builtins (a literal)."""
    text = case.calls[0]
    return eval(text[len("candidate(*") : -1], {"__builtins__": {}})  # noqa: S307 - our literal


# A suite's own data: before products add cases (the plus step), whatever was imported first.
register_problem_step("evalplus-expected", with_expected, order=10)
