"""HumanEval and MBPP in JavaScript, C++, Java and Rust, translated from the Python problems.

``humaneval-js``, ``humaneval-cpp``, ``humaneval-java``, ``humaneval-rs`` and the same for
``mbpp-sanitized``: each problem keeps its Python checks (they run in the trusted process on
the decoded values, :mod:`harness.languages.runner`); what changes is the prompt (a stub with
a doc comment in the target language), the signature's types and each case's call arguments
(:mod:`harness.languages.translate`). A problem that does not translate stays in the suite as
a data defect with the reason, never scored as a model's failure.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.languages import NAMES, get_language
from harness.languages.translate import Translation, translate
from harness.languages.types import Untranslatable
from harness.records import Problem

BASES = {"humaneval": "humaneval", "mbpp-sanitized": "mbpp-sanitized"}


def suite_names() -> dict[str, str]:
    """``{suite name: "module:function"}`` for the registry."""
    return {
        f"{base}-{lang}": f"suites.multipl:load_{base.replace('-', '_')}_{lang}"
        for base in BASES
        for lang in NAMES
    }


def load_translated(
    base: str, language: str, data_dir: Path | None = None
) -> dict[str, list[Problem]]:
    """Every split of ``base`` translated into ``language``."""
    from harness.languages.translate import prefetch
    from suites.registry import load_splits

    splits = load_splits(base, data_dir)
    prefetch([p for problems in splits.values() for p in problems])  # one interpreter for all
    return {
        split: [translated_problem(p, language, f"{base}-{language}") for p in problems]
        for split, problems in splits.items()
    }


def translated_problem(problem: Problem, language: str, suite: str) -> Problem:
    """``problem`` in ``language`` (a data defect with the reason where it does not translate)."""
    lang = get_language(language)
    task_id = f"{language}/{problem.task_id}"  # suites in one run must not share task ids
    metadata = {
        k: v for k, v in problem.metadata.items() if k not in ("test_source", "prompt_kind")
    }
    metadata.update(
        language=language,
        python_task_id=problem.task_id,
        python_prompt=problem.prompt,
        prompt_kind="code",
    )
    try:
        translation = translate(problem)
        lang.check_types(translation.signature)
        doc = _doc(problem, translation)
        prompt = lang.stub(translation.signature, doc)
        _check_literals(lang, translation)
    except Untranslatable as exc:
        reason = f"no {lang.title} translation: {exc}"
        return dataclasses.replace(
            problem,
            suite=suite,
            task_id=task_id,
            reference="",
            program_setup="",
            defects=(*problem.defects, reason),
            metadata={**metadata, "untranslatable": str(exc)},
        )
    signature = translation.signature
    cases = tuple(c for c in problem.cases if c.case_id in translation.calls)
    metadata.update(
        dropped_cases=list(translation.dropped),
        signature={
            "name": signature.name,
            "params": [[n, str(t)] for n, t in signature.params],
            "returns": str(signature.returns),
        },
        call_args={
            case_id: [[repr(a) for a in args] for args in calls]
            for case_id, calls in translation.calls.items()
        },
    )
    return dataclasses.replace(
        problem,
        suite=suite,
        task_id=task_id,
        prompt=prompt,
        cases=cases,
        reference="",
        program_setup="",
        metadata=metadata,
    )


def _doc(problem: Problem, translation: Translation) -> str:
    if problem.metadata.get("prompt_kind") == "text":  # MBPP: the task's prose
        return str(problem.metadata.get("text") or "").strip()
    return translation.doc


def _check_literals(lang: object, translation: Translation) -> None:
    """Every argument must have a literal in the language (a float inf has none)."""
    types = [t for _, t in translation.signature.params]
    for calls in translation.calls.values():
        for args in calls:
            for value, t in zip(args, types, strict=True):
                try:
                    lang.literal(value, t)  # type: ignore[attr-defined]
                except (ValueError, OverflowError) as exc:
                    raise Untranslatable(f"argument {value!r} has no literal: {exc}") from None


def _loader(base: str, language: str):  # noqa: ANN202 - a registry loader
    def load(data_dir: Path | None = None) -> dict[str, list[Problem]]:
        return load_translated(base, language, data_dir)

    return load


load_humaneval_js = _loader("humaneval", "js")
load_humaneval_cpp = _loader("humaneval", "cpp")
load_humaneval_java = _loader("humaneval", "java")
load_humaneval_rs = _loader("humaneval", "rs")
load_mbpp_sanitized_js = _loader("mbpp-sanitized", "js")
load_mbpp_sanitized_cpp = _loader("mbpp-sanitized", "cpp")
load_mbpp_sanitized_java = _loader("mbpp-sanitized", "java")
load_mbpp_sanitized_rs = _loader("mbpp-sanitized", "rs")
