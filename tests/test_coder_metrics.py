"""Coder metrics: hand-computed values on fixtures, and properties over varied inputs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.coder.metrics import (
    METRICS,
    PairRun,
    agility_score,
    all_analyzers_passed_score,
    bleu_score,
    codebleu_score,
    compute_metrics,
    levenshtein_distance_score,
    loops_required_score,
    sequence_matcher_score,
    tokens_used_score,
    trf_similarity_score,
)
from harness.coder.pairs import Pair


def run(truth: str, completion: str, result: dict | None = None) -> PairRun:
    return PairRun(Pair("", truth, {}), completion, result or {})


def test_text_metrics_match_hand_computed_values():
    assert levenshtein_distance_score(run("kitten", "sitting")) == 3.0
    assert sequence_matcher_score(run("abcd", "abce")) == pytest.approx(0.75)
    assert bleu_score(run("return x + 1", "return x + 1")) == pytest.approx(100.0)
    assert bleu_score(run("return x + 1", "")) == 0.0
    assert codebleu_score(run("return a + b\n", "return a + b\n")) == pytest.approx(1.0)
    assert codebleu_score(run("return a + b\n", "")) == 0.0


def search_record() -> dict:
    # three steps: the first step's best score -3, the chosen conversation's -1
    return {
        "passed": False,
        "chosen": 2,
        "iterations": [{}, {}, {}],
        "tokens_generated": 42,
        "time": 1.5,
        "messages": [
            {"role": "user", "content": "def f(x):"},
            {"role": "assistant", "content": "x+1"},
        ],
        "conversations": [
            {"iteration": 0, "score": 0.0},
            {"iteration": 1, "score": -3.0},
            {"iteration": 3, "score": -1.0},
        ],
    }


def test_intrinsic_metrics_read_the_search_record():
    record = search_record()
    r = run("", "", record)
    assert loops_required_score(r) == 3.0
    assert tokens_used_score(r) == 9.0  # def f ( x ) :  and  x + 1
    assert all_analyzers_passed_score(r) == 0.0
    assert agility_score(r) == pytest.approx((-1.0 - -3.0) / 2)
    values = compute_metrics([r], ["total_tokens_generated_score", "time_score"])
    assert values == [{"total_tokens_generated_score": 42.0, "time_score": 1.5}]


def test_unavailable_metrics_are_none_not_zero():
    (values,) = compute_metrics([run("a", "b")], ["gpt_reviewer_score", "tests_passed_score"])
    assert values == {"gpt_reviewer_score": None, "tests_passed_score": None}  # no judge, no tests
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        assert trf_similarity_score(run("a", "b")) is None


def test_tests_passed_runs_the_pairs_tests_in_the_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path))
    from suites import load_suite

    problem = load_suite("humaneval", split="test[:3]")[2]
    meta = {"suite": "humaneval", "task_id": problem.task_id}
    good = PairRun(
        Pair(problem.prompt, "    return number % 1.0\n", meta), "    return number % 1.0\n"
    )
    bad = PairRun(Pair(problem.prompt, "    return number % 1.0\n", meta), "    return 0.0\n")
    values = compute_metrics([good, bad], ["tests_passed_score"])
    assert [v["tests_passed_score"] for v in values] == [1.0, 0.0]


def test_every_metric_has_a_kind():
    assert {kind for kind, _ in METRICS.values()} == {"extrinsic", "intrinsic"}


texts = st.text(alphabet=st.sampled_from("abc xyz()=+:\n_01"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(texts, texts)
def test_text_metrics_are_bounded_and_levenshtein_is_a_distance(a: str, b: str):
    distance = levenshtein_distance_score(run(a, b))
    assert distance == levenshtein_distance_score(run(b, a))
    assert (distance == 0) == (a == b)
    assert abs(len(a) - len(b)) <= distance <= max(len(a), len(b))
    ratio = sequence_matcher_score(run(a, b))
    assert 0.0 <= ratio <= 1.0
    if a == b:
        assert ratio == 1.0
    assert 0.0 <= bleu_score(run(a, b)) <= 100.0 + 1e-9


@settings(max_examples=15, deadline=None)
@given(texts, texts)
def test_codebleu_is_bounded(a: str, b: str):
    value = codebleu_score(run(a, b))
    assert value is None or 0.0 <= value <= 1.0 + 1e-9
