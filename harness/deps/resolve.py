"""A problem's allow-list -> its fetched overlay on the sandbox's path, or a data defect.

Metadata a problem carries (``Problem.metadata``):

- ``dependencies``: its own allow-list, as its suite gave it (a JSONL record's field;
  ClassEval's ``DEPENDENCIES`` on the problems whose tests import one of them);
- ``dependencies_source``: where that list was written (``FILE:LINE``), for messages;
- ``deps_needs``: the allowed modules its tests or reference import (they must be in the
  overlay);
- ``deps_overlay`` (set here): the overlay's ``site`` folder, which the sandbox puts on the
  child's ``sys.path`` (harness.pipeline.runtime);
- ``deps_defect`` (set here): the defect this step added, so that resolving again (with a
  reward config's list, in each process that scores) replaces it instead of piling up.

The effective allow-list is the problem's own merged with the run's (a reward config's
``dependencies``), so a run may allow more imports than its suite. A Python problem with an
effective list runs only where that list's overlay was fetched: otherwise it is a data defect
naming the command that fetches it (never a model's failure, and never a download at run
time). Translated problems (JavaScript, C++, Java, Rust) have no Python imports: left alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from harness.deps.overlay import ready_site
from harness.deps.pins import merge_allowlists
from harness.language_hooks import language_of
from harness.records import Problem


def fetch_command(suite: str, reward_source: str = "") -> str:
    """The command that fetches what ``suite``'s problems (and a reward config) allow."""
    command = f"codeeval deps fetch {suite}"
    return f"{command} --reward {reward_source}" if reward_source else command


def resolve(
    problem: Problem,
    run: Mapping[str, str] | None = None,
    run_source: str = "",
    *,
    command: str | None = None,
) -> Problem:
    """``problem`` with its effective allow-list's overlay, or with a defect naming
    ``command`` (default: :func:`fetch_command` of its suite and ``run_source``); the defect
    starts with ``dependencies_source`` (the file and line of the problem's own list)."""
    metadata = dict(problem.metadata)
    if language_of(problem) is not None:  # a compiled language's problem has no overlay
        return problem
    stale = metadata.pop("deps_defect", None)
    metadata.pop("deps_overlay", None)
    defects = tuple(d for d in problem.defects if d != stale)
    own: dict[str, str] = dict(metadata.get("dependencies") or {})
    lists: list[tuple[str, Mapping[str, str]]] = []
    if own:
        lists.append((str(metadata.get("dependencies_source") or problem.suite), own))
    if run:
        lists.append((run_source or "the reward config", run))
    if not lists:
        return dataclasses.replace(problem, defects=defects, metadata=metadata)
    effective = merge_allowlists(*lists)  # PinError: two sources pin one module differently
    command = command or fetch_command(problem.suite, run_source if run else "")
    site = ready_site(effective)
    if site is not None:
        metadata["deps_overlay"] = str(site)
    label = f"{metadata['dependencies_source']}: " if metadata.get("dependencies_source") else ""
    needs = [str(m) for m in metadata.get("deps_needs") or ()]
    defect = overlay_defect(site, effective, needs, command)
    if defect is not None:
        metadata["deps_defect"] = label + defect
        defects = (*defects, label + defect)
    return dataclasses.replace(problem, defects=defects, metadata=metadata)


def overlay_defect(
    site: Path | None, effective: Mapping[str, str], needs: list[str], command: str
) -> str | None:
    """Why a problem cannot run with its overlay (None: it can)."""
    if site is None and needs:
        return (
            f"tests need modules not installed here: {', '.join(needs)} "
            f"(allowed: run `{command}` to fetch them)"
        )
    if site is None:
        return (
            f"third-party modules {', '.join(effective)} are allowed but not "
            f"fetched: run `{command}` once (it uses the network; runs never do)"
        )
    lacking = [m for m in needs if PathFinder.find_spec(m, [str(site)]) is None]
    if lacking:
        return (
            f"tests need modules not installed here: {', '.join(lacking)} (the "
            f"fetched overlay lacks them: check the allow-list's import names)"
        )
    return None


def apply_run_dependencies(
    problems: Sequence[Problem], run: Mapping[str, str], run_source: str
) -> list[Problem]:
    """Every problem resolved with a run's allow-list (a reward config's ``dependencies``)
    on top of its own; unchanged when the run allows nothing."""
    if not run:
        return list(problems)
    return [resolve(p, run, run_source) for p in problems]


def reward_dependencies(config: Any) -> tuple[dict[str, str], str]:
    """``(allow-list, source)`` of a loaded reward config (empty when it has none)."""
    if config is None:
        return {}, ""
    return dict(getattr(config, "dependencies", None) or {}), str(getattr(config, "source", ""))
