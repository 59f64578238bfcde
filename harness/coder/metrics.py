"""Metrics of a completion against its ground truth (extrinsic) and of the search (intrinsic).

Extrinsic, from well-kept libraries:

==============================  =====================================================  ===========
name                            what                                                   range
==============================  =====================================================  ===========
levenshtein_distance_score      edit distance in characters (rapidfuzz)                0.. (0 best)
bleu_score                      sentence BLEU (sacrebleu, its 13a tokens)              0..100
sequence_matcher_score          difflib.SequenceMatcher ratio                          0..1
codebleu_score                  CodeBLEU for Python (codebleu + tree-sitter-python)    0..1
trf_similarity_score            cosine of sentence-transformers embeddings             -1..1
gpt_reviewer_score              a judge model's 0-10 rating / 10                       0..1
tests_passed_score              the pair's tests pass in the sandbox (1) or not (0)    0/1
==============================  =====================================================  ===========

Intrinsic, from the search's record: ``loops_required_score`` (search steps), ``tokens_used_score``
(word and symbol tokens of the chosen conversation's messages, a model-independent count),
``total_tokens_generated_score`` (tokens the models generated), ``time_score`` (seconds),
``all_analyzers_passed_score`` (1 or 0) and ``agility_score`` (analyzer score gained per step
after the first: (chosen score - best first-step score) / (steps - 1), 0 for one step).

A metric that cannot be computed here (a library or a local model missing, no judge, a pair
without tests) is ``None`` -- reported as unavailable, never as 0.
"""

from __future__ import annotations

import difflib
import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.coder.pairs import Pair

TRF_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass
class PairRun:
    """One pair's completion and the record of the search that made it."""

    pair: Pair
    completion: str
    result: dict[str, Any] = field(default_factory=dict)
    judge_model: str = ""

    @property
    def truth(self) -> str:
        return self.pair.output


def levenshtein_distance_score(run: PairRun) -> float:
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.distance(run.truth, run.completion))


def bleu_score(run: PairRun) -> float:
    import sacrebleu

    return float(sacrebleu.sentence_bleu(run.completion, [run.truth]).score)


def sequence_matcher_score(run: PairRun) -> float:
    return difflib.SequenceMatcher(None, run.truth, run.completion).ratio()


def codebleu_score(run: PairRun) -> float | None:
    try:
        from codebleu import calc_codebleu
    except ImportError:
        return None
    if not run.completion.strip():
        return 0.0
    # codebleu warns on every call when a snippet has no data flow; that is expected here
    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))
    try:
        return float(calc_codebleu([run.truth], [run.completion], lang="python")["codebleu"])
    except ImportError:  # tree-sitter-python missing or of the wrong ABI
        return None


_trf: dict[str, Any] = {}
_trf_lock = threading.Lock()


def trf_similarity_score(run: PairRun) -> float | None:
    """Cosine similarity of the two texts' embeddings, with a model found locally (no download)."""
    with _trf_lock:
        if "model" not in _trf:
            try:
                from sentence_transformers import SentenceTransformer

                _trf["model"] = SentenceTransformer(TRF_MODEL, local_files_only=True)
            except Exception:  # not installed, or the model is not on this machine
                _trf["model"] = None
        model = _trf["model"]
    if model is None:
        return None
    from sentence_transformers import util

    embeddings = model.encode([run.truth, run.completion], convert_to_tensor=True)
    return float(util.cos_sim(embeddings[0], embeddings[1]).item())


REVIEW_PROMPT = (
    "Here is code to complete, the expected completion and a candidate completion. Rate the "
    "candidate from 0 (useless) to 10 (as good as the expected one). Answer with the number "
    "first.\n\nCode:\n```python\n{code}\n```\nExpected:\n```python\n{truth}\n```\n"
    "Candidate:\n```python\n{completion}\n```"
)


def gpt_reviewer_score(run: PairRun) -> float | None:
    if not run.judge_model:
        return None
    from harness.coder.models import chat

    content = REVIEW_PROMPT.format(code=run.pair.input, truth=run.truth, completion=run.completion)
    ((reply,),) = chat(
        run.judge_model,
        [[{"role": "user", "content": content}]],
        temperature=0.0,
        max_new_tokens=32,
    )
    found = re.search(r"\b(10|[0-9])(?:\.\d+)?\b", reply.raw)
    return float(found.group(1)) / 10 if found else None


def loops_required_score(run: PairRun) -> float:
    return float(len(run.result.get("iterations") or []))


def tokens_used_score(run: PairRun) -> float:
    messages = run.result.get("messages") or []
    return float(sum(len(_TOKEN.findall(m.get("content", ""))) for m in messages))


def total_tokens_generated_score(run: PairRun) -> float:
    return float(run.result.get("tokens_generated") or 0)


def time_score(run: PairRun) -> float:
    return float(run.result.get("time") or 0.0)


def all_analyzers_passed_score(run: PairRun) -> float:
    return 1.0 if run.result.get("passed") else 0.0


def agility_score(run: PairRun) -> float:
    conversations = run.result.get("conversations") or []
    steps = len(run.result.get("iterations") or [])
    chosen = run.result.get("chosen")
    first = [c["score"] for c in conversations if c.get("iteration") == 1]
    if steps <= 1 or chosen is None or not first:
        return 0.0
    return (float(conversations[chosen]["score"]) - max(first)) / (steps - 1)


def tests_passed_score(run: PairRun) -> float | None:
    """Computed in batches by :func:`compute_metrics` (the sandbox runs a level at once)."""
    raise NotImplementedError


Metric = Callable[[PairRun], float | None]
METRICS: dict[str, tuple[str, Metric]] = {
    "levenshtein_distance_score": ("extrinsic", levenshtein_distance_score),
    "bleu_score": ("extrinsic", bleu_score),
    "sequence_matcher_score": ("extrinsic", sequence_matcher_score),
    "codebleu_score": ("extrinsic", codebleu_score),
    "trf_similarity_score": ("extrinsic", trf_similarity_score),
    "gpt_reviewer_score": ("extrinsic", gpt_reviewer_score),
    "tests_passed_score": ("extrinsic", tests_passed_score),
    "loops_required_score": ("intrinsic", loops_required_score),
    "tokens_used_score": ("intrinsic", tokens_used_score),
    "agility_score": ("intrinsic", agility_score),
    "time_score": ("intrinsic", time_score),
    "all_analyzers_passed_score": ("intrinsic", all_analyzers_passed_score),
    "total_tokens_generated_score": ("intrinsic", total_tokens_generated_score),
}
DEFAULT_SCORES: tuple[str, ...] = tuple(n for n in METRICS if n != "gpt_reviewer_score")


def compute_metrics(runs: Sequence[PairRun], names: Sequence[str]) -> list[dict[str, float | None]]:
    """``{metric: value or None}`` per run, for the metrics in ``names``."""
    rows: list[dict[str, float | None]] = [{} for _ in runs]
    for name in names:
        if name == "tests_passed_score":
            for row, value in zip(rows, tests_passed(runs), strict=True):
                row[name] = value
            continue
        metric = METRICS[name][1]
        for row, run in zip(rows, runs, strict=True):
            row[name] = metric(run)
    return rows


def tests_passed(runs: Sequence[PairRun]) -> list[float | None]:
    """1.0 / 0.0 per run whose pair has tests (input + completion judged in the sandbox, as a
    benchmark sample is), None for pairs without tests; one evaluation for the whole batch."""
    from harness.coder.pairs import problem_of
    from harness.evaluate import evaluate
    from harness.records import Sample

    problems = {}
    samples = []
    index: dict[tuple[str, str], int] = {}
    for i, run in enumerate(runs):
        problem = problem_of(run.pair)
        if problem is None:
            continue
        problems[problem.task_id] = problem
        samples.append(Sample(problem.task_id, run.pair.input + run.completion, f"run{i}"))
        index[(problem.task_id, f"run{i}")] = i
    values: list[float | None] = [None] * len(runs)
    if samples:
        for row in evaluate(list(problems.values()), samples):
            if row["status"] != "error":  # an infrastructure fault is not the completion's
                values[index[(row["task_id"], row["sample_id"])]] = 1.0 if row["passed"] else 0.0
    return values
