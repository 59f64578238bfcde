"""The A/B comparison page of two runs (``codeeval compare A B``): B judged against A."""

from __future__ import annotations

from collections.abc import Sequence

import harness.report.html as h
import harness.report.plots as plots
from harness import gate
from harness.report.rundata import RunData


def compare_verdicts(a: RunData, b: RunData) -> list[gate.SuiteVerdict]:
    """B judged against A (the baseline) for every suite both runs have."""
    out = []
    for suite in [s for s in a.suites if s in b.suites]:
        out.append(
            gate.compare_suite(
                suite,
                gate.problem_results(b.rows, suite),
                gate.problem_results(a.rows, suite),
            )
        )
    return out


def compare_page(a: RunData, b: RunData, verdicts: Sequence[gate.SuiteVerdict]) -> str:
    """The HTML page of an A/B comparison (B against A)."""
    body = [
        h.section(
            "Runs",
            h.table(
                ["", "source", "model", "suites"],
                [
                    ["A", a.source, a.model, ", ".join(a.suites)],
                    ["B", b.source, b.model, ", ".join(b.suites)],
                ],
            ),
        )
    ]
    if not verdicts:
        body.append(h.paragraph("The two runs have no suite in common.", "bad"))
    for v in verdicts:
        ra = gate.problem_results(a.rows, v.suite)
        rb = gate.problem_results(b.rows, v.suite)
        common = sorted(set(ra) & set(rb))
        pairs = [(ra[t].rate, rb[t].rate) for t in common]
        changed = [
            [c.task_id, c.baseline, c.current, c.current - c.baseline]
            for c in sorted(
                v.regressed + v.improved,
                key=lambda c: (c.current - c.baseline, gate.natural_key(c.task_id)),
            )
        ]
        test = f"{v.test}: p = {v.p_value:.4g} (one-sided, B worse than A)" if v.test else "no test"
        body.append(
            h.section(
                f"{v.suite}",
                h.table(
                    [
                        "",
                        "pass@1 A",
                        "pass@1 B",
                        "difference",
                        "common problems",
                        "worse",
                        "better",
                    ],
                    [
                        [
                            "",
                            _rate(v.baseline_pass1),
                            _rate(v.current_pass1),
                            -v.drop if v.compared else "n/a",
                            v.compared,
                            len(v.regressed),
                            len(v.improved),
                        ]
                    ],
                ),
                *(h.paragraph(f"Not compared: {why}.", "muted") for why in _uncompared(v)),
                h.paragraph(f"Significance: {test}."),
                h.image(
                    plots.compare_scatter(
                        pairs, a.label, b.label, v.baseline_pass1 or 0.0, v.current_pass1 or 0.0
                    ),
                    f"per-problem comparison of {v.suite}",
                )
                if pairs
                else "",
                h.table(["problem", "pass@1 A", "pass@1 B", "B - A"], changed)
                if changed
                else h.paragraph("No problem changed.", "muted"),
            )
        )
    return h.page(f"codeeval compare: {a.label} vs {b.label}", body)


def _rate(value: float | None) -> float | str:
    """A run's pass@1, or why it has none (no sample of the suite could be judged)."""
    return "n/a (only errors)" if value is None else value


def _uncompared(v: gate.SuiteVerdict) -> list[str]:
    """Why a suite was not compared (one run judged none of its samples, or no common
    problem), in the gate's words; compare is no gate, so nothing here is a failure."""
    if v.compared:
        return []
    return [*v.notes, *v.reasons]
