"""Training problems, loaded one way for every trainer, and the text a model is shown.

:func:`train_problems` and :func:`eval_problems` read ``dataset``'s splits from the suite
registry; problems with data defects or without a test case are left out (they could only teach
noise), ``dataset.task_ids`` narrows the training split, and ``dataset.difficulty`` keeps the
training problems in its pass-rate band (and orders them for a curriculum).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.language_hooks import hooks_for
from harness.records import Problem
from trainers.common.config import ConfigError

INSTRUCTION = (
    "Complete the following Python code. Answer with the complete code in one ```python block."
)
CLASS_INSTRUCTION = (
    "Implement every method of the following Python class. Answer with the complete class in "
    "one ```python block."
)


def prompt_text(problem: Problem) -> str:
    """The user message for ``problem`` (its prompt after an instruction)."""
    language = hooks_for(problem)
    if language is not None:  # another language, or a stdio program: its own instruction
        return language.instruction(problem.prompt) + "\n"
    instruction = CLASS_INSTRUCTION if problem.suite == "classeval" else INSTRUCTION
    return f"{instruction}\n\n{problem.prompt.rstrip()}\n"


def usable(problems: Sequence[Problem]) -> list[Problem]:
    """Problems that can give a learning signal: no data defects, at least one case."""
    return [p for p in problems if not p.defects and p.cases]


def load_split(
    suite: str, split: str, data_dir: str | None, task_ids: Sequence[str] = ()
) -> list[Problem]:
    """The usable problems of ``suite``/``split`` (sliced by the suite), only ``task_ids`` if
    given."""
    from suites import load_suite

    problems = usable(load_suite(suite, split, data_dir))
    if task_ids:
        wanted = set(task_ids)
        problems = [p for p in problems if p.task_id in wanted]
    return problems


def refuse_evaluation_only(suite: str, problems: Sequence[Problem]) -> None:
    """Raise :class:`ConfigError` when a data set's licence allows evaluation only (a suite
    marks such problems with ``metadata["evaluation_only"]``, e.g. MultiPL-E's)."""
    for problem in problems:
        reason = problem.metadata.get("evaluation_only")
        if reason:
            raise ConfigError(
                f"dataset.suite: {suite!r} may not be used as training prompts: {reason}. "
                "Use it as dataset.eval_split's suite in an evaluation, or train on a suite "
                "whose licence allows it (e.g. humaneval-js for JavaScript)"
            )


def train_problems(dataset: Any, model_name: str, seed: int) -> list[Problem]:
    """The training problems of ``dataset`` (a ``DatasetSettings``), after the difficulty band
    and curriculum (unchanged without ``dataset.difficulty``); raises :class:`ConfigError`
    when none is left."""
    from harness.difficulty import training_problems

    problems = load_split(dataset.suite, dataset.train_split, dataset.data_dir, dataset.task_ids)
    refuse_evaluation_only(dataset.suite, problems)
    if not problems:
        raise ConfigError(
            f"dataset: no usable problems in {dataset.suite} {dataset.train_split!r} (all "
            "filtered out or defective); widen dataset.train_split or dataset.task_ids"
        )
    return training_problems(problems, dataset, model_name, seed)


def eval_problems(dataset: Any) -> list[Problem]:
    """The evaluation problems of ``dataset`` (none without ``dataset.eval_split``)."""
    if not dataset.eval_split:
        return []
    return load_split(dataset.suite, dataset.eval_split, dataset.data_dir)
