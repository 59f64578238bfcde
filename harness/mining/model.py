"""The records of repository mining: what was found, what was emitted, what was dropped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FORMAT = "codeeval-mined/1"  # the ``format`` field of every mined suite line
HOLE = 'raise NotImplementedError("codeeval: body removed")'


class MiningError(RuntimeError):
    """The repository cannot be mined at all (not a folder, no Python code, no tests ran)."""


@dataclass(frozen=True)
class Target:
    """One function or method of the repository that could become a problem.

    Line numbers are 1-based and inclusive. ``hole_start..end_line`` is the body the model
    writes (everything after the header and the docstring); ``header`` is the ``def`` line(s)
    as written, decorators excluded.
    """

    path: str  # repository-relative, POSIX separators
    module: str  # dotted module name
    qualname: str  # "slugify" or "Rect.area"
    name: str
    class_name: str | None
    def_line: int
    first_line: int  # the first decorator, else the def line
    hole_start: int
    end_line: int
    header: str
    decorators: tuple[str, ...]
    docstring: str | None
    indent: str  # the body's indentation
    uses: tuple[str, ...]  # names of the repository it refers to (module-level or self.x)
    bases: str = ""  # the class's bases as written, for methods
    header_names: tuple[str, ...] = ()  # module names the header evaluates (defaults)

    @property
    def target_id(self) -> str:
        return f"{self.path}::{self.qualname}"


@dataclass
class Drop:
    """A target that did not become a problem, and why."""

    target_id: str
    reason: str
    detail: str = ""


@dataclass
class MineReport:
    """What a mining run found, per stage, and how long it took."""

    repository: str
    functions_found: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)  # task_id, tier, features
    drops: list[Drop] = field(default_factory=list)
    tests_run: int = 0
    tests_failed: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def drop_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for drop in self.drops:
            counts[drop.reason] = counts.get(drop.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def tier_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for problem in self.problems:
            counts[problem["tier"]] = counts.get(problem["tier"], 0) + 1
        return dict(sorted(counts.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "repository": self.repository,
            "functions_found": self.functions_found,
            "problems_emitted": len(self.problems),
            "per_tier": self.tier_counts(),
            "dropped": len(self.drops),
            "drop_reasons": self.drop_counts(),
            "tests_run": self.tests_run,
            "tests_failed_on_original": self.tests_failed,
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
            "problems": self.problems,
            "drops": [d.__dict__ for d in self.drops],
        }
