"""Small runs under pytest-xdist, in real sessions: any number of samples on any number of
workers finishes, and a small run keeps every worker busy (plugin.scheduler)."""

from __future__ import annotations

import json
import os
import re

import pytest

PROBLEM = {
    "task_id": "toy/add",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n",
}
SLOW = "    import time\n    time.sleep({s})\n    return a + b + (a == 2 and {wrong})\n"


def evaluate(
    pytester: pytest.Pytester, samples: list[dict], *extra: str, out: str = "out"
) -> tuple[pytest.RunResult, dict[str, dict]]:
    suite = pytester.path / "problems.jsonl"
    suite.write_text(json.dumps(PROBLEM) + "\n")
    path = pytester.path / "samples.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    result = pytester.runpytest_subprocess(
        "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(path), "--llm-out", out,
        "-p", "no:codeeval_gate", "-p", "no:cacheprovider", "-v", *extra, timeout=120,
    )  # fmt: skip
    rows = {}
    results = pytester.path / out / "results.jsonl"
    for line in results.read_text().splitlines() if results.exists() else []:
        row = json.loads(line)
        rows[row["sample_id"]] = row
    return result, rows


def samples(n: int, sleep_s: float = 0.0) -> list[dict]:
    return [
        {
            "task_id": "toy/add",
            "sample_id": str(i),
            "completion": SLOW.format(s=sleep_s, wrong=i % 2),
        }
        for i in range(n)
    ]


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("count", "workers"), [(1, 2), (3, 4), (0, 2)])
def test_any_number_of_samples_on_any_number_of_workers_finishes(
    pytester: pytest.Pytester, count: int, workers: int
) -> None:
    # One sample on two workers used to wait forever: its worker held it, waiting for a next
    # item or a shutdown, and got neither.
    result, rows = evaluate(pytester, samples(count), "-n", str(workers))
    expected = pytest.ExitCode.NO_TESTS_COLLECTED if count == 0 else pytest.ExitCode.TESTS_FAILED
    if count == 1:
        expected = pytest.ExitCode.OK
    assert result.ret == expected, result.stdout.str()[-2000:]
    assert sorted(rows) == [str(i) for i in range(count)]
    assert [rows[str(i)]["status"] for i in range(count)] == [
        "failed" if i % 2 else "passed" for i in range(count)
    ]


def workers_of(result: pytest.RunResult) -> dict[str, str]:
    """The worker that ran each sample, from the verbose lines ``[gw1] ... sample[3]``."""
    found = re.findall(r"\[(gw\d+)\].*?(?:PASSED|FAILED) \S+::sample\[(\w+)\]", result.stdout.str())
    return {sample: worker for worker, sample in found}


@pytest.mark.timeout(300)
def test_a_small_run_uses_every_worker_and_gives_the_same_rows(pytester: pytest.Pytester) -> None:
    # 8 samples of one problem, 0.5 s each: whole modules went to one worker (below 64 items),
    # and -n 2 took as long as one process.
    batch = samples(8, sleep_s=0.5)
    alone, one = evaluate(pytester, batch, "-n", "0", out="one")
    spread, two = evaluate(pytester, batch, "-n", "2", out="two")
    assert alone.ret == spread.ret == pytest.ExitCode.TESTS_FAILED, spread.stdout.str()[-2000:]
    ran = workers_of(spread)
    assert sorted(ran) == [str(i) for i in range(8)]
    assert sorted(ran.values()).count("gw0") == 4 and sorted(ran.values()).count("gw1") == 4
    assert timing_free(one) == timing_free(two)


def timing_free(rows: dict[str, dict]) -> dict[str, dict]:
    """Rows without what a run measures (timings, resource use)."""
    kept = {}
    for key, row in rows.items():
        row = {k: v for k, v in row.items() if k not in ("duration_s", "execution")}
        row["cases"] = [{k: v for k, v in c.items() if k != "duration_s"} for c in row["cases"]]
        kept[key] = row
    return kept


SPAWN_SPY = """
import json, os, subprocess
import pytest

spawned = []  # the fork servers this process started: every Popen of the server's script
_Popen = subprocess.Popen


class SpyingPopen(_Popen):
    def __init__(self, args, *rest, **kwargs):
        if any(str(arg).endswith("server.py") for arg in args):
            spawned.append(os.getpid())
        super().__init__(args, *rest, **kwargs)


subprocess.Popen = SpyingPopen
seen = {}


def pytest_collection_finish(session):
    seen["at_collection"] = len(spawned)


def pytest_sessionfinish(session):
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None:
        seen["in_all"] = len(spawned)
        with open(f"spawns-{workerinput['workerid']}.json", "w") as fh:
            json.dump(seen, fh)
"""


@pytest.mark.timeout(240)
def test_each_worker_starts_its_fork_server_before_collecting_and_keeps_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fork server's start (a tenth of a second or more) delayed each worker's first
    # sample; it now overlaps the worker's collection, and that server runs every sample.
    pytester.makepyfile(spawn_spy=SPAWN_SPY)
    monkeypatch.setenv(
        "PYTHONPATH", f"{pytester.path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    )
    result, rows = evaluate(pytester, samples(6), "-n", "2", "-p", "spawn_spy")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    assert sorted(rows) == [str(i) for i in range(6)]
    seen = {p.name: json.loads(p.read_text()) for p in pytester.path.glob("spawns-gw*.json")}
    assert sorted(seen) == ["spawns-gw0.json", "spawns-gw1.json"]
    assert all(s == {"at_collection": 1, "in_all": 1} for s in seen.values()), seen
