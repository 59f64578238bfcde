"""Line and branch coverage of a sample's program from the arcs its child recorded.

The child only records which line-to-line arcs ran (``_ArcTracer`` in ``inside/child.py``);
the analysis runs here, in the trusted process, with coverage.py's own parser and its
``Analysis`` (the numbers ``coverage report --branch`` would print), so the child pays a few
microseconds per traced line instead of a coverage.py session.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

TArc = tuple[int, int]


@lru_cache(maxsize=256)
def _parsed(program: str) -> Any:
    """coverage.py's parse of ``program`` (statements, possible arcs, exits), or None."""
    from coverage.config import DEFAULT_EXCLUDE
    from coverage.misc import join_regex
    from coverage.parser import PythonParser

    parser = PythonParser(text=program, exclude=join_regex(DEFAULT_EXCLUDE))
    try:
        parser.parse_source()
        parser.arcs()  # computed once, cached by the parser
    except Exception:  # noqa: BLE001 - a program that does not parse has no coverage
        return None
    return parser


def analyze(program: str, arcs: Iterable[TArc]) -> dict[str, Any] | None:
    """The coverage record of ``program`` after executing ``arcs`` (None if it cannot parse)."""
    from coverage.config import DEFAULT_PARTIAL, DEFAULT_PARTIAL_ALWAYS
    from coverage.misc import join_regex
    from coverage.results import Analysis

    parser = _parsed(program)
    if parser is None:
        return None
    possible = parser.arcs()
    single_dest: dict[int, int] = {}
    dests: defaultdict[int, set[int]] = defaultdict(set)
    for start, end in possible:
        dests[start].add(end)
    single_dest = {start: next(iter(ends)) for start, ends in dests.items() if len(ends) == 1}
    executed_arcs: set[TArc] = set()
    lines: set[int] = set()
    for start, end in arcs:
        lines.update(n for n in (start, end) if n > 0)
        if start != end:
            executed_arcs.add((start, end))
        elif start in single_dest:
            executed_arcs.add((start, single_dest[start]))
    statements = parser.statements
    analysis = Analysis(
        precision=2,
        filename="solution.py",
        has_arcs=True,
        statements=statements,
        excluded=parser.excluded,
        executed=parser.translate_lines(lines) & statements,
        arc_possibilities_set=possible,
        arcs_executed_set=parser.translate_arcs(executed_arcs),
        exit_counts=parser.exit_counts(),
        no_branch=parser.lines_matching(join_regex(DEFAULT_PARTIAL + DEFAULT_PARTIAL_ALWAYS)),
    )
    numbers = analysis.numbers
    branches = numbers.n_branches
    return {
        "statements": sorted(statements),
        "executed": sorted(analysis.executed),
        "missing": sorted(analysis.missing),
        "branches": branches,
        "partial_branches": numbers.n_partial_branches,
        "line_rate": len(analysis.executed) / len(statements) if statements else 1.0,
        "branch_rate": (branches - numbers.n_missing_branches) / branches if branches else 1.0,
    }
