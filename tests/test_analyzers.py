"""Analyzers on their own: bandit, radon, structure, syntax, the cache."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from radon.complexity import cc_visit
from radon.metrics import h_visit, mi_visit
from radon.raw import analyze

from harness.analyzers import ANALYZERS, AnalyzerCache, Subject, run_analyzers
from harness.analyzers.bandit_scan import BanditAnalyzer
from harness.analyzers.radon_metrics import radon_report
from harness.analyzers.structure import structure_report
from harness.analyzers.syntax import check_syntax
from tests.test_reward import problem

DANGEROUS = {
    "eval": "def solve(xs):\n    return eval(input())\n",
    "shell": "import subprocess\n\n\ndef solve(cmd):\n    return subprocess.run(cmd, shell=True)\n",
    "clean": "def solve(xs):\n    return sum(xs)\n",
    "broken": "def solve(xs)\n",
}


def subjects(programs: list[str]) -> list[Subject]:
    return [Subject({"cases": []}, problem(), p) for p in programs]


def test_bandit_finds_eval_input_and_shell_true_in_one_batch() -> None:
    reports = BanditAnalyzer().analyze(subjects(list(DANGEROUS.values())))
    eval_ids = {i["test_id"] for i in reports[0]["issues"]}
    shell = {i["test_id"]: i for i in reports[1]["issues"]}
    assert "B307" in eval_ids  # use of eval
    assert shell["B602"]["severity"] == "HIGH" and shell["B602"]["line"] == 5
    assert shell["B602"]["confidence"] == "HIGH"
    assert reports[1]["max_severity"] == "HIGH"
    assert reports[2] == {"issues": [], "count": 0, "max_severity": None}
    assert reports[3] == {"skipped": "the program does not parse"}


KNOWN = textwrap.dedent(
    '''
    def grade(score, curve=0):
        """Letter grade."""
        score += curve
        if score >= 90:
            return "A"
        elif score >= 80:
            return "B"
        for bonus in (1, 2):
            if score + bonus >= 80 and curve:
                return "B-"
        return "C"


    class Box:
        def size(self, xs):
            return len([x for x in xs if x])
    '''
)


def test_radon_numbers_equal_radons_own() -> None:
    report = radon_report(KNOWN)
    own = {b.fullname: b.complexity for b in cc_visit(KNOWN) if not hasattr(b, "methods")}
    assert report["complexity"] == own == {"grade": 6, "Box.size": 3}
    assert report["max_complexity"] == 6 and report["mean_complexity"] == 4.5
    assert report["maintainability"] == mi_visit(KNOWN, True)
    assert report["halstead_volume"] == h_visit(KNOWN).total.volume
    assert report["raw"] == analyze(KNOWN)._asdict()


def test_structure_code_levels_facts_and_hallucinated_names() -> None:
    import ast

    program = (
        "import math\n\ndef aux(xs):\n    return sum(xs)\n\n"
        "def solve(xs, k=1):\n    aux(xs)\n    return magic(xs) + math.pi\n"
    )
    report = structure_report(ast.parse(program), problem())
    assert report["entry_defined"] and report["signature_ok"]
    assert report["undefined_names"] == ["magic"]
    assert report["functions"]["solve"]["ignored_calls"] == ["aux"]
    assert report["helpers_called"] == {"aux": True}
    wrapper = structure_report(
        ast.parse("def solve(xs):\n    r = aux(xs)\n    return r\n"), problem()
    )
    assert wrapper["functions"]["solve"]["wrapper_of"] == "aux"
    bad_sig = structure_report(ast.parse("def solve(a, b):\n    return a\n"), problem())
    assert bad_sig["signature_ok"] is False


def test_syntax_reports_line_and_column() -> None:
    assert check_syntax("x = 1\ndef f(:\n")["line"] == 2
    assert check_syntax("x = 1\n")["ok"]


def test_cache_hits_in_memory_and_on_disk_and_versions_split_it(
    tmp_path: Path, monkeypatch
) -> None:
    path = tmp_path / "c.sqlite"
    batch = subjects(list(DANGEROUS.values()))
    names = ["syntax", "radon", "bandit", "style", "structure"]
    first = run_analyzers(batch, names, AnalyzerCache(path))
    calls = []
    original = ANALYZERS["radon"].analyze
    monkeypatch.setattr(
        ANALYZERS["radon"], "analyze", lambda s: calls.append(len(s)) or original(s)
    )
    fresh = AnalyzerCache(path)  # a new process: only the disk layer
    assert run_analyzers(batch, names, fresh) == first
    assert calls == []
    assert run_analyzers(batch, names, fresh) == first  # memory layer
    monkeypatch.setattr(ANALYZERS["radon"], "version", "test-2")
    run_analyzers(batch, names, fresh)
    assert calls == [4]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 7), min_size=1, max_size=12),
    st.integers(2, 10),
    st.integers(1, 5),
)
def test_the_disk_layer_keeps_at_most_its_limit_and_the_newest_reports(
    batches: list[int], limit: int, prune_every: int
) -> None:
    """Stores of any sizes: after each count of the disk's entries (every ``prune_every``
    stores) there are at most ``limit``, the oldest gone first, and the report stored last is
    always still there, in memory and for a fresh process alike."""
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.sqlite"
        cache = AnalyzerCache(path, disk_limit=limit, prune_every=prune_every)
        keys: list[str] = []
        for size in batches:
            new = [f"k{len(keys) + i}" for i in range(size)]
            cache.put_many((key, {"n": int(key[1:])}) for key in new)
            keys += new
            with sqlite3.connect(path) as db:
                kept = [k for (k,) in db.execute("SELECT key FROM reports ORDER BY rowid")]
            if cache._stored == 0:  # it has just counted
                assert len(kept) <= limit
            assert kept == keys[len(keys) - len(kept) :]  # the newest, in the order stored
            assert AnalyzerCache(path).get_many([keys[-1]]) == {keys[-1]: {"n": len(keys) - 1}}


def test_types_checks_each_parsing_program_even_with_a_broken_one_in_the_batch(
    tmp_path: Path,
) -> None:
    batch = subjects(
        [
            "def solve(x: int) -> str:\n    return x\n",
            "def solve(:\n",
            "def solve(xs):\n    return undefined_thing\n",  # unannotated: checked all the same
        ]
    )
    typed, broken, untyped = (
        r["types"] for r in run_analyzers(batch, ["types"], AnalyzerCache(tmp_path / "c.sqlite"))
    )
    assert typed["codes"] == {"return-value": 1} and typed["errors"][0]["line"] == 2
    assert broken == {"skipped": "the program does not parse"}
    assert untyped["codes"] == {"name-defined": 1}


def test_dynamic_reports_from_hand_built_rows(tmp_path: Path) -> None:
    p = problem(reference_durations={"case_0": 0.01, "case_1": 0.01, "case_2": 0.01})
    cases = [
        {"case_id": "case_0", "status": "passed", "duration_s": 0.04},
        {"case_id": "case_1", "status": "passed", "duration_s": 0.01},
        {"case_id": "case_2", "status": "failed", "duration_s": 0.0001, "message": "assert 1 == 2"},
        {"case_id": "case_3", "status": "timeout", "duration_s": 1.0, "message": ""},
    ]
    measured = {
        "statements": [1, 2, 3, 4], "executed": [1, 2, 4], "missing": [3], "branches": 2,
        "partial_branches": 1, "line_rate": 0.75, "branch_rate": 0.5,
    }  # fmt: skip
    rows = [
        {"cases": cases, "execution": {"max_rss_kb": 9000, "coverage": measured}},
        {"cases": cases, "execution": {"max_rss_kb": 9000}},
    ]
    batch = [Subject(r, p, SOLVE_PROGRAM) for r in rows]
    names = ["tests", "coverage", "efficiency"]
    first, second = run_analyzers(batch, names, AnalyzerCache(tmp_path / "c.sqlite"))
    # only passed cases with a reference time count: 0.05 s against 0.02 s
    assert first["efficiency"] == {
        "cases": 2, "sample_s": 0.05, "reference_s": 0.02, "ratio": 2.5, "speed": 0.4,
        "baseline": "reference", "peers": None, "max_rss_kb": 9000, "traced": True,
    }  # fmt: skip
    assert second["efficiency"]["traced"] is False
    assert first["coverage"]["line_rate"] == 0.75 and first["coverage"]["missing_lines"] == [3]
    assert first["coverage"]["branch_rate"] == 0.5 and first["coverage"]["missing_branches"] == 1
    assert second["coverage"] == {
        "measured": False, "line_rate": None, "branch_rate": None, "note": "not measured",
    }  # fmt: skip
    assert first["tests"]["exceptions"] == {"AssertionError": 1, "Timeout": 1}
    assert first["tests"]["pass_fraction"] == 0.5


SOLVE_PROGRAM = "def solve(xs):\n    return sum(xs)\n"


def test_cache_key_ignores_measured_timings_but_not_the_prompt() -> None:
    import dataclasses

    from harness.analyzers.cache import problem_fingerprint

    plain = problem()
    timed = dataclasses.replace(
        problem(reference_durations={"case_0": 0.01}),
        cases=tuple(dataclasses.replace(c, timeout_s=2.5) for c in plain.cases),
    )
    assert problem_fingerprint(timed) == problem_fingerprint(plain)
    other = problem(prompt="def solve(xs, ys):\n")
    assert problem_fingerprint(other) != problem_fingerprint(plain)
