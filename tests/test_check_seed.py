"""Judged checks draw their random inputs from a seed the candidate cannot know.

HumanEval/38 and /50 run in the judge (harness/sandbox/inside/judge.py): 100 times, draw a random
string, encode it with the prompt's helper, assert the candidate decodes it. The judge used to be
seeded with the sample's public ``seed`` (0 unless asked), the one the candidate's own child is
seeded with, so a program could replay the draws (from ``random.getstate()`` at import, or from
``Random(0)``) and return each expected string without decoding anything. The judge now gets
``check_seed`` (harness/sandbox/check_seed.py): a keyed hash of the public seed and the program
under a secret of the trusted process. Here, in the real sandbox (both modes): the replays fail
and honest solutions pass; the judge's inputs are the same for the same program and seed in one
process, other for another seed, and never the public seed's; the child never holds the check
seed. The derivation's properties are checked directly, with hypothesis.
"""

from __future__ import annotations

import ast
import random
import string
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.pipeline.calibration import SEEDS
from harness.pipeline.runtime import build_request
from harness.sandbox import Sandbox, SandboxSettings
from harness.sandbox.check_seed import check_seed
from harness.sandbox.sandbox import _sample_message
from suites.registry import load_suite

ENTRY = {"HumanEval/38": "decode_cyclic", "HumanEval/50": "decode_shift"}

# Each replays the check's draws (``randint(10, 20)`` letters, ``choice`` each) and ignores its
# input: the state the child starts from, captured at import (any public seed), or seed 0's.
REPLAY_IMPORT_STATE = """
import random as _random, string as _string
_rng = _random.Random()
_rng.setstate(_random.getstate())  # the state the judge started from, when it shared the seed


def {entry}(s: str):
    n = _rng.randint(10, 20)
    return ''.join(_rng.choice(_string.ascii_lowercase) for _ in range(n))
"""
REPLAY_SEED_ZERO = REPLAY_IMPORT_STATE.replace("_random.Random()", "_random.Random(0)").replace(
    "_rng.setstate(_random.getstate())", "pass"
)
REPLAYS = {"import_state": REPLAY_IMPORT_STATE, "seed_zero": REPLAY_SEED_ZERO}

# An honest decoder that also prints the first three inputs the judge handed it.
HONEST_38_PRINTING = """

_seen = []


def decode_cyclic(s: str):
    if len(_seen) < 3:
        _seen.append(s)
        print(repr(s))
    return encode_cyclic(encode_cyclic(s))
"""

# Every big int the child can reach through gc (containers' items, dicts' values): the public
# seed when it is big, and the check seed if the child were ever handed it.
PRINT_BIG_INTS = """

def _print_big_ints():
    import gc

    found = set()
    for obj in gc.get_objects():
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
        for value in items:
            if type(value) is int and value > 2**64:
                found.add(value)
    print(sorted(found))


_print_big_ints()
"""


@pytest.fixture(scope="module")
def humaneval() -> dict:
    return {p.task_id: p for p in load_suite("humaneval") if p.task_id in ENTRY}


@pytest.fixture(scope="module")
def sandbox(use_bwrap: bool) -> Iterator[Sandbox]:
    with Sandbox(SandboxSettings(use_bwrap=use_bwrap)) as box:
        yield box


def _judged(sandbox: Sandbox, problem, program: str, seed: int = 0):
    result = sandbox.run(build_request(problem, program, seed=seed))
    assert result.infra_error is None, result.infra_error
    judged = [c.case_id for c in problem.cases if c.mode == "sandbox"]
    assert judged, problem.task_id
    return result, [result.cases[c] for c in judged]


def _first_inputs(seed: int, count: int = 3) -> list[str]:
    """What HumanEval/38's check would encode first, were the judge seeded with ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        text = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(10, 20)))
        out.append(text)
    return out


def _encode_cyclic(s: str) -> str:
    groups = [s[3 * i : min(3 * i + 3, len(s))] for i in range((len(s) + 2) // 3)]
    return "".join(g[1:] + g[0] if len(g) == 3 else g for g in groups)


def _printed_inputs(result) -> list[str]:
    return [ast.literal_eval(line) for line in result.stdout.splitlines()]


# -- (1) the replay attack fails, honest solutions pass ----------------------------------------
@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("replay", sorted(REPLAYS))
@pytest.mark.parametrize("task_id", sorted(ENTRY))
def test_replaying_the_checks_random_inputs_fails(
    task_id: str, replay: str, seed: int, humaneval: dict, sandbox: Sandbox
) -> None:
    problem = humaneval[task_id]
    program = problem.prompt + "    return s\n" + REPLAYS[replay].format(entry=ENTRY[task_id])
    _, cases = _judged(sandbox, problem, program, seed)
    assert all(c.status == "assertion" for c in cases), cases  # the check failed: no pass

    honest_result, honest = _judged(sandbox, problem, problem.prompt + problem.reference, seed)
    assert all(c.status == "ok" for c in honest_result.cases.values()), honest_result.cases
    assert honest


# -- (2) the judge's inputs: stable per program and seed, other per seed, never the public ones --
def test_the_judges_inputs_come_from_the_check_seed(humaneval: dict, sandbox: Sandbox) -> None:
    problem = humaneval["HumanEval/38"]
    program = problem.prompt + problem.reference + HONEST_38_PRINTING
    seen = {}
    for seed in SEEDS:
        result, cases = _judged(sandbox, problem, program, seed)
        assert all(c.status == "ok" for c in cases), cases
        seen[seed] = _printed_inputs(result)
        assert len(seen[seed]) == 3
        # never what the public seed (the child's) would have drawn
        public = [_encode_cyclic(s) for s in _first_inputs(seed)]
        assert seen[seed] != public
        # exactly what the check seed draws
        assert seen[seed] == [_encode_cyclic(s) for s in _first_inputs(check_seed(seed, program))]
    # each calibration seed gets its own inputs
    assert len({tuple(v) for v in seen.values()}) == len(SEEDS)
    # the same program and seed: the same inputs, in this sandbox and in another of the process
    again, _ = _judged(sandbox, problem, program, SEEDS[1])
    assert _printed_inputs(again) == seen[SEEDS[1]]
    with Sandbox(SandboxSettings(use_bwrap=sandbox.settings.use_bwrap)) as other:
        elsewhere, _ = _judged(other, problem, program, SEEDS[1])
    assert _printed_inputs(elsewhere) == seen[SEEDS[1]]
    # another program (one more blank line) with the same seed: other inputs
    other_program, _ = _judged(sandbox, problem, program + "\n", SEEDS[1])
    assert _printed_inputs(other_program) != seen[SEEDS[1]]


def test_the_child_never_holds_the_check_seed(humaneval: dict, sandbox: Sandbox) -> None:
    """The child's request holds the public seed (here one big enough to find among the child's
    objects), never the check seed: the zygote forks the child with its own request only."""
    problem = humaneval["HumanEval/38"]
    program = problem.prompt + problem.reference + PRINT_BIG_INTS
    public = 2**70 + 12345
    result, cases = _judged(sandbox, problem, program, public)
    assert all(c.status == "ok" for c in cases), cases
    found = ast.literal_eval(result.stdout.strip())
    assert public in found  # the scan sees the request's values
    assert check_seed(public, program) not in found


# -- the derivation -----------------------------------------------------------------------------
def test_the_sample_message_carries_the_check_seed_beside_the_public_seed(humaneval: dict) -> None:
    problem = humaneval["HumanEval/38"]
    program = problem.prompt + problem.reference
    message = _sample_message(build_request(problem, program, seed=4), "key", 1)
    assert message["seed"] == 4
    assert message["check_seed"] == check_seed(4, program)
    assert message["check_seed"] not in (4, 0)


SECRETS = st.binary(min_size=16, max_size=64)
PROGRAMS = st.text(st.characters(blacklist_categories=()), max_size=200)
SEED_VALUES = st.integers(min_value=-(2**80), max_value=2**80)


@given(seed=SEED_VALUES, program=PROGRAMS, secret=SECRETS)
def test_the_check_seed_is_a_stable_int_random_takes(
    seed: int, program: str, secret: bytes
) -> None:
    value = check_seed(seed, program, secret)
    assert type(value) is int and 0 <= value < 2**128
    assert check_seed(seed, program, secret) == value
    random.Random(value)  # random.seed takes it
    assert check_seed(seed, program) == check_seed(seed, program)  # this process's secret


INPUTS = st.tuples(SEED_VALUES, PROGRAMS, SECRETS)  # (seed, program, secret)


@given(ours=INPUTS, theirs=INPUTS, which=st.integers(min_value=0, max_value=2))
def test_another_seed_program_or_secret_gives_another_check_seed(
    ours: tuple[int, str, bytes], theirs: tuple[int, str, bytes], which: int
) -> None:
    changed = list(ours)
    changed[which] = theirs[which]
    if changed[which] != ours[which]:
        assert check_seed(*ours) != check_seed(*changed)
        if which < 2:  # this process's own secret too
            assert check_seed(*ours[:2]) != check_seed(*changed[:2])
    seed, program, _ = ours
    # nothing public derives it: neither the seed nor an unkeyed hash of what the candidate sees
    assert check_seed(seed, program) not in (seed, check_seed(seed, program, b""))


def test_each_trusted_process_draws_its_own_secret() -> None:
    code = "from harness.sandbox.check_seed import check_seed; print(check_seed(0, 'x'))"
    runs = [
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
        for _ in range(2)
    ]
    values = {int(run.stdout) for run in runs}
    values.add(check_seed(0, "x"))
    assert len(values) == 3
