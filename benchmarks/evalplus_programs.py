"""Programs for comparing the project with ``evalplus`` 0.3.1 on HumanEval+ and MBPP+, and the
two ways of judging them (shared by benchmarks/evalplus_agreement.py, evalplus_speed.py and the
slow agreement test).

Programs, per problem, deterministic: the reference; up to ``mutants`` single-edit mutants
of it (``harness.plus.mutants``: swapped comparisons, constants off by one, ...); and three
wrappers around the reference: one wrong on edge inputs (an empty or zero argument gives
None), one whose float outputs are off by 1e-7 (inside EvalPlus's tolerance: must pass) and
one whose tuple outputs come back as lists (EvalPlus's exact match fails them).

``evalplus`` runs in a subprocess with ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH``
pointed at the mirror: its own ground truth (``get_groundtruth``, cached by evalplus under a
name of its own for a subset) and its own ``check_correctness``, 2 worker processes, as its
``evaluate`` does, with every input judged (``fast_check`` off) or stopping at the first
failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.completions import assemble_program
from harness.plus.mutants import mutants
from harness.records import Problem, Sample
from suites.evalplus import read_records

EVALPLUS_DATASET = {"humaneval-plus": "humaneval", "mbpp-plus": "mbpp"}
OVERRIDE_ENV = {"humaneval": "HUMANEVAL_OVERRIDE_PATH", "mbpp": "MBPP_OVERRIDE_PATH"}


@dataclass(frozen=True)
class Program:
    task_id: str
    kind: str  # reference, mutant, edge, float-noise, tuple-as-list, model
    source: str

    @property
    def sample_id(self) -> str:
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:10]
        return f"{self.kind}-{digest}"


def wrapper(entry: str, body: str) -> str:
    """Source that wraps the reference's ``entry`` (defined above it) with ``body``."""
    # built line by line: a dedent over the whole template would also cut the indentation
    # of the body's second line onwards, and the program would not compile
    inner = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return f"\n\n_codeeval_reference = {entry}\n\n\ndef {entry}(*args):\n{inner}\n"


EDGE = """
for arg in args:
    if arg is not None and not isinstance(arg, bool) and arg in ([], "", 0, ()):
        return None
return _codeeval_reference(*args)
"""
FLOAT_NOISE = """
out = _codeeval_reference(*args)
return out + 1e-7 if type(out) is float else out
"""
TUPLE_AS_LIST = """
out = _codeeval_reference(*args)
return list(out) if type(out) is tuple else out
"""


def make_programs(problems: Sequence[Problem], mutants_per_problem: int = 2) -> list[Program]:
    """The programs of the module docstring, problem by problem."""
    programs: list[Program] = []
    for problem in problems:
        reference = problem.reference
        programs.append(Program(problem.task_id, "reference", reference))
        seed = int(hashlib.sha256(problem.task_id.encode()).hexdigest()[:8], 16)
        for mutant in mutants(reference, mutants_per_problem, seed=seed):
            programs.append(Program(problem.task_id, "mutant", mutant + "\n"))
        for kind, body in (("edge", EDGE), ("float-noise", FLOAT_NOISE)):
            programs.append(
                Program(problem.task_id, kind, reference + wrapper(problem.entry_point, body))
            )
        if "tuple" in reference or "(" in problem.prompt:
            source = reference + wrapper(problem.entry_point, TUPLE_AS_LIST)
            programs.append(Program(problem.task_id, "tuple-as-list", source))
    unique = {(p.task_id, p.source): p for p in programs}
    for program in unique.values():
        # a program that does not compile fails on both sides and would pass for agreement
        compile(program.source, f"{program.task_id} ({program.kind})", "exec")
    return list(unique.values())


def answers_from(path: Path, problems: Sequence[Problem]) -> list[Program]:
    """A model's answers to ``problems`` as programs (kind ``model``): the ``completion`` of each
    line of a samples file, or of a run's ``results.jsonl`` (a folder: its ``results.jsonl``),
    such as ``pytest --llm-eval humaneval-plus --llm-model smollm2-135m --llm-out DIR`` writes.
    Both judges then get the same program (the project assembles it with the prompt)."""
    if path.is_dir():
        path = path / "results.jsonl"
    wanted = {p.task_id for p in problems}
    programs: dict[tuple[str, str], Program] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line) if line.strip() else {}
        task_id, completion = record.get("task_id"), record.get("completion")
        if task_id in wanted and isinstance(completion, str):
            programs.setdefault((task_id, completion), Program(task_id, "model", completion))
    return list(programs.values())


def samples_for(problems: Sequence[Problem], programs: Sequence[Program]) -> list[Sample]:
    del problems
    return [Sample(p.task_id, p.source, p.sample_id) for p in programs]


def run_project(
    problems: Sequence[Problem],
    programs: Sequence[Program],
    workers: int = 2,
    out: Path | None = None,
    every_case: bool = False,
) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(task_id, sample_id): row}`` from ``harness.evaluate``: a sample stops at its first
    failed input (as evalplus's ``fast_check``), or every input is judged (``every_case``)."""
    from harness.evaluate import evaluate

    samples = samples_for(problems, programs)
    rows = evaluate(problems, samples, workers=workers, out_dir=out, every_case=every_case)
    return {(r["task_id"], r["sample_id"]): r for r in rows}


# The project as a user runs it in a fresh process: the suite loaded from the data, then
# harness.evaluate with N workers; the timer starts after the imports.
_PROJECT_RUNNER = r"""
import json, sys, time
from harness.evaluate import evaluate
from harness.records import Sample
from suites.registry import load_suite

suite, data_dir, samples_path, workers, every = sys.argv[1:6]
samples = [Sample(**json.loads(line)) for line in open(samples_path)]
wanted = {s.task_id for s in samples}
start = time.perf_counter()
problems = [p for p in load_suite(suite, data_dir=data_dir) if p.task_id in wanted]
rows = evaluate(problems, samples, workers=int(workers), every_case=every == "1")
elapsed = time.perf_counter() - start
sys.stdout.write("\n" + json.dumps({"elapsed_s": elapsed, "rows": rows}) + "\n")
"""


SAMPLES = object()  # where the samples file's path goes in a runner's arguments


def _run_fresh(
    runner: str,
    samples: Sequence[dict[str, Any]],
    args: Sequence[Any],
    *,
    who: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> dict[str, Any]:
    """Run ``runner`` (a script) in a fresh interpreter on ``samples`` written to a file (its
    path where ``args`` has :data:`SAMPLES`) and return the JSON report it prints last."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "samples.jsonl"
        path.write_text("".join(json.dumps(s) + "\n" for s in samples))
        argv = [str(path) if a is SAMPLES else a for a in args]
        command = [sys.executable, "-c", runner, *argv]
        done = subprocess.run(
            command, env=env, cwd=cwd, capture_output=True, text=True, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(f"{who} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_project_fresh(
    suite: str,
    data_dir: Path,
    problems: Sequence[Problem],
    programs: Sequence[Program],
    *,
    workers: int = 2,
    every_case: bool = False,
    checkout: Path | None = None,
) -> tuple[dict[tuple[str, str], dict[str, Any]], float]:
    """The rows of ``harness.evaluate`` run as a user runs it, in a fresh process (the suite
    loaded from ``data_dir``, ``workers`` judging workers started), and the seconds from
    loading the suite to the rows. ``checkout``: another checkout of the project whose code
    runs instead of this one's (an earlier commit's, timed beside it)."""
    samples = [s.__dict__ for s in samples_for(problems, programs)]
    args = [suite, str(data_dir), SAMPLES, str(workers), "1" if every_case else "0"]
    env = None
    if checkout is not None:  # its packages first: before this checkout's installed ones
        env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    report = _run_fresh(
        _PROJECT_RUNNER, samples, args, who="the project's run", env=env, cwd=checkout
    )
    rows = {(r["task_id"], r["sample_id"]): r for r in report["rows"]}
    return rows, float(report["elapsed_s"])


def solutions(problems: Sequence[Problem], programs: Sequence[Program]) -> list[dict[str, str]]:
    """What evalplus is given: the program the project runs, whole (its ``solution``)."""
    by_id = {p.task_id: p for p in problems}
    return [
        {
            "task_id": p.task_id,
            "sample_id": p.sample_id,
            "solution": assemble_program(by_id[p.task_id], p.source).program,
        }
        for p in programs
    ]


# evalplus's own evaluate(), as a user runs it (``evalplus.evaluate --dataset ... --samples ...
# --parallel N``): the timer starts after the imports and covers the whole call (the data, the
# cached ground truth, the pool, the results file). The process ends with os._exit: evaluate's
# "stuck" watchdog is a non-daemon thread that sleeps 20 s before it looks again.
_RUNNER = r"""
import json, os, sys, time
from evalplus.evaluate import evaluate

dataset, samples_path, workers, details = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
factor = float(sys.argv[5])
start = time.perf_counter()
evaluate(
    dataset, samples=samples_path, parallel=workers, test_details=details,
    gt_time_limit_factor=factor,
)
elapsed = time.perf_counter() - start
with open(samples_path.replace(".jsonl", "_eval_results.json")) as fh:
    results = json.load(fh)["eval"]
order = {}
for line in open(samples_path):
    sample = json.loads(line)
    order.setdefault(sample["task_id"], []).append(sample["sample_id"])
out = [
    {"task_id": task, "sample_id": order[task][i], "base": r["base_status"], "plus": r["plus_status"]}
    for task, rows in results.items()
    for i, r in enumerate(rows)
]
sys.stdout.write("\n" + json.dumps({"elapsed_s": elapsed, "results": out}) + "\n")
sys.stdout.flush()
os._exit(0)
"""


def evalplus_data(suite: str, data_file: Path, problems: Sequence[Problem]) -> Path:
    """The data file evalplus reads: the mirror's when ``problems`` are all of it, else a
    file of their records alone (kept, named by its content: evalplus caches its ground truth
    by the file's hash)."""
    records = read_records(data_file)[0]
    wanted = {p.task_id for p in problems}
    if {record["task_id"] for _, record in records} <= wanted:
        return data_file
    text = "".join(json.dumps(r) + "\n" for _, r in records if r["task_id"] in wanted)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / "codeeval-evalplus-data" / f"{suite}-{digest}.jsonl"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def run_evalplus(
    suite: str,
    data_file: Path,
    problems: Sequence[Problem],
    programs: Sequence[Program],
    *,
    workers: int = 2,
    fast_check: bool = True,
    time_limit_factor: float = 4.0,
) -> tuple[dict[tuple[str, str], dict[str, Any]], float]:
    """evalplus's verdicts ``{(task_id, sample_id): {"base": status, "plus": status}}`` and
    the seconds its ``evaluate()`` took: its default mode (``fast_check``: each group stops
    at its first failed input), or with ``--test-details`` (every input judged).

    ``time_limit_factor`` is evalplus's ``gt_time_limit_factor`` (an input's limit is that
    many times its reference's time, measured once): its default 4 is what its users get;
    tests that compare verdicts, not speed, raise it so a loaded machine is not a failure."""
    dataset = EVALPLUS_DATASET[suite]
    data = evalplus_data(suite, data_file, problems)
    env = {**os.environ, OVERRIDE_ENV[dataset]: str(data), "TQDM_DISABLE": "1"}
    args = [dataset, SAMPLES, str(workers), "0" if fast_check else "1", str(time_limit_factor)]
    report = _run_fresh(_RUNNER, solutions(problems, programs), args, env=env, who="evalplus")
    verdicts = {(r["task_id"], r["sample_id"]): r for r in report["results"]}
    return verdicts, float(report["elapsed_s"])


# evalplus 0.3.1's own defects: verdicts the project does not copy (docs/evalplus.md).
KNOWN_EVALPLUS_DEFECTS = {
    "HumanEval/32": "evalplus 0.3.1 fails every program: its find_zero oracle checks "
    "|poly(x)| <= atol, then `continue`s past the line that counts the input as passed",
    "Mbpp/255": "evalplus 0.3.1 fails its own reference on a plus input: the 1.6 M tuples "
    "of the answer and of the expected output pass its 4 GiB address-space limit "
    "(EVALPLUS_MAX_MEMORY_BYTES; at 16 GiB it passes)",
}


@dataclass
class Agreement:
    compared: int
    base_agree: int
    plus_agree: int
    disagreements: list[dict[str, Any]]
    data_defects: list[tuple[str, str]]
    false_fails: list[dict[str, Any]]  # evalplus passes (base+plus), the project fails

    @property
    def rate(self) -> float:
        return self.plus_agree / self.compared if self.compared else 1.0

    @property
    def unexplained(self) -> list[dict[str, Any]]:
        """Disagreements other than evalplus's known defects."""
        return [d for d in self.disagreements if "known" not in d]


def compare(
    project: dict[tuple[str, str], dict[str, Any]], evalplus: dict[tuple[str, str], dict[str, Any]]
) -> Agreement:
    """Verdicts side by side: base (the original inputs) and base+plus, per program."""
    result = Agreement(0, 0, 0, [], [], [])
    for key, theirs in sorted(evalplus.items()):
        row = project[key]
        if row["error_kind"] == "data":
            result.data_defects.append(key)
            continue
        result.compared += 1
        their_base = theirs["base"] == "pass"
        their_plus = their_base and theirs["plus"] == "pass"
        ours_base, ours_plus = bool(row.get("base_passed", row["passed"])), bool(row["passed"])
        result.base_agree += ours_base == their_base
        result.plus_agree += ours_plus == their_plus
        if ours_base != their_base or ours_plus != their_plus:
            failed = [c for c in row["cases"] if c["status"] != "passed"][:1]
            entry = {
                "task_id": key[0],
                "sample_id": key[1],
                "evalplus": theirs,
                "project": {"base": ours_base, "plus": ours_plus, "status": row["status"]},
                "first_failure": failed[0] if failed else None,
            }
            if key[0] in KNOWN_EVALPLUS_DEFECTS:
                entry["known"] = KNOWN_EVALPLUS_DEFECTS[key[0]]
            result.disagreements.append(entry)
            if their_plus and not ours_plus:
                result.false_fails.append(entry)
    return result


def timed(function: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start
