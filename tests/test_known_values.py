"""Values an oracle passed are known by their exact encoding: a later sample sending the same
bytes for the case is neither decoded nor judged again, and gets exactly what decoding and
judging would have given it, forged payloads included."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluate import evaluate
from harness.oracles import encoded
from harness.pipeline import known_values
from harness.records import STOP_AT_FIRST_FAILURE, CheckCase, Problem, Sample
from harness.sandbox import KnownValues, Sandbox, SandboxSettings
from harness.sandbox.api import CaseRequest, SampleRequest
from harness.sandbox.channel import codec
from harness.sandbox.decode import BLOB, CORRUPTED, _known_case, assemble, encoding_key

NONCE = "abc"
CALL = CaseRequest("c", "compare", calls=("candidate()",))
plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=6) | st.tuples(inner, inner),
    max_leaves=20,
)


def child_body(value: Any, duration: float = 1e-5, index: int = 0) -> bytes:
    """A case's payload exactly as the child writes it (child.py's _run_case, its sender)."""
    payload = {"status": "ok", "values": [codec.encode_value(value)], "duration_s": duration}
    payload["n"], payload["i"] = NONCE, index
    return codec.frame(codec.KIND_CASE, index, payload)[codec.HEADER_SIZE :]


def decoded(body: bytes, known: dict[bytes, KnownValues] | None = None) -> Any:
    request = SampleRequest("", "f", (CALL,), known={"c": known or {}})
    slot = {"kind": "frame", "nonce": NONCE, "at": [0, len(body)]}
    return assemble(request, {"slots": [slot], BLOB: body}).cases["c"]


def learned(value: Any) -> dict[bytes, KnownValues]:
    """What a judging process keeps of a value its oracle passed."""
    first = decoded(child_body(value))
    assert first.encoding is not None and not first.known
    return {first.encoding: KnownValues(tuple(first.values), first.units)}


def forgeries(body: bytes) -> list[bytes]:
    """The payload as written, and as a candidate writing its own frames might bend it."""
    head, _, tail = body.rpartition(b',"duration_s":')
    return [
        body,
        head + b',"duration_s": 2e-05 ,"n":"abc","i":0}',  # spaces: still the same payload
        head + b',"duration_s":1e-05,"i":0,"n":"abc"}',  # its keys in another order
        head + b',"duration_s":1e-05,"n":"abc","i":0,"x":1}',  # one key more
        head + b',"duration_s":1e-05,"n":"abc","i":0,"values":[["n"]]}',  # values again
        head + b',"duration_s":1e-05,"n":"abc","i":0,"status":"raised"}',  # status again
        head + b',"duration_s":1e-05,"n":"other","i":0}',  # another writer
        head + b',"duration_s":1e-05,"n":"abc","i":1}',  # out of order
        head + b',"duration_s":-1,"n":"abc","i":0}',  # a bad duration
        head + b',"duration_s":1e-05,"n":"abc"}',  # no index
        head + b',"duration_s":1e-05,"n":"abc","i":0',  # cut short
        head + b',"duration_s":1e-05,"n":"abc","i":0}}',  # one brace too many
        head + b',"duration_s":3,"n":"abc","i":0}',  # a whole number of seconds
        head + b',"duration_s":1e-05,"n":"\\u0061bc","i":0}',  # the nonce spelt with an escape
        head + b',"duration_s":1e-05,"n":"abc","i":00}',  # not a JSON number
        head + b',"duration_s":1e999,"n":"abc","i":0}',  # past a float
    ]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@settings(max_examples=150, deadline=None)
@given(plain, plain)
def test_a_known_encoding_gives_what_decoding_gives(value: Any, other: Any) -> None:
    known = learned(value)
    for body in forgeries(child_body(value)) + forgeries(child_body(other)):
        fresh, fast = decoded(body), decoded(body, known)
        assert (fast.status, fast.message, fast.duration_s) == (
            fresh.status,
            fresh.message,
            fresh.duration_s,
        )
        assert fast.values == fresh.values
        if fast.values is not None:
            assert all(map(same, fast.values, fresh.values))
        if fast.known:  # only the same bytes, in the child's layout, are taken as known
            assert body.startswith(child_body(value).rpartition(b',"duration_s":')[0])


def test_a_payload_that_is_not_the_childs_own_encoding_is_never_known() -> None:
    """The same values written otherwise (spaces, a list's items as JSON numbers another way)
    parse alike but are not the bytes the child writes: no key, so never kept."""
    body = b'{"status":"ok","values":[ ["i","1e"] ],"duration_s":1e-05,"n":"abc","i":0}'
    case = decoded(body)
    assert case.values == [30] and case.encoding is None
    assert decoded(child_body(30)).encoding == encoding_key(b'[["i","1e"]]')
    assert decoded(child_body("x" * 5000)).encoding.startswith(b"#")  # a long one by digest


def test_a_known_value_still_counts_against_the_samples_units() -> None:
    """Near the end of a sample's units the bounds decide anew (decoding then says "too
    large" where the kept value would not)."""
    body = child_body(list(range(100)))
    known = learned(list(range(100)))
    units = next(iter(known.values())).units
    slot = {"kind": "frame", "nonce": NONCE, "at": [0, len(body)]}
    assert _known_case("c", 0, slot, body, known, [units]) is None
    left = [units + 1]
    assert _known_case("c", 0, slot, body, known, left).known and left == [1]


def test_forged_frames_stay_corrupted_with_known_values() -> None:
    known = learned(7)
    head = child_body(7).rpartition(b',"duration_s":')[0]
    case = decoded(head + b',"duration_s":1e-05,"n":"other","i":0}', known)
    assert (case.status, case.message, case.known) == ("crashed", CORRUPTED, False)


def test_the_childs_own_frames_are_known_the_second_time() -> None:
    """The real child's layout: if it changed, no value would ever be known again (and the
    judging would silently cost what it did before)."""
    request = SampleRequest(
        "def f(n):\n    return list(range(n))\n",
        "f",
        (CaseRequest("c", "compare", calls=("candidate(50)",)),),
        known={"c": {}},
    )
    with Sandbox(SandboxSettings()) as box:
        first = box.run(request).cases["c"]
        assert first.values == [list(range(50))] and first.encoding is not None
        known = {"c": {first.encoding: KnownValues(tuple(first.values), first.units)}}
        again = box.run(SampleRequest(request.program, "f", request.cases, known=known))
    case = again.cases["c"]
    assert case.known and case.values == [list(range(50))] and case.duration_s > 0


def _problem(task_id: str, stop_at_first_failure: bool) -> Problem:
    cases = tuple(
        CheckCase(
            f"plus_{n}",
            "",
            "compare",
            calls=(f"candidate({n})",),
            oracle="equal",
            expected=json.dumps({"out": encoded(list(range(n)))}),
        )
        for n in range(40)
    )
    metadata = {STOP_AT_FIRST_FAILURE: True} if stop_at_first_failure else {}
    return Problem("known", task_id, "", "f", cases, "", metadata=metadata)


PROGRAMS = {
    "right": "def f(n):\n    return list(range(n))\n",
    "right-again": "def f(n):\n    return [i for i in range(n)]\n",
    "tuple": "def f(n):\n    return tuple(range(n))\n",
    "late": "def f(n):\n    return list(range(n)) if n < 30 else []\n",
    "right-last": "def f(n):\n    out = []\n    for i in range(n):\n        out.append(i)\n    return out\n",
}


@pytest.mark.parametrize("stop_at_first_failure", [False, True])
def test_a_run_judges_alike_with_and_without_known_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_at_first_failure: bool
) -> None:
    """The samples after the first right one send known values for every case; the rows are
    those of a run that decodes and judges each value, and a wrong answer still fails."""

    def run(name: str) -> list[dict[str, Any]]:
        problem = _problem(f"K/{name}-{stop_at_first_failure}", stop_at_first_failure)
        samples = [Sample(problem.task_id, source, sid) for sid, source in PROGRAMS.items()]
        rows = evaluate([problem], samples, out_dir=tmp_path / name, timeout_s=30)
        return [
            {k: r[k] for k in ("sample_id", "status", "passed")}
            | {"cases": [(c["case_id"], c["status"], c["message"]) for c in r["cases"]]}
            for r in rows
        ]

    learning = known_values.passed_values
    monkeypatch.setattr(known_values, "passed_values", known_values.PassedValues())
    with_known = run("with")
    kept = known_values.passed_values
    assert sum(len(e) for k in kept._problems.values() for e in k.cases.values()) == 40
    monkeypatch.setattr(known_values, "MAX_ENCODINGS", 0)  # nothing kept: all decoded
    assert run("without") == with_known
    monkeypatch.setattr(known_values, "passed_values", learning)
    verdicts = {row["sample_id"]: row["passed"] for row in with_known}
    assert verdicts == {
        "right": True,
        "right-again": True,
        "tuple": False,
        "late": False,
        "right-last": True,
    }


def test_the_problems_judged_longest_ago_give_up_their_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept values are bounded: past the bound, the oldest problem's go first, and a problem
    whose values alone are past it keeps what fits."""
    from harness.sandbox import CaseExecution

    monkeypatch.setattr(known_values, "MAX_KEPT_UNITS", 100)
    kept = known_values.PassedValues()
    first, second = _problem("K/first", False), _problem("K/second", False)

    def passed(problem: Problem, case: int, units: int) -> None:
        kept.of(problem)
        executed = CaseExecution(
            f"plus_{case}", "ok", values=[case], encoding=b"%d" % case, units=units
        )
        kept.record(problem, executed)

    passed(first, 1, 60)
    passed(first, 2, 30)
    assert set(kept.of(first)["plus_1"]) == {b"1"} and kept._units == 90
    passed(second, 3, 50)  # over the bound: the first problem's go
    assert kept.of(second)["plus_3"] and kept._units == 50
    assert not any(kept.of(first).values())
    passed(second, 4, 60)  # the second problem alone would pass the bound: not kept
    assert not kept.of(second)["plus_4"] and kept._units == 50
    passed(second, 5, 50)
    assert kept.of(second)["plus_5"] and kept._units == 100


def test_a_problems_expected_outputs_are_prepared_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each part of each sample asks for its cases' expected outputs again; a problem's are
    parsed and decoded once (HumanEval+ asked 900,000 times for its 165,000 cases), and a new
    problem object (a suite loaded again) gets its own."""
    from harness.pipeline import verdicts

    prepared: list[str] = []
    monkeypatch.setattr(verdicts, "prepare_expected", prepared.append)
    problem = _problem("HumanEval/prepared", stop_at_first_failure=True)
    ids = [case.case_id for case in problem.cases]
    for _sample in range(3):
        verdicts.prepare_oracle_cases(problem, ids[:10])
        verdicts.prepare_oracle_cases(problem, ids)
    assert sorted(prepared) == sorted(case.expected for case in problem.cases)
    again = _problem("HumanEval/prepared", stop_at_first_failure=True)
    verdicts.prepare_oracle_cases(again, ids)
    assert len(prepared) == 2 * len(problem.cases)
