"""Score completions from Python, through the same generated suites and sandbox as the plugin.

    rows = evaluate(problems, samples, reward="weighted")

Each call runs the one evaluation pipeline (:mod:`harness.pipeline`): the samples are compiled
into a generated suite, run in the sandbox and judged in this process (its fork server is
reused across calls, as a trainer needs) or in warm worker processes, and the call returns the
``results.jsonl`` rows: verdicts, per-case outcomes and, with a reward, ``analyzers``,
``reward``, ``reward_parts`` and ``feedback``. The plugin's items judge with the same function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.pipeline.pytest_run import EvaluationError
from harness.pipeline.run import check_row_extras, evaluate_local, with_extras
from harness.records import Problem, Sample

if TYPE_CHECKING:
    from harness.executors import Executor

__all__ = ["EvaluationError", "evaluate", "with_extras"]


def evaluate(
    problems: Sequence[Problem],
    samples: Sequence[Sample],
    *,
    reward: Any = None,
    out_dir: str | Path | None = None,
    workers: int = 0,
    timeout_s: float | None = None,
    memory_mb: int = 1024,
    quiet: bool = True,
    pytest_session: bool = False,
    executor: str | Executor = "local",
    address: str | None = None,
    row_extras: Sequence[Mapping[str, Any]] | None = None,
    every_case: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate ``samples`` of ``problems``; rows in the order of ``samples``.

    ``reward``: None, a preset name or YAML path, or a loaded ``RewardConfig``.
    ``workers``: 0 judges in this process; N > 0 in N warm worker processes
    (:mod:`harness.pipeline.pool`), each taking the next job of whole problems when done.
    ``pytest_session``: run the generated suite in a real pytest session (the plugin's items;
    with ``workers``, under pytest-xdist). By default the suite's check functions are judged
    without a session per call: the same generated modules, the same sandbox and the same judging code
    as the plugin's items (:mod:`harness.pipeline.judge`), so the rows are the same either way.
    ``out_dir``: where results go (default: a folder per problem set under the temp folder,
    reused by later calls so pytest's caches stay warm).
    ``executor``: where the batch is scored: ``"local"`` (this process), ``"ray"`` (Ray
    actors, the batch split by problem; :mod:`harness.executors.ray_executor`) or any
    :class:`harness.executors.Executor`; the rows are the same. ``address``: an existing Ray
    cluster's (``ray://host:10001`` or ``auto``); default: the connected one, or a new local one.
    ``row_extras``: one dict per sample (in the order of ``samples``) put on its row before the
    reward is computed: what a trainer knows beside the program (MAGRPO's ``agent_code`` and
    ``required_methods`` for ClassEval's class levels). The batch is otherwise scored exactly
    as without them: the reward config's allow-list, limits and coverage all apply.
    ``every_case``: judge every case of every sample even after one failed. Without it,
    problems that stop at a sample's first failed case when only the verdict is wanted
    (EvalPlus's suites, stdio tests) do so, unless the reward reads per-case results
    (its config's ``every_case``, true but for ``binary`` and ``stdio_all_pass``).
    """
    check_row_extras(row_extras, samples)
    options: dict[str, Any] = dict(reward=reward, out_dir=out_dir, workers=workers)
    options.update(timeout_s=timeout_s, memory_mb=memory_mb, quiet=quiet)
    options.update(pytest_session=pytest_session)
    if row_extras is not None:  # only when given: an executor without them still works
        options["row_extras"] = row_extras
    if every_case:  # likewise
        options["every_case"] = True
    if isinstance(executor, str) and executor == "local" and address is None:
        return evaluate_local(problems, samples, **options)
    from harness.executors import executor_for

    chosen = executor_for(executor, address) if isinstance(executor, str) else executor
    return chosen.evaluate(problems, samples, **options)
