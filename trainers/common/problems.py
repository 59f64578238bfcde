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
from trainers.common.config import ConfigError, NeedsFirst

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
    suite: str,
    split: str,
    data_dir: str | None,
    task_ids: Sequence[str] = (),
    needs: str | None = None,
) -> list[Problem]:
    """The usable problems of ``suite``/``split`` (sliced by the suite), only ``task_ids`` if
    given. Data that cannot be loaded here raises :class:`NeedsFirst`, one line that says
    ``needs`` (what to run or fetch) or else where the data is looked for."""
    from suites import known_suites
    from suites.registry import default_data_dir, load_splits
    from suites.splits import SplitError, select_split

    try:
        splits = load_splits(suite, default_data_dir(data_dir))
    except (OSError, ValueError) as exc:
        name = suite.partition("@")[0].lower()
        if not suite.startswith("jsonl:") and name not in known_suites():
            raise ConfigError(f"dataset.suite: {exc}") from None
        # The data is not here: one line, with what to run or fetch.
        reason = " ".join(str(exc).split())
        todo = needs or "put its data in dataset.data_dir or $CODEEVAL_DATA_DIR"
        raise NeedsFirst(f"dataset.suite: {reason}; {todo}") from None
    try:
        loaded = select_split(splits, split)
    except SplitError as exc:
        raise ConfigError(f"dataset: {suite} {split!r}: {exc}") from None
    problems = usable(loaded)
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

    problems = load_split(
        dataset.suite, dataset.train_split, dataset.data_dir, dataset.task_ids, dataset.needs
    )
    refuse_evaluation_only(dataset.suite, problems)
    if not problems:
        raise ConfigError(
            f"dataset: no usable problems in {dataset.suite} {dataset.train_split!r} (all "
            "filtered out or defective); widen dataset.train_split or dataset.task_ids"
        )
    try:
        return training_problems(problems, dataset, model_name, seed)
    except FileNotFoundError as exc:  # no difficulty measurement: it names its command
        raise NeedsFirst(f"dataset.difficulty: {exc}") from None


def eval_problems(dataset: Any) -> list[Problem]:
    """The evaluation problems of ``dataset`` (none without ``dataset.eval_split``)."""
    if not dataset.eval_split:
        return []
    return load_split(dataset.suite, dataset.eval_split, dataset.data_dir, needs=dataset.needs)
