"""The public reward engine: the same rows as evaluate(), inline problems, and bad items.

Real runs throughout: the engine and evaluate() both judge in the real sandbox (warm worker
pool), and the identity test compares their rows apart from measured timings.
"""

from __future__ import annotations

import dataclasses
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.evaluate import evaluate
from harness.records import Sample
from harness.rewardapi import RewardEngine, RewardInputError
from harness.rewardapi.engine import separate_runs, with_reward
from harness.rewardapi.inline import content_hash
from harness.rewardapi.items import InlineSpec, check_items
from harness.rewardapi.trl import TRLReward
from harness.rewardapi.verl import compute_score_batch
from harness.sandbox.api import RESOURCE_KEYS
from suites import load_suite, register_suite

TIMINGS = {"duration_s", "max_rss_kb", *RESOURCE_KEYS}  # measured: differ per run

ADD = {
    "prompt": "def add(a, b):\n",
    "tests": "assert add(1, 2) == 3\nassert add(-1, 1) == 0\nassert add(2, 2) == 4\n",
    "entry_point": "add",
    "reference": "def add(a, b):\n    return a + b\n",
}
ADD_CHECK = {
    **ADD,
    "prompt": 'def add(a, b):\n    """Add two numbers."""\n',
    "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n",
}
JS_ADD = "function add(x, y) {\n  return x + y;\n}\n"
ADD_JS = {  # a typed Python problem, translated as the humaneval-js suite is
    **ADD,
    "prompt": "def add(a: int, b: int) -> int:\n",
    "reference": "def add(a: int, b: int) -> int:\n    return a + b\n",
    "language": "js",
}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def comparable(row: dict) -> dict:
    """A row without what a run measures: timings, and the efficiency analyzer's speed (a
    measured time too), with the reward less its efficiency part."""
    row = without_timings(row)
    parts = dict(row.get("reward_parts") or {})
    speed = parts.pop("efficiency", 0.0)
    if row.get("reward") is not None:
        row["reward"] = round(row["reward"] - speed, 9)
    analyzers = dict(row.get("analyzers") or {})
    if "efficiency" in analyzers:
        analyzers["efficiency"] = {
            k: v
            for k, v in analyzers["efficiency"].items()
            if k not in ("ratio", "speed", "sample_s")
        }
    return {**row, "reward_parts": parts, "analyzers": analyzers}


@pytest.fixture(scope="module")
def engine():
    with RewardEngine(workers=2) as engine:
        yield engine


def _problem(suite: str, task_id: str):
    return next(p for p in load_suite(suite) if p.task_id == task_id)


def trl_columns(items: list[dict]) -> dict[str, list]:
    """The items as a TRL dataset's columns (None where a row has no such value)."""
    columns: dict[str, list] = {name: [] for name in ("task_id", "suite", "problem_prompt")}
    columns.update({name: [] for name in ("tests", "entry_point", "reference", "language")})
    for item in items:
        problem = item.get("problem") or {}
        columns["task_id"].append(item.get("task_id"))
        columns["suite"].append(item.get("suite"))
        columns["problem_prompt"].append(problem.get("prompt"))
        for name in ("tests", "entry_point", "reference", "language"):
            columns[name].append(problem.get(name))
    return columns


LOOPS = {"completion": "    while True:\n        pass\n", "task_id": "HumanEval/0"}  # a timeout


def identity_items() -> list[dict]:
    mbpp = _problem("mbpp-sanitized", "Mbpp/11")
    return [
        {"completion": "    return x + y\n", "task_id": "HumanEval/53"},
        {"completion": "    return x - y\n", "task_id": "HumanEval/53"},
        {"completion": "    return x +\n", "task_id": "HumanEval/53"},
        {"completion": mbpp.reference, "task_id": "Mbpp/11", "suite": "mbpp-sanitized"},
        {
            "completion": "def remove_Occ(s, ch):\n    return s\n",
            "task_id": "Mbpp/11",
            "suite": "mbpp-sanitized",
        },
        {"completion": JS_ADD, "task_id": "js/HumanEval/53", "suite": "humaneval-js"},
        {"completion": "    return a + b\n", "problem": ADD},
        {"completion": "def add(a, b):\n    return a * b\n", "problem": ADD_CHECK},
        {"completion": JS_ADD.replace("x", "a").replace("y", "b"), "problem": ADD_JS},
    ]


@pytest.mark.parametrize("preset", ["binary", pytest.param("weighted", marks=pytest.mark.slow)])
def test_rows_are_evaluates_rows_across_suites_languages_and_presets(preset: str) -> None:
    """The engine, the TRL adapter and verl's batched form against evaluate() on the same samples."""
    items = identity_items()
    if preset == "weighted":  # the slow tier adds a timeout (seconds on every path)
        items.insert(3, LOOPS)
    completions = [i["completion"] for i in items]
    with RewardEngine(reward=preset, workers=2) as engine:
        rows = engine.score(items)
        problems = engine.problems.resolve(check_items(items))
        trl = TRLReward(engine)
        trl_rewards = trl([""] * len(items), completions, **trl_columns(items))
    verl_scores = compute_score_batch(
        data_sources=[i.get("suite", "humaneval") if "task_id" in i else "inline" for i in items],
        solution_strs=completions,
        ground_truths=[i.get("task_id") or i["problem"] for i in items],
        extra_infos=[{} for _ in items],
        reward=preset,
        workers=2,
    )
    samples = [
        Sample(p.task_id, i["completion"], str(n))
        for n, (i, p) in enumerate(zip(items, problems, strict=True))
    ]
    expected = evaluate(
        list({p.task_id: p for p in problems}.values()), samples, reward=preset, workers=2
    )
    assert [r["status"] for r in rows if r["task_id"] != "HumanEval/0"] == [
        "passed",
        "failed",
        "failed",
        "passed",
        "failed",
        "passed",
        "passed",
        "failed",
        "passed",
    ]
    assert [comparable(r) for r in rows] == [comparable(r) for r in expected]
    assert [comparable(r) for r in trl.last_rows] == [comparable(r) for r in expected]
    assert trl_rewards == [r["reward"] for r in trl.last_rows]
    assert [s["passed"] for s in verl_scores] == [float(r["passed"]) for r in expected]
    efficiency_weight = 0.0 if preset == "binary" else 0.1  # a measured part of the reward
    for score, row in zip(verl_scores, expected, strict=True):
        assert abs(score["score"] - row["reward"]) <= efficiency_weight
    assert [r["status"] for r in rows if r["task_id"] == "HumanEval/0"] == ["timeout"] * (
        preset == "weighted"
    )
    for row in rows:
        assert isinstance(row["reward"], float)
    if preset == "binary":
        assert [r["reward"] for r in rows] == [1.0 if r["passed"] else 0.0 for r in rows]


def test_an_inline_problem_is_built_once_and_named_by_its_content(engine: RewardEngine) -> None:
    builds = engine.problems.inline.builds
    first = engine.score([{"completion": "    return a + b\n", "problem": ADD}] * 3)
    second = engine.score([{"completion": "    return a - b\n", "problem": dict(ADD)}])
    assert engine.problems.inline.builds <= builds + 1
    assert {r["task_id"] for r in first + second} == {"inline/" + content_hash(InlineSpec(**ADD))}
    assert [r["passed"] for r in first + second] == [True, True, True, False]
    other = engine.score(
        [{"completion": "    return a + b\n", "problem": {**ADD, "tests": "assert add(1, 1) == 2"}}]
    )
    assert other[0]["task_id"] != first[0]["task_id"] and other[0]["passed"]


def test_assert_lines_are_one_case_each_judged_in_the_trusted_process(engine: RewardEngine) -> None:
    forged = (
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Anything()\n"
    )
    rows = engine.score(
        [
            {"completion": "def add(a, b):\n    return 3\n", "problem": ADD},
            {"completion": forged, "problem": ADD},
            {"completion": "import sys\ndef add(a, b):\n    sys.exit(0)\n", "problem": ADD},
        ]
    )
    assert [c["status"] for c in rows[0]["cases"]] == ["passed", "failed", "failed"]
    for row in rows[1:]:  # a forged equality or an early exit never passes
        assert not row["passed"] and row["reward"] == 0.0


def test_a_problem_the_harness_cannot_judge_gets_no_reward_not_zero(engine: RewardEngine) -> None:
    broken = {**ADD, "reference": "def add(a, b):\n    return a - b\n"}  # fails its own tests
    rows = engine.score(
        [
            {"completion": "    return a + b\n", "problem": broken},
            {"completion": "    return a + b\n", "problem": ADD},
        ]
    )
    assert (rows[0]["status"], rows[0]["error_kind"], rows[0]["reward"]) == ("error", "data", None)
    assert rows[1]["reward"] == 1.0


def test_inline_problems_can_be_turned_off() -> None:
    engine = RewardEngine(workers=0, allow_inline=False)
    with pytest.raises(RewardInputError, match="trusted code") as error:
        engine.score(
            [{"completion": "x", "task_id": "HumanEval/0"}, {"completion": "x", "problem": ADD}]
        )
    assert error.value.field == "items[1].problem"
    assert pickle.loads(pickle.dumps(engine)).problems.allow_inline is False


def test_the_masking_rule() -> None:
    infra = {"status": "error", "error_kind": "infra", "reward": 0.0}
    assert with_reward(infra)["reward"] is None
    assert with_reward({"status": "failed", "reward": float("nan")})["reward"] is None
    assert with_reward({"status": "failed", "reward": 0.0})["reward"] == 0.0


def twin_suite() -> list:
    """HumanEval/53 again under its own suite, with its first check only (a different problem
    behind the same task id, as humaneval-plus has)."""
    problem = _problem("humaneval", "HumanEval/53")
    return [dataclasses.replace(problem, suite="rewardapi-twin", cases=problem.cases[:1])]


def test_one_task_id_in_two_suites_is_scored_against_each(engine: RewardEngine) -> None:
    register_suite("rewardapi-twin", twin_suite)
    rows = engine.score(
        [
            {"completion": "    return x + y\n", "task_id": "HumanEval/53", "suite": "humaneval"},
            {
                "completion": "    return x + y\n",
                "task_id": "HumanEval/53",
                "suite": "rewardapi-twin",
            },
            {"completion": "    return x - y\n", "task_id": "HumanEval/53"},
        ]
    )
    assert [r["suite"] for r in rows] == ["humaneval", "rewardapi-twin", "humaneval"]
    assert [r["passed"] for r in rows] == [True, True, False]
    assert [len(r["cases"]) for r in rows] == [6, 1, 6]


def test_runs_keep_one_problem_per_task_id() -> None:
    a = _problem("humaneval", "HumanEval/1")
    b = dataclasses.replace(a, suite="another")
    c = _problem("humaneval", "HumanEval/2")
    assert separate_runs([a, b, c, a, b]) == [[0, 2, 3], [1, 4]]


BAD_ITEMS = [
    ("x", "items"),
    ([{"task_id": "HumanEval/0"}], "items[0].completion"),
    ([{"completion": 3, "task_id": "HumanEval/0"}], "items[0].completion"),
    ([{"completion": "", "task_id": "HumanEval/0"}, {"completion": ""}], "items[1].task_id"),
    ([{"completion": "", "task_id": "HumanEval/999"}], "items[0].task_id"),
    ([{"completion": "", "task_id": 7}], "items[0].task_id"),
    ([{"completion": "", "task_id": "HumanEval/0", "suite": "nope"}], "items[0].suite"),
    ([{"completion": "", "task_id": "x", "suite": "jsonl:/etc/passwd"}], "items[0].suite"),
    ([{"completion": "", "task_id": "HumanEval/0", "problem": ADD}], "items[0].problem"),
    ([{"completion": "", "task": "HumanEval/0"}], "items[0].task"),
    ([{"completion": "", "a b": 1}], "items[0]['a b']"),
    ([{"completion": "", "problem": "def f(): pass"}], "items[0].problem"),
    ([{"completion": "", "problem": {**ADD, "tests": None}}], "items[0].problem.tests"),
    ([{"completion": "", "problem": {**ADD, "tests": "   "}}], "items[0].problem.tests"),
    ([{"completion": "", "problem": {**ADD, "tests": "assert True"}}], "items[0].problem.tests"),
    (
        [{"completion": "", "problem": {**ADD, "tests": "def check(candidate):\n  assert ("}}],
        "items[0].problem.tests",
    ),
    (
        [{"completion": "", "problem": {**ADD, "entry_point": "a b"}}],
        "items[0].problem.entry_point",
    ),
    ([{"completion": "", "problem": {**ADD, "language": "cobol"}}], "items[0].problem.language"),
    (
        [{"completion": "", "problem": {**ADD, "reference": "def add(:"}}],
        "items[0].problem.reference",
    ),
    ([{"completion": "", "problem": {**ADD, "test": "x"}}], "items[0].problem.test"),
]


@pytest.mark.parametrize(("items", "field"), BAD_ITEMS)
def test_a_bad_item_names_its_field(engine: RewardEngine, items, field: str) -> None:
    with pytest.raises(RewardInputError) as error:
        engine.score(items)
    assert error.value.field == field
    assert str(error.value).startswith(field + ": ")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
TEXT = st.text(max_size=30) | st.sampled_from(["add", "assert add(1, 2) == 3", ADD["tests"]])
PROBLEM = st.fixed_dictionaries(
    {"tests": TEXT, "entry_point": TEXT}, optional={"prompt": TEXT, "language": TEXT}
)
NEAR_VALID = st.fixed_dictionaries(  # often valid: both outcomes get exercised
    {"completion": st.text(max_size=20)},
    optional={
        "task_id": st.sampled_from(["HumanEval/0", "HumanEval/53", "HumanEval/999", ""]),
        "suite": st.sampled_from(["humaneval", "mbpp", "nope"]),
        "problem": PROBLEM | JSON,
    },
)
ITEM = NEAR_VALID | st.dictionaries(
    st.sampled_from(["completion", "task_id", "suite", "problem", "x"]), JSON, max_size=4
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=st.lists(ITEM | JSON, max_size=4))
def test_whatever_arrives_is_scored_or_named_before_judging(engine: RewardEngine, items) -> None:
    """Arbitrary JSON never crashes the engine with anything but RewardInputError, and a rejected
    batch names an item's field before any sample is judged."""
    try:
        problems = engine.problems.resolve(check_items(items))
    except RewardInputError as error:
        assert re.fullmatch(r"items(\[\d+\](\.\w+|\[.+\])*)?", error.field, re.S), error.field
        return
    assert len(problems) == len(items)
    for item, problem in zip(items, problems, strict=True):
        assert problem.cases and problem.task_id == item.get("task_id", problem.task_id)


@pytest.mark.slow
def test_the_ray_executor_gives_the_same_rows(tmp_path) -> None:
    """executor="ray": the batch (inline problems included) scored by Ray actors, as
    evaluate(executor="ray") scores it; the rows are the local engine's."""
    ray = pytest.importorskip("ray")
    from harness.executors import close_all

    items = identity_items()  # first: without the mirror it skips, and no Ray is left running
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 * 2**20,
        runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}},
    )
    try:
        with RewardEngine(executor="ray", workers=0) as engine:
            remote = engine.score(items)
    finally:
        close_all()
        ray.shutdown()
    with RewardEngine(workers=0) as engine:
        local = engine.score(items)
    assert [comparable(r) for r in remote] == [comparable(r) for r in local]
