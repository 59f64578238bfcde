"""A sample in parts (harness.pipeline.sample_parts): EvalPlus's problems stop at a sample's first failed
input when only the verdict is wanted, and judge every input when a reward, ``every_case`` or
``--llm-every-case`` asks. The verdicts are the same either way."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluate import evaluate
from harness.pipeline.runtime import loaded_suite
from harness.pipeline.sample_parts import (
    CASE_S,
    FIRST_COST_S,
    FIRST_PART,
    GROWTH,
    NOT_RUN,
    merged,
    parts_of,
)
from harness.records import EVERY_CASE, STOP_AT_FIRST_FAILURE, CheckCase, Problem, Sample
from harness.reward import load_reward_config
from harness.sandbox import CaseExecution, SampleExecution
from suites.registry import load_suite


def _problem(groups: list[tuple[str, int]], **metadata: object) -> Problem:
    cases = tuple(
        CheckCase(case_id=f"{name}_{i}", source="", mode="compare", calls=("candidate()",))
        for name, size in groups
        for i in range(size)
    )
    return Problem("s", "T/0", "", "f", cases, "", metadata=dict(metadata))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["base", "plus", "extra"]), st.integers(1, 2000)),
        min_size=1,
        max_size=4,
    )
)
def test_parts_cover_every_case_in_order_and_never_cross_a_group(groups) -> None:
    names = [name for name, _ in groups]
    groups = [
        (f"{name}{i}" if names.count(name) > 1 else name, n) for i, (name, n) in enumerate(groups)
    ]
    problem = _problem(groups, **{STOP_AT_FIRST_FAILURE: True})
    parts = parts_of(problem)
    assert parts[0][0] == 0 and parts[-1][1] == len(problem.cases)
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:], strict=False))
    start = 0
    for _name, size in groups:  # each group's parts grow fourfold from FIRST_PART
        mine = [p for p in parts if start <= p[0] < start + size]
        assert mine[0][0] == start and mine[-1][1] == start + size
        for index, (a, b) in enumerate(mine):
            assert b - a == min(FIRST_PART * GROWTH**index, start + size - a)
        start += size


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["base", "plus"]),
            st.lists(st.floats(0, 0.05) | st.just(0.0), min_size=1, max_size=1500),
        ),
        min_size=1,
        max_size=2,
        unique_by=lambda group: group[0],
    )
)
def test_parts_by_the_references_times_grow_fourfold_in_cost(groups) -> None:
    durations = {f"{name}_{i}": t for name, times in groups for i, t in enumerate(times)}
    problem = _problem(
        [(name, len(times)) for name, times in groups],
        **{STOP_AT_FIRST_FAILURE: True, "reference_durations": durations},
    )
    parts = parts_of(problem)
    assert parts[0][0] == 0 and parts[-1][1] == len(problem.cases)
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(parts, parts[1:], strict=False))
    cost = [CASE_S + durations[c.case_id] for c in problem.cases]
    start = 0
    for _name, times in groups:
        mine = [p for p in parts if start <= p[0] < start + len(times)]
        assert mine[-1][1] == start + len(times)  # never across groups
        for index, (a, b) in enumerate(mine):
            # within its budget, unless it is one case; the next case would not have fit
            budget = FIRST_COST_S * GROWTH**index
            assert b - a == 1 or sum(cost[a:b]) <= budget + 1e-12
            if b < start + len(times):
                assert sum(cost[a : b + 1]) > budget
        start += len(times)


def test_cheap_inputs_run_in_few_parts_and_slow_ones_in_finer_parts() -> None:
    cheap = {f"plus_{i}": 2e-6 for i in range(1000)} | {f"base_{i}": 2e-6 for i in range(10)}
    problem = _problem(
        [("base", 10), ("plus", 1000)],
        **{STOP_AT_FIRST_FAILURE: True, "reference_durations": cheap},
    )
    assert len(parts_of(problem)) == 3  # base, then about 16 ms of inputs, then the rest
    slow = cheap | {f"plus_{i}": 0.01 for i in range(100)}
    problem = _problem(
        [("base", 10), ("plus", 1000)],
        **{STOP_AT_FIRST_FAILURE: True, "reference_durations": slow},
    )
    parts = parts_of(problem)
    assert parts[1] == (10, 11) and parts[2] == (11, 17)  # 10 ms inputs: one, then six


def test_one_part_unless_the_problem_stops_at_its_first_failure() -> None:
    groups = [("base", 10), ("plus", 900)]
    assert parts_of(_problem(groups)) == ((0, 910),)
    both = {STOP_AT_FIRST_FAILURE: True, EVERY_CASE: True}
    assert parts_of(_problem(groups, **both)) == ((0, 910),)
    assert parts_of(_problem(groups, **{STOP_AT_FIRST_FAILURE: True})) == (
        (0, 10),
        (10, 74),
        (74, 330),
        (330, 910),
    )


def test_a_sample_in_parts_is_one_request_that_pauses_where_each_next_part_starts() -> None:
    """One child runs every part, waiting at each part's end; every sample's request carries
    the problem's one tuple of cases (the sandbox knows a problem by the tuple's identity)."""
    from harness.pipeline.runtime import build_request

    problem = _problem([("base", 10), ("plus", 900)], **{STOP_AT_FIRST_FAILURE: True})
    parts = parts_of(problem)
    assert len(parts) > 2
    one = build_request(problem, "def f(): pass", parts=parts)
    two = build_request(problem, "def g(): pass", parts=parts)
    assert one.cases is two.cases and len(one.cases) == 910
    assert one.pauses == tuple(start for start, _stop in parts[1:]) and one.pauses[0] == 10
    assert one.timeouts_in_a_row == 1  # a part's first time-out fails the sample
    whole = build_request(problem, "x")
    assert whole.cases is one.cases and whole.pauses == () and whole.timeouts_in_a_row == 2


def test_merged_parts_sum_counters_and_keep_the_peak() -> None:
    def part(case: str, cpu: float, rss: int, out: str) -> SampleExecution:
        execution = SampleExecution(
            cases={case: CaseExecution(case, "ok", values=[1])},
            stdout=out,
            duration_s=0.5,
            max_rss_kb=rss,
            notes=["n"],
        )
        execution.resources.update(cpu_user_s=cpu, max_rss_kib=rss, wchar=10)
        return execution

    whole = merged([part("a", 0.25, 100, "x" * 40_000), part("b", 0.5, 300, "y" * 40_000)])
    assert set(whole.cases) == {"a", "b"} and whole.duration_s == 1.0
    assert whole.resources["cpu_user_s"] == 0.75 and whole.resources["wchar"] == 20
    assert whole.resources["max_rss_kib"] == 300 and whole.max_rss_kb == 300
    assert len(whole.stdout) == 64 * 1024 and whole.notes == ["n"] and whole.infra_error is None


# -- real runs ----------------------------------------------------------------------------------
def _wrong_on(problem: Problem, case_id: str, body: str) -> str:
    """The reference, but ``body`` on the input of ``case_id`` (its literal, from the case)."""
    call = next(c.calls[0] for c in problem.cases if c.case_id == case_id)
    arguments = call[len("candidate(*") : -1]
    return problem.reference + textwrap.dedent(
        f"""

        _reference = {problem.entry_point}


        def {problem.entry_point}(*args):
            if list(args) == list({arguments}):
        {textwrap.indent(body, "        ")}
            return _reference(*args)
        """
    )


@pytest.fixture(scope="module")
def has_close_elements(shared_data: Path) -> Problem:
    return load_suite("humaneval-plus", "test[:1]", shared_data)[0]  # 7 base, 999 plus inputs


def _samples(problem: Problem) -> list[Sample]:
    prompt = problem.prompt
    return [
        Sample(problem.task_id, problem.reference, "reference"),
        Sample(problem.task_id, prompt + "    return None\n", "wrong-on-base"),
        Sample(problem.task_id, _wrong_on(problem, "plus_100", "return None"), "wrong-on-plus-100"),
        Sample(problem.task_id, _wrong_on(problem, "plus_998", "return None"), "wrong-on-the-last"),
        Sample(
            problem.task_id, _wrong_on(problem, "plus_3", "while True: pass"), "loops-on-plus-3"
        ),
        Sample(problem.task_id, _wrong_on(problem, "base_2", "raise SystemExit(0)"), "exits"),
    ]


def _not_run(row: dict) -> list[str]:
    return [c["case_id"] for c in row["cases"] if c["message"] == NOT_RUN]


def test_a_sample_stops_at_its_first_failed_part_with_the_verdicts_of_every_case(
    has_close_elements: Problem, tmp_path: Path
) -> None:
    problem, samples = has_close_elements, _samples(has_close_elements)
    fast = {r["sample_id"]: r for r in evaluate([problem], samples, out_dir=tmp_path / "a")}
    every = evaluate([problem], samples, out_dir=tmp_path / "b", every_case=True)
    for row in every:  # the same verdicts; only what ran differs
        mine = fast[row["sample_id"]]
        assert (mine["status"], mine["passed"], mine["base_passed"]) == (
            row["status"],
            row["passed"],
            row["base_passed"],
        ), row["sample_id"]
        assert not _not_run(row) and len(row["cases"]) == len(problem.cases)
        first = next((c for c in row["cases"] if c["status"] != "passed"), None)
        if first is not None:  # the same first failure, with the same message
            same = next(c for c in mine["cases"] if c["status"] != "passed")
            assert {**same, "duration_s": 0} == {**first, "duration_s": 0}
    assert not _not_run(fast["reference"]) and fast["reference"]["passed"]
    assert not _not_run(fast["wrong-on-the-last"])  # every part ran; the last one failed
    # base (7) ran, plus did not; the parts after the one holding plus_100 (plus_3) are not
    # run, and they are where the parts of the problem (by the reference's times) say
    assert _not_run(fast["wrong-on-base"]) == [f"plus_{i}" for i in range(999)]
    assert _not_run(fast["exits"]) == [f"plus_{i}" for i in range(999)]
    timed = next(p for p in loaded_suite(tmp_path / "a" / "suite").problems.values())
    ends = [stop - 7 for _start, stop in parts_of(timed)[1:]]  # in plus_ numbers
    for name, failing in (("wrong-on-plus-100", 100), ("loops-on-plus-3", 3)):
        end = next(stop for stop in ends if stop > failing)
        assert _not_run(fast[name]) == [f"plus_{i}" for i in range(end, 999)], name
    assert fast["loops-on-plus-3"]["status"] == "timeout"
    notes = fast["wrong-on-base"]["execution"]["notes"]
    assert "stopped at the first failed part of its cases: 999 cases not run" in notes


def test_the_worker_pool_and_a_pytest_session_stop_alike(
    has_close_elements: Problem, tmp_path: Path
) -> None:
    problem, samples = has_close_elements, _samples(has_close_elements)[:3]
    local = evaluate([problem], samples, out_dir=tmp_path / "a")
    pooled = evaluate([problem], samples, out_dir=tmp_path / "b", workers=2)
    session = evaluate([problem], samples, out_dir=tmp_path / "c", pytest_session=True)
    for rows in (pooled, session):
        for mine, theirs in zip(local, rows, strict=True):
            assert (mine["sample_id"], mine["status"]) == (theirs["sample_id"], theirs["status"])
            assert _not_run(mine) == _not_run(theirs)


def test_a_reward_of_the_verdict_alone_stops_and_a_partial_credit_reward_does_not(
    has_close_elements: Problem, tmp_path: Path
) -> None:
    assert load_reward_config("binary").every_case is False
    assert load_reward_config("weighted").every_case is True
    problem = has_close_elements
    wrong = [Sample(problem.task_id, problem.prompt + "    return None\n", "wrong")]
    (binary,) = evaluate([problem], wrong, reward="binary", out_dir=tmp_path / "a")
    assert len(_not_run(binary)) == 999 and binary["reward"] == 0.0
    partial = tmp_path / "partial.yaml"
    partial.write_text("preset: binary\nshift: 0.0\n")  # every_case left out: true
    (every,) = evaluate([problem], wrong, reward=str(partial), out_dir=tmp_path / "b")
    assert not _not_run(every) and every["reward"] == 0.0


def test_every_case_must_be_a_boolean(tmp_path: Path) -> None:
    from harness.reward.config import RewardConfigError

    config = tmp_path / "r.yaml"
    config.write_text("preset: binary\nevery_case: sometimes\n")
    with pytest.raises(RewardConfigError, match=r"r\.yaml: every_case must be true or false"):
        load_reward_config(str(config))


def test_the_plugin_judges_every_case_when_asked(
    pytester: pytest.Pytester, shared_data: Path, has_close_elements: Problem
) -> None:
    problem = has_close_elements
    samples = pytester.path / "samples.jsonl"
    wrong = {"task_id": problem.task_id, "completion": "    return None\n"}
    samples.write_text(json.dumps(wrong) + "\n")
    common = ["--llm-eval", "humaneval-plus", "--llm-split", "test[:1]"]
    common += ["--llm-samples", str(samples), "-p", "no:codeeval_gate", "-p", "no:cacheprovider"]
    for flag, out, count in (([], "fast", 999), (["--llm-every-case"], "every", 0)):
        result = pytester.runpytest(*common, *flag, "--llm-out", out)
        assert result.ret == 1, result.stdout.str()[-2000:]
        (row,) = [json.loads(line) for line in (pytester.path / out / "results.jsonl").open()]
        assert len(_not_run(row)) == count and not row["passed"]


def test_decoding_a_parts_values_is_not_the_checks_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks of a sample in parts share one budget; the CPU spent decoding each part's
    values between them is the harness's, not theirs (Mbpp/630's reference failed so)."""
    import harness.pipeline.judge as judge
    from harness.oracles import encoded

    big = list(range(300_000))
    expected = json.dumps({"out": encoded(big)})
    cases = tuple(
        CheckCase(
            f"{group}_0", "", "compare", calls=("candidate()",), oracle="equal", expected=expected
        )
        for group in ("base", "plus")
    )
    problem = Problem("parts", "P/0", "", "f", cases, "", metadata={STOP_AT_FIRST_FAILURE: True})
    program = "def f():\n    return list(range(300_000))\n"
    monkeypatch.setattr(judge, "SAMPLE_BUDGET_S", 0.3)  # far less than decoding both parts
    (row,) = evaluate([problem], [Sample("P/0", program, "right")], out_dir=tmp_path, timeout_s=30)
    assert row["passed"], row["cases"]


def test_problem_steps_run_by_order_not_by_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite's own data step (order 10) runs before products' steps (50), whichever module
    registered first: the plus step once ran before EvalPlus's expected outputs or after it,
    by import order."""
    from harness.pipeline import steps

    ran: list[str] = []

    def step(name: str):
        def run(problems, sandbox):
            ran.append(name)
            return list(problems)

        return run

    monkeypatch.setattr(steps, "_steps", {})
    steps.register_problem_step("z-product", step("z-product"))
    steps.register_problem_step("a-product", step("a-product"))
    steps.register_problem_step("data", step("data"), order=10)
    steps.run_problem_steps([], None)  # type: ignore[arg-type]
    assert ran == ["data", "a-product", "z-product"]
