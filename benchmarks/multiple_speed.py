"""multiple-js/cpp/java/rs against MultiPL-E-style execution: the same programs, 2 workers each.

    python benchmarks/multiple_speed.py [--languages js,cpp,java,rs] [--samples DIR_OR_JSONL]

For each language, on the same programs in the same run:

* **project**: :func:`harness.evaluate.evaluate` with ``workers=2`` on the ``multiple-<lang>``
  suite, from an empty cache (``$CODEEVAL_CACHE`` is a fresh folder, so every program is
  compiled): each program compiled once with the dialect's driver, every assertion's call run
  in the warm sandbox, values judged in this process;
* **MultiPL-E**: :func:`suites.multiple_e_reference.run_all` with 2 workers: one compile + run
  of ``prompt + completion + tests`` per program in a fresh bubblewrap sandbox, exit 0 passes
  (MultiPL-E's own way; the fork-per-program floor of that approach).

The programs are the hand-written solutions and their wrong variants
(``tests/multiple_e_programs.py``) or, with ``--samples``, a samples file (``task_id``,
``completion``) or a run folder's ``samples.jsonl`` (SmolLM2's answers from ``pytest
--llm-eval multiple-js --llm-model smollm2-135m --llm-prompt-style completion --llm-out DIR``).
Prints seconds for each side, the ratio (MultiPL-E / project: above 1 the project is faster)
and how many verdicts agree. Timings on a shared machine are noisy; compare runs made with
nothing else busy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: the project and its tests' programs


def programs(language: str, samples: Path | None) -> list[tuple[str, str]]:
    """(MultiPL-E problem name prefix or task id, completion) pairs to time."""
    if samples is not None:
        path = samples / "samples.jsonl" if samples.is_dir() else samples
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [
            (r["task_id"], r["completion"]) for r in rows if f"multiple-{language}/" in r["task_id"]
        ]
    import importlib.util

    spec = importlib.util.spec_from_file_location("programs", ROOT / "tests/multiple_e_programs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = []
    for prefix, code in module.SOLUTIONS[language].items():
        out += [(prefix, code)] + [(prefix, wrong) for wrong in module.wrong_variants(code)]
    return out


def measure(language: str, samples_path: Path | None, workers: int) -> dict[str, Any]:
    from harness.evaluate import evaluate
    from harness.records import Sample
    from suites import load_suite
    from suites import multiple_e_reference as reference

    problems = load_suite(f"multiple-{language}")
    by_name = {p.metadata["multiple_e_name"]: p for p in problems}
    by_id = {p.task_id: p for p in problems}
    samples, pairs = [], []
    for number, (key, code) in enumerate(programs(language, samples_path)):
        problem = by_id.get(key) or next(
            (p for name, p in by_name.items() if name.startswith(key)), None
        )
        if problem is None or problem.defects:
            continue
        samples.append(Sample(problem.task_id, code, f"b{number}"))
        pairs.append((problem, code))
    with tempfile.TemporaryDirectory(prefix="multiple-speed-") as cache:
        os.environ["CODEEVAL_CACHE"] = cache  # every program compiled, none from a cache
        started = time.perf_counter()
        rows = evaluate(problems, samples, workers=workers)
        project_s = time.perf_counter() - started
    started = time.perf_counter()
    outcomes = reference.run_all(pairs, workers=workers)
    reference_s = time.perf_counter() - started
    agree = sum(
        (row["status"] == "passed") == outcome.passed
        for row, outcome in zip(rows, outcomes, strict=True)
    )
    return {
        "language": language,
        "programs": len(samples),
        "project_s": round(project_s, 2),
        "multiple_e_s": round(reference_s, 2),
        "ratio": round(reference_s / project_s, 2) if project_s else None,
        "agree": agree,
        "passed_project": sum(row["status"] == "passed" for row in rows),
        "passed_multiple_e": sum(o.passed for o in outcomes),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default="js,cpp,java,rs")
    parser.add_argument("--samples", type=Path, default=None, help="samples.jsonl or a run folder")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    args = parser.parse_args(argv)
    results = []
    print(
        f"{'language':10} {'programs':>8} {'project s':>10} {'MultiPL-E s':>12} {'ratio':>6} {'agree':>9}"
    )
    for language in args.languages.split(","):
        r = measure(language, args.samples, args.workers)
        results.append(r)
        print(
            f"{language:10} {r['programs']:>8} {r['project_s']:>10.1f} {r['multiple_e_s']:>12.1f} "
            f"{r['ratio']:>6} {r['agree']:>4}/{r['programs']:<4}"
        )
    if args.json:
        print(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
