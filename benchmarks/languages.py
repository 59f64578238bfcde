"""Per language: a sample's compile + run through the harness against the bare toolchain.

    python benchmarks/languages.py [--languages js,cpp,java,rs] [--samples 10] [--repeats 1]

For each language it takes the fixture solutions (``tests/fixtures/languages``), builds the
exact program the harness compiles (the candidate's program and the generated driver) and
times, interleaved (which of the two goes first alternates), on the same machine in the same
run:

* **harness**: :func:`harness.languages.runner.execute` with an empty compile cache: compile
  (where the language has a compile step) and run every case in the worker's warm sandbox
  (bubblewrap, limits, a uid and a private folder per compile and run; the driver writes its
  frames on the pipe; the values are decoded); the sandbox itself starts once per worker
  (printed separately: it is not a per-sample cost), and one untimed sample goes through
  each side first;
* **bare**: the same compiler command and the same program run directly (no sandbox, no
  limits, the same environment), reading the same frames from the same pipe.

It prints the mean and median seconds per sample of each, the overhead (harness / bare - 1, of
the means and of the medians), and how many problems of HumanEval and sanitized MBPP (test
split) translate into the language. Timings on a shared machine are noisy: run it with nothing else busy, or compare
medians of several runs.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "languages"))


def bare_seconds(language: Any, source: str, cases: int) -> float:
    """Compile and run ``source`` with the plain toolchain, as the harness would, unconfined."""
    from harness.languages import sandboxed

    build = language.build()
    work = tempfile.mkdtemp(prefix="codeeval-bare-")
    # The harness's own fixed environment (the caller's may slow a runtime down: node reads
    # NODE_EXTRA_CA_CERTS at start-up).
    env = {**sandboxed.environment(work), **dict(build.env)}
    try:
        start = time.perf_counter()
        Path(work, build.source_name).write_text(source)
        if build.compile is not None:
            subprocess.run(build.compile, cwd=work, check=True, capture_output=True, env=env)
        read_fd, write_fd = os.pipe()
        argv = [
            p.replace("{build}", work).replace("{start}", "0").replace("{fd}", str(write_fd))
            for p in build.run
        ]
        argv = [a.replace("/tmp/w", work) for a in argv]
        proc = subprocess.Popen(
            argv, cwd=work, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, pass_fds=(write_fd,), env=env,
        )  # fmt: skip
        os.close(write_fd)
        assert proc.stdin is not None
        proc.stdin.write(secrets.token_hex(16).encode() + b"\n")
        proc.stdin.close()
        data = b""
        while chunk := os.read(read_fd, 65536):
            data += chunk
        os.close(read_fd)
        proc.wait()
        elapsed = time.perf_counter() - start
        lines = data.count(b"\n")
        if lines != cases + 2:  # ready, one line per case, the end marker
            raise RuntimeError(f"bare run of {language.name} wrote {lines} lines for {cases} cases")
        return elapsed
    finally:
        shutil.rmtree(work, ignore_errors=True)


def harness_seconds(problem: Any, program: str) -> float:
    from harness.languages.runner import execute

    start = time.perf_counter()
    execution = execute(problem, program)
    elapsed = time.perf_counter() - start
    bad = [c for c in execution.cases.values() if c.status != "ok"]
    if execution.infra_error or bad:
        raise RuntimeError(f"{problem.task_id}: {execution.infra_error or bad[0]}")
    return elapsed


def harness_seconds_uncached(problem: Any, program: str, language_name: str) -> float:
    """:func:`harness_seconds`, then an empty compile cache for the next sample: the harness
    compiles each sample, as the bare side does."""
    from harness.languages import compile_cache

    elapsed = harness_seconds(problem, program)
    shutil.rmtree(os.path.join(compile_cache.cache_root(), language_name), ignore_errors=True)
    return elapsed


def translated_counts(language: str) -> dict[str, list[int]]:
    from suites.registry import load_suite

    counts = {}
    for base in ("humaneval", "mbpp-sanitized"):
        try:
            problems = load_suite(f"{base}-{language}")
        except ValueError as exc:  # no MBPP mirror here
            counts[base] = [0, 0]
            print(f"{base}: {exc}", file=sys.stderr)
            continue
        counts[base] = [sum(not p.defects for p in problems), len(problems)]
    return counts


def measure(language_name: str, samples: int, repeats: int) -> dict[str, Any]:
    import make_samples

    from harness.completions import assemble_program
    from harness.languages import compile_cache, launch, sandboxed
    from harness.languages.registry import get_language
    from suites.registry import load_suite

    language = get_language(language_name)
    problems = {p.task_id: p for p in load_suite(f"humaneval-{language_name}")}
    solutions = list(make_samples.solutions(language_name).items())[:samples]
    harness_times, bare_times = [], []
    # The worker's warm sandbox, started before the clock (once per worker and thread).
    started = time.perf_counter()
    launch.launcher(
        (), language.build().keep_paths, sandboxed.bubblewrap_usable(), compile_cache.cache_root()
    )
    sandbox_start_s = time.perf_counter() - started
    # One untimed sample through each side first: what happens once per worker (imports,
    # first starts of the toolchain in a fresh namespace) is not a per-sample cost.
    task, (completion, _) = solutions[0]
    problem = problems[f"{language_name}/{task}"]
    program = assemble_program(problem, completion).program
    harness_seconds_uncached(problem, program, language_name)
    bare_seconds(language, compile_cache.full_source(problem, program), len(problem.cases))
    turn = 0
    for _ in range(repeats):
        for task, (completion, _) in solutions:
            problem = problems[f"{language_name}/{task}"]
            program = assemble_program(problem, completion).program
            source = compile_cache.full_source(problem, program)
            for side in ("harness", "bare") if turn % 2 == 0 else ("bare", "harness"):
                if side == "harness":
                    harness_times.append(harness_seconds_uncached(problem, program, language_name))
                else:
                    bare_times.append(bare_seconds(language, source, len(problem.cases)))
            turn += 1
    harness_mean, bare_mean = statistics.mean(harness_times), statistics.mean(bare_times)
    return {
        "language": language_name,
        "toolchain": language.version().splitlines()[0],
        "samples": len(harness_times),
        "harness_s": round(harness_mean, 4),
        "bare_s": round(bare_mean, 4),
        "harness_median_s": round(statistics.median(harness_times), 4),
        "bare_median_s": round(statistics.median(bare_times), 4),
        "overhead": round(harness_mean / bare_mean - 1, 4),
        # Of the medians: steadier than the means on a loaded machine (a stall hits either side).
        "overhead_median": round(
            statistics.median(harness_times) / statistics.median(bare_times) - 1, 4
        ),
        "sandbox_start_s": round(sandbox_start_s, 4),
        "translated": translated_counts(language_name),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default="js,cpp,java,rs")
    parser.add_argument("--samples", type=int, default=10, help="fixture solutions per language")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print JSON lines only")
    parser.add_argument(
        "--count",
        action="store_true",
        help="only count the problems that translate (HumanEval, sanitized MBPP's test split)",
    )
    args = parser.parse_args()
    if args.count:  # no timing: how many problems translate into each language
        for name in (n.strip() for n in args.languages.split(",")):
            he, mb = (translated_counts(name)[b] for b in ("humaneval", "mbpp-sanitized"))
            if args.json:
                print(json.dumps({"language": name, "humaneval": he, "mbpp-sanitized": mb}))
            else:
                print(f"{name:<6}HumanEval {he[0]}/{he[1]}, MBPP sanitized (test) {mb[0]}/{mb[1]}")
        return
    saved = os.environ.get("CODEEVAL_CACHE")
    # One cache folder for the run (the warm sandbox binds it), emptied after every sample.
    os.environ["CODEEVAL_CACHE"] = tempfile.mkdtemp(prefix="codeeval-bench-cache-")
    results = []
    try:
        for name in args.languages.split(","):
            result = measure(name.strip(), args.samples, args.repeats)
            results.append(result)
            if args.json:
                print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(os.environ["CODEEVAL_CACHE"], ignore_errors=True)
        if saved is None:
            os.environ.pop("CODEEVAL_CACHE", None)
        else:
            os.environ["CODEEVAL_CACHE"] = saved
    if args.json:
        return
    print(
        f"{'language':<9}{'samples':>8}{'harness s':>11}{'bare s':>9}{'overhead':>10}"
        f"{'medians h/b':>14}{'overhead':>10}{'sandbox start':>15}  translated"
    )
    for r in results:
        he, mb = r["translated"]["humaneval"], r["translated"]["mbpp-sanitized"]
        print(
            f"{r['language']:<9}{r['samples']:>8}{r['harness_s']:>11.3f}{r['bare_s']:>9.3f}"
            f"{r['overhead']:>+10.1%}{r['harness_median_s']:>8.3f}/{r['bare_median_s']:<6.3f}"
            f"{r['overhead_median']:>+10.1%}{r['sandbox_start_s']:>14.3f}s"
            f"  HumanEval {he[0]}/{he[1]}, MBPP sanitized {mb[0]}/{mb[1]}"
        )


if __name__ == "__main__":
    main()
