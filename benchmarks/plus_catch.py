"""How many wrong programs ``--llm-plus`` catches, judged against HumanEval+ v0.1.10 itself.

    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.plus_catch
    CODEEVAL_DATA_DIR=/work/shared/data python -m benchmarks.plus_catch --tasks 0:40 --per-task 4

1. **Programs** (deterministic, seeded): each HumanEval+ reference (``prompt +
   canonical_solution``) and up to ``--per-task`` single-edit mutants of it, made here (not by the
   generator): off-by-one constants and ``range``/slice bounds, swapped comparisons and boolean
   operators, arithmetic swaps, dropped ``if`` branches, dropped ``not``, early returns on edge
   inputs (empty, zero, one element).
2. **The project**: the ``humaneval`` suite with ``--llm-plus N`` (``evaluate``, 2 workers);
   a row's ``base_passed`` is the verdict on HumanEval's own checks, its status the verdict on
   those + the generated plus cases.
3. **Ground truth**: ``evalplus`` 0.3.1's own evaluator (``check_correctness``, base + plus
   inputs, its own ground truth and time limits), offline with ``HUMANEVAL_OVERRIDE_PATH``,
   for every program that passes HumanEval's checks. Verdicts are cached by program hash.

Prints: wrong programs that pass HumanEval and fail HumanEval+, the share of them ``--llm-plus``
fails (target: at least 80%), and false fails (programs HumanEval+ passes that ``--llm-plus``
fails: must be 0), with each false fail and each miss listed.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import os
import random
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

DATA_FILE = "evalplus/HumanEvalPlus-v0.1.10.jsonl.gz"

# -- the wrong programs ----------------------------------------------------------------------
_COMPARES = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_COMPARES.update({ast.Eq: ast.NotEq, ast.NotEq: ast.Eq})
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Div}
_EDGE_RETURNS = ("None", "0", "[]", "''", "False", "True", "1")

Edit = Callable[[Any], None]  # one mutation, applied in place to its node


def _compare(index: int) -> Edit:
    def edit(node: Any) -> None:
        node.ops[index] = _COMPARES[type(node.ops[index])]()

    return edit


def _arith(node: Any) -> None:
    node.op = _ARITH[type(node.op)]()


def _boolop(node: Any) -> None:
    node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()


def _shift(delta: int) -> Edit:
    def edit(node: Any) -> None:
        node.value += delta

    return edit


def _drop_not(node: Any) -> None:
    node.op = ast.UAdd()
    node.operand = ast.Call(ast.Name("bool", ast.Load()), [node.operand], [])


def _drop_branch(node: Any) -> None:
    node.test = ast.Constant(False)


def _range_bound(node: Any) -> None:
    index = 1 if len(node.args) >= 2 else 0
    node.args[index] = ast.BinOp(node.args[index], ast.Sub(), ast.Constant(1))


def _sites(entry: ast.FunctionDef) -> list[tuple[str, ast.AST, Edit]]:
    """``(kind, node, edit)`` for every single-node mutation inside the entry point, in
    ``ast.walk`` order (the same order on a fresh parse of the same text)."""
    out: list[tuple[str, ast.AST, Edit]] = []
    for node in ast.walk(entry):
        if isinstance(node, ast.Compare):
            out += [
                ("compare", node, _compare(i))
                for i, op in enumerate(node.ops)
                if type(op) in _COMPARES
            ]
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            out.append(("arith", node, _arith))
        elif isinstance(node, ast.BoolOp):
            out.append(("boolop", node, _boolop))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            out += [("off-by-one", node, _shift(1)), ("off-by-one", node, _shift(-1))]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append(("drop not", node, _drop_not))
        elif isinstance(node, ast.If):
            out.append(("drop branch", node, _drop_branch))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "range" and node.args:
            out.append(("range bound", node, _range_bound))
    return out


def _entry(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _edge_guards(entry: ast.FunctionDef) -> list[str]:
    """Early returns on an edge input of the first parameter: ``if not x: return 0``..."""
    if not entry.args.args:
        return []
    name = entry.args.args[0].arg
    guards = (f"not {name}", f"{name} == 0", f"hasattr({name}, '__len__') and len({name}) == 1")
    return [f"if {guard}:\n    return {value}" for guard in guards for value in _EDGE_RETURNS]


def wrong_programs(source: str, entry_point: str, limit: int, seed: str) -> list[tuple[str, str]]:
    """Up to ``limit`` distinct ``(kind, program)`` single-edit mutants of ``source``."""
    tree = ast.parse(source)
    entry = _entry(tree, entry_point)
    if entry is None:
        return []
    options: list[tuple[str, int | str]] = [(k, i) for i, (k, _, _) in enumerate(_sites(entry))]
    options += [("edge return", guard) for guard in _edge_guards(entry)]
    random.Random(seed).shuffle(options)
    original = ast.unparse(tree)
    out: dict[str, str] = {}
    for kind, where in options:
        if len(out) >= limit:
            break
        mutant = ast.parse(source)
        entry = _entry(mutant, entry_point)
        assert entry is not None
        if isinstance(where, str):
            docstring = entry.body and isinstance(
                getattr(entry.body[0], "value", None), ast.Constant
            )
            entry.body[1 if docstring else 0 : 1 if docstring else 0] = ast.parse(where).body
        else:
            _, node, edit = _sites(entry)[where]
            edit(node)
        try:
            text = ast.unparse(ast.fix_missing_locations(mutant))
            compile(text, "<mutant>", "exec")
        except (SyntaxError, ValueError, TypeError):
            continue
        if text != original and text not in out:
            out[text] = kind
    return [(kind, text) for text, kind in out.items()]


def program_set(records: list[dict[str, Any]], per_task: int) -> list[dict[str, str]]:
    """The references and their mutants: ``{"task_id", "kind", "program"}`` each."""
    out = []
    for record in records:
        reference = record["prompt"] + record["canonical_solution"]
        out.append({"task_id": record["task_id"], "kind": "reference", "program": reference})
        for kind, text in wrong_programs(
            reference, record["entry_point"], per_task, record["task_id"]
        ):
            out.append({"task_id": record["task_id"], "kind": kind, "program": text})
    return out


_FENCE = re.compile(r"```(?:python|py)?\n(.*?)(?:```|$)", re.S)


def sample_programs(records: list[dict[str, Any]], path: Path) -> list[dict[str, str]]:
    """A samples file's answers (``task_id``, ``completion``: a model's, SmolLM2's from ``make
    eval``'s ``out/``) as whole programs: the prompt and the completion, as evalplus joins them,
    or the completion alone where it defines the entry point itself."""
    by_task = {r["task_id"]: r for r in records}
    out = []
    for line in path.read_text().splitlines():
        sample = json.loads(line) if line.strip() else None
        record = by_task.get(sample["task_id"]) if sample else None
        if sample is None or record is None:
            continue
        completion = str(sample.get("completion", ""))
        fenced = _FENCE.search(completion)  # a chat answer: its first code block
        code = fenced.group(1) if fenced else completion
        whole = f"def {record['entry_point']}(" in code
        # Behind the prompt either way: its imports (``List``) and helpers stay defined.
        program = record["prompt"] + ("\n" + code if whole else code)
        item = {"task_id": record["task_id"], "kind": "sample", "program": program}
        if item not in out:  # the same answer twice is one program
            out.append(item)
    return out


# -- the two judges --------------------------------------------------------------------------
def project_rows(programs: list[dict[str, str]], count: int, workers: int) -> list[dict[str, Any]]:
    """The ``humaneval`` suite with ``--llm-plus count``, as the plugin runs it."""
    from harness.evaluate import evaluate
    from harness.plus import only_for, request_plus
    from harness.records import Sample
    from suites import load_suite

    wanted = {p["task_id"] for p in programs}
    problems = [p for p in load_suite("humaneval") if p.task_id in wanted]
    problems = only_for(request_plus(problems, count), wanted)
    samples = [Sample(p["task_id"], p["program"], str(i)) for i, p in enumerate(programs)]
    return evaluate(problems, samples, workers=workers)


def _evalplus_one(args: tuple[str, dict[str, Any], str, dict[str, Any]]) -> tuple[str, str]:
    from evalplus.evaluate import check_correctness

    key, problem, program, expected = args
    result = check_correctness("humaneval", 0, problem, program, expected, fast_check=True)
    return result["base"][0], result["plus"][0]


def evalplus_verdicts(
    programs: list[dict[str, str]], workers: int, cache: Path
) -> dict[str, tuple[str, str]]:
    """evalplus's (base, plus) status per program text hash; cached in ``cache``. A program
    that fails is judged a second time and fails only if it fails both times: evalplus's
    time limits (4 x the reference's time, at least 1 s) meet a shared, loaded machine."""
    from evalplus.data import get_human_eval_plus, get_human_eval_plus_hash
    from evalplus.evaluate import get_groundtruth

    known: dict[str, tuple[str, str]] = {}
    if cache.exists():
        known = {k: tuple(v) for k, v in json.loads(cache.read_text()).items()}  # type: ignore[misc]
    todo = {_key(p): p for p in programs if _key(p) not in known}
    if todo:
        problems = get_human_eval_plus()
        expected = get_groundtruth(problems, get_human_eval_plus_hash(), [])
        jobs = [
            (k, problems[p["task_id"]], p["program"], expected[p["task_id"]])
            for k, p in todo.items()
        ]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            verdicts = dict(zip(todo, pool.map(_evalplus_one, jobs), strict=True))
            again = [job for job in jobs if verdicts[job[0]] != ("pass", "pass")]
            for (key, *_), verdict in zip(again, pool.map(_evalplus_one, again), strict=True):
                if verdict == ("pass", "pass"):
                    verdicts[key] = verdict
        known.update(verdicts)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(known))
    return known


def _verify_one(args: tuple[dict[str, Any], str, list[list[Any]]]) -> list[str]:
    """For each input: ``invalid`` (HumanEval+'s contract refuses it), ``wrong`` (HumanEval+'s
    own evaluator, with its reference's answer, fails the program on it) or ``right``."""
    from evalplus.evaluate import untrusted_check
    from evalplus.gen.util import trusted_exec

    problem, program, inputs = args
    verdicts = []
    for inp in inputs:
        code = problem["prompt"] + problem["contract"] + problem["canonical_solution"]
        try:
            expected, times = trusted_exec(code, [inp], problem["entry_point"], record_time=True)
        except Exception:  # noqa: BLE001 - the contract (or the reference) refuses it
            verdicts.append("invalid")
            continue
        status, _ = untrusted_check(
            "humaneval", program, [inp], problem["entry_point"], expected, problem["atol"], times
        )
        verdicts.append("right" if status == "pass" else "wrong")
    return verdicts


def verify_false_fails(
    false_fails: list[tuple[dict[str, str], dict[str, Any]]], count: int, workers: int
) -> list[str]:
    """Each false fail checked by HumanEval+ itself on the inputs it failed: ``HumanEval+
    misses it`` when HumanEval+'s contract allows one of them and its own evaluator, with its
    own reference's answer, fails the program there; else ``disagreement``."""
    if not false_fails:
        return []
    from evalplus.data import get_human_eval_plus

    from harness.plus import expand_plus, request_plus
    from harness.sandbox import SandboxSettings
    from harness.sandbox.shared import shared_sandbox
    from suites import load_suite

    wanted = {program["task_id"] for program, _ in false_fails}
    problems = [p for p in load_suite("humaneval") if p.task_id in wanted]
    expanded = expand_plus(request_plus(problems, count), shared_sandbox(SandboxSettings()))
    calls = {(p.task_id, c.case_id): c.calls[0] for p in expanded for c in p.cases}
    records = get_human_eval_plus()
    jobs = []
    for program, row in false_fails:
        failed = [c["case_id"] for c in row["cases"] if c.get("status") != "passed"]
        inputs = [_call_args(calls[(program["task_id"], case)]) for case in failed]
        jobs.append((records[program["task_id"]], program["program"], inputs))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        found = list(pool.map(_verify_one, jobs))
    return ["HumanEval+ misses it" if "wrong" in v else "disagreement" for v in found]


def _call_args(call: str) -> list[Any]:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    return [ast.literal_eval(a) for a in node.args]


def _key(program: dict[str, str]) -> str:
    return hashlib.sha256(f"{program['task_id']}\n{program['program']}".encode()).hexdigest()[:20]


# -- the measurement -------------------------------------------------------------------------
def measure(
    tasks: slice, per_task: int, count: int, workers: int, samples: Path | None = None
) -> dict[str, Any]:
    data_dir = Path(os.environ.get("CODEEVAL_DATA_DIR", Path(__file__).parents[2] / "shared/data"))
    os.environ.setdefault("HUMANEVAL_OVERRIDE_PATH", str(data_dir / DATA_FILE))
    with gzip.open(data_dir / DATA_FILE, "rt") as handle:
        records = [json.loads(line) for line in handle][tasks]
    programs = program_set(records, per_task)
    if samples is not None:
        programs += sample_programs(records, samples)
    started = time.perf_counter()
    rows = project_rows(programs, count, workers)
    project_s = time.perf_counter() - started
    base_passing = [p for p, r in zip(programs, rows, strict=True) if r.get("base_passed")]
    from harness.paths import cache_dir

    started = time.perf_counter()
    truth = evalplus_verdicts(base_passing, workers, cache_dir() / "plus_catch.json")
    evalplus_s = time.perf_counter() - started
    by_program = {_key(p): r for p, r in zip(programs, rows, strict=True)}
    # A task whose own reference evalplus fails (in this environment) says nothing about ours.
    unusable = sorted(
        p["task_id"]
        for p in base_passing
        if p["kind"] == "reference" and truth[_key(p)] != ("pass", "pass")
    )
    caught, missed, false_fails, plus_passing = [], [], [], 0
    for program in base_passing:
        if program["task_id"] in unusable:
            continue
        row = by_program[_key(program)]
        base, plus = truth[_key(program)]
        ours_fail = row["status"] != "passed"
        if base == "pass" and plus == "pass":
            plus_passing += 1
            if ours_fail:
                false_fails.append((program, row))
        elif ours_fail:
            caught.append(program)
        else:
            missed.append(program)
    return {
        "programs": len(programs),
        "unusable": unusable,
        "base_passing": len(base_passing),
        "plus_passing": plus_passing,
        "caught": caught,
        "missed": missed,
        "false_fails": false_fails,
        "checked": verify_false_fails(false_fails, count, workers),
        "errors": sum(r["status"] == "error" for r in rows),
        "project_s": project_s,
        "evalplus_s": evalplus_s,
    }


def _failed_cases(row: dict[str, Any]) -> str:
    return "; ".join(
        f"{c['case_id']}: {' '.join(str(c.get('message', '')).split())[:160]}"
        for c in row.get("cases", [])
        if c.get("status") != "passed"
    )[:400]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=":", help="a slice of HumanEval+'s 164 tasks: 0:40")
    parser.add_argument("--per-task", type=int, default=6, help="mutants per task (default 6)")
    parser.add_argument(
        "--plus", type=int, default=None, help="--llm-plus N (default: the default)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("-v", "--verbose", action="store_true", help="list every miss too")
    parser.add_argument("--json", type=Path, default=None, help="write the counts here too")
    parser.add_argument(
        "--samples", type=Path, default=None, help="add a samples file's answers (JSONL)"
    )
    args = parser.parse_args()
    from harness.plus import DEFAULT_COUNT

    count = args.plus if args.plus is not None else DEFAULT_COUNT
    tasks = slice(*[int(x) if x else None for x in args.tasks.split(":")])
    result = measure(tasks, args.per_task, count, args.workers, args.samples)
    wrong = len(result["caught"]) + len(result["missed"])
    share = len(result["caught"]) / wrong if wrong else 0.0
    print(f"command: {' '.join(sys.argv)}")
    print(
        f"{result['programs']} programs ({args.per_task} mutants per task at most + references); "
        f"{result['base_passing']} pass HumanEval's checks; {result['errors']} harness errors"
    )
    if result["unusable"]:
        print(
            f"left out: {', '.join(result['unusable'])} (evalplus fails the task's own reference "
            "here, so its verdicts on the task's mutants say nothing)"
        )
    print(f"wrong programs that pass HumanEval and fail HumanEval+: {wrong}")
    print(f"--llm-plus {count} fails {len(result['caught'])} of them: {share:.1%}")
    misses = result["checked"].count("HumanEval+ misses it")
    print(
        f"false fails (HumanEval+ passes, --llm-plus fails): {len(result['false_fails'])} of "
        f"{result['plus_passing']}; wrong by HumanEval+'s own reference and evaluator on an input "
        f"its contract allows (HumanEval+ misses them): {misses}; real disagreements: "
        f"{len(result['false_fails']) - misses}"
    )
    for (program, row), why in zip(result["false_fails"], result["checked"], strict=True):
        print(
            f"  FALSE FAIL [{why}] {program['task_id']} ({program['kind']}): {_failed_cases(row)}"
        )
    for program in result["missed"] if args.verbose else []:
        print(f"  missed {program['task_id']} ({program['kind']})")
    print(f"time: project {result['project_s']:.1f} s, evalplus {result['evalplus_s']:.1f} s")
    if args.json:
        counts = {
            "programs": result["programs"],
            "base_passing": result["base_passing"],
            "wrong": wrong,
            "caught": len(result["caught"]),
            "plus_passing": result["plus_passing"],
            "false_fails": len(result["false_fails"]),
            "humaneval_plus_misses": misses,
            "errors": result["errors"],
            "unusable": result["unusable"],
        }
        args.json.write_text(json.dumps(counts, indent=1) + "\n")


if __name__ == "__main__":
    main()
