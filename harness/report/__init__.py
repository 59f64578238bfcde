"""Self-contained HTML reports of runs and A/B comparisons (plots embedded as SVG data URIs)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.report.rundata import RunData, RunFileError, load_out_dir, load_run

if TYPE_CHECKING:
    from harness.history import History

# The page and plot modules load matplotlib: imported when a page is written, not when a
# caller only needs run data (the CI gate reads baselines at the start of every run).
_LAZY = {
    "compare_page": "harness.report.compare",
    "compare_verdicts": "harness.report.compare",
    "report_page": "harness.report.pages",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "RunData",
    "RunFileError",
    "compare_page",
    "compare_verdicts",
    "load_out_dir",
    "load_run",
    "report_page",
    "write_compare",
    "write_report",
]


def write_report(run: RunData, path: Path, history: History | None = None) -> Path:
    """Write the report page of ``run`` to ``path`` and return it."""
    from harness.report.pages import report_page

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report_page(run, history), encoding="utf-8")
    return path


def write_compare(a: RunData, b: RunData, path: Path) -> Path:
    """Write the A/B comparison page to ``path`` and return it."""
    from harness.report.compare import compare_page, compare_verdicts

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(compare_page(a, b, compare_verdicts(a, b)), encoding="utf-8")
    return path
