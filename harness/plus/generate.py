"""Generate a problem's plus inputs: pool → reference runs in the sandbox → choice → shrinking.

1. **Pool.** The checks' literal inputs define each argument's domain
   (:mod:`harness.plus.domains`); the pool holds type-aware mutations of those inputs
   (:mod:`harness.plus.input_mutation`) and hypothesis's own examples
   (:mod:`harness.plus.strategies`),
   minus inputs outside the problem's contract and the checks' own inputs.
2. **Reference runs**, in the sandbox, twice (with different ``random`` seeds), behind the
   problem's EvalPlus contract where it has one (:func:`harness.plus.contracts.guarded_program`:
   an input the contract refuses raises): an input is
   kept only where the reference returned both times, the same literal value, within the time
   budget (``BUDGET_MULTIPLIER`` × its slowest original check, from ``BUDGET_FLOOR_S`` to
   ``BUDGET_CAP_S``). No expected value ever comes from a run that raised or timed out. The
   pool is tried in chunks until the reference has used ``POOL_BUDGET_S`` (a slow reference,
   MBPP's O(n²) amicable numbers, gets fewer candidates, not minutes of generation). Where
   the problem has a second reference (HumanEval+'s, for a HumanEval task), it answers too;
   where the two differ, the case accepts either answer.
3. **Choice.** Inputs that tell the reference from its AST mutants
   (:mod:`harness.plus.mutants`) come first (greedy: each new input kills the most mutants not
   yet killed), then inputs with features the checks rarely have (empty, zero, negative,
   duplicates, one element), then the rest by distinct answers, smallest first.
4. **Shrinking** of each mutant-killing input, in sandbox-answered rounds
   (:mod:`harness.plus.shrinking`), then a final clean reference run of the chosen inputs,
   twice, gives the expected values.

Everything random is seeded, so a seed gives the same cases; results are cached under
``cache_dir()/plus`` by the problem's fingerprint, the count and the seed, only from runs the
sandbox completed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import harness.plus.cases as plus_cases
from harness.completions import assemble_program
from harness.paths import cache_dir
from harness.plus.contracts import (
    CHECKED,
    Contract,
    contract,
    evalplus_contract,
    evalplus_reference,
    guarded_program,
)
from harness.plus.domains import Domain, Hints, from_annotation, infer, with_edges
from harness.plus.input_mutation import edge_inputs, mutate_inputs
from harness.plus.mutants import mutants
from harness.plus.runner import (
    InfrastructureError,
    Run,
    kill_runs,
    reference_runs,
    run_batch,
)
from harness.plus.shrinking import size, smaller
from harness.plus.signature import literal_inputs, signature, usable_inputs
from harness.plus.strategies import draw
from harness.records import CheckCase, Problem
from harness.sandbox import Sandbox

VERSION = 15  # part of the cache key: bump when generation changes what it produces
BUDGET_FLOOR_S = 0.1
BUDGET_MULTIPLIER = 20.0
BUDGET_CAP_S = 1.0  # no plus input may take the reference longer than this
POOL_BUDGET_S = 6.0  # reference time spent on the pool, per problem (then the rest is left)
POOL_CHUNK = 48
POOL_MUTATIONS = 160
POOL_HYPOTHESIS = 160
MAX_MUTANTS = 30
MAX_KILL_INPUTS = 120
MIN_KILL_INPUTS = 8
KILL_BUDGET_S = 3.0  # reference time × (mutants + 1) × inputs tried, per sandbox batch
SHRINK_ROUNDS = 3


@dataclass
class PlusResult:
    """The plus cases of one problem and how they were made."""

    cases: tuple[CheckCase, ...]
    stats: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # why there are none, when there are none


def plus_cases_for(problem: Problem, sandbox: Sandbox, *, count: int, seed: int) -> PlusResult:
    """``count`` (at most) plus cases for ``problem``, from the cache when it has them."""
    terms = evalplus_contract(problem.task_id, problem.metadata)
    second = evalplus_reference(problem.task_id, problem.metadata)
    text = f"{problem.fingerprint()}\n{terms}\n{second}"
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = cache_dir() / "plus" / f"{key}-n{count}-s{seed}-v{VERSION}.json"
    try:
        data = json.loads(path.read_text())
        cached = tuple(CheckCase(**{**c, "calls": tuple(c["calls"])}) for c in data["cases"])
        return PlusResult(cached, {**data["stats"], "cached": True}, data.get("reason", ""))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    started = time.perf_counter()
    try:
        result = _generate(problem, sandbox, count, seed, terms, second)
    except InfrastructureError as exc:
        return PlusResult((), {"seconds": round(time.perf_counter() - started, 3)}, str(exc))
    result.stats["seconds"] = round(time.perf_counter() - started, 3)
    payload = {
        "cases": [dataclasses.asdict(c) for c in result.cases],
        "stats": result.stats,
        "reason": result.reason,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{time.time_ns()}.tmp")
        partial.write_text(json.dumps(payload))
        partial.replace(path)
    except OSError:
        pass  # a read-only cache only costs time
    return result


def _generate(
    problem: Problem, sandbox: Sandbox, count: int, seed: int, terms: str, second: str
) -> PlusResult:
    if problem.defects or not problem.reference.strip():
        return PlusResult((), {}, "no sound reference")
    sig = signature(problem)
    if sig is None:
        return PlusResult((), {}, "the entry point is not a plain function")
    seeds = usable_inputs(literal_inputs(problem), sig)
    arity = len(seeds[0]) if seeds else len(sig.names)
    if not seeds and any(a is None for a in sig.annotations):
        return PlusResult((), {}, "no literal inputs and no annotations to infer inputs from")
    hints = Hints.from_text(problem.prompt + " " + str(problem.metadata.get("text", "")))
    domains: list[Domain] = [
        infer([args[i] for args in seeds], sig.annotations[i], hints)
        if seeds
        else from_annotation(sig.annotations[i])
        for i in range(arity)
    ]
    allowed = contract(problem.task_id, sig.names[:arity])
    if terms.strip():  # EvalPlus's contract, run in the sandbox, says where the inputs end
        domains = [with_edges(d) for d in domains]
        allowed = _anything  # and it replaces the project's own guess (contracts.json)
    candidates = _candidates(problem.task_id, seeds, domains, allowed, seed)
    stats: dict[str, Any] = {"seeds": len(seeds), "pool": len(candidates)}
    if not candidates:
        return PlusResult((), stats, "no inputs could be generated")

    program = assemble_program(problem, problem.reference).program
    # The reference behind the problem's contract (EvalPlus's): inputs it refuses raise there.
    guarded = guarded_program(program, problem.entry_point, terms)
    other = guarded_program(second, problem.entry_point, terms) if second else ""
    if guarded is None or other is None:
        return PlusResult((), stats, "the problem's contract could not be applied")
    stats["contract"] = bool(terms.strip())
    stats["second_reference"] = bool(other)
    budget = _budget(problem, program, sandbox)
    stats["budget_s"] = round(budget, 4)
    inputs = list(candidates.values())
    random.Random(f"{problem.task_id}|{seed}|pool").shuffle(inputs)
    callee = CHECKED if guarded != program else "candidate"
    checks = _Checks(guarded, other, callee, budget)
    valid = _valid_runs(problem, checks, inputs, sandbox, POOL_BUDGET_S)
    stats["valid"] = len(valid)
    if not valid:
        return PlusResult((), stats, "the reference answered no generated input")

    sources = mutants(program, MAX_MUTANTS, seed)
    stats["mutants"] = len(sources)
    chosen, killers = _choose(problem, guarded, sources, valid, sandbox, count, stats)
    chosen = _shrunk(problem, guarded, sources, chosen, killers, domains, allowed, sandbox, valid)
    final = _valid_runs(problem, checks, chosen, sandbox)
    has_own = any(plus_cases.is_plus(c.case_id) for c in problem.cases)
    prefix = plus_cases.GENERATED_PREFIX if has_own else plus_cases.PREFIX
    cases = _plus_cases(final[:count], checks.disputed, prefix)
    stats["kept"] = len(cases)
    return PlusResult(tuple(cases), stats, "" if cases else "no input survived")


def _candidates(
    task_id: str,
    seeds: list[tuple[Any, ...]],
    domains: list[Domain],
    allowed: Contract,
    seed: int,
) -> dict[str, tuple[Any, ...]]:
    """The pool: mutations of the seeds and hypothesis's draws, by their literal text, without
    the seeds themselves, repeats, inputs with no literal and inputs the contract refuses."""
    rng = random.Random(f"{task_id}|{seed}")
    pool = edge_inputs(seeds, domains, rng)
    pool += mutate_inputs(seeds, domains, POOL_MUTATIONS, rng)
    pool += draw(domains, POOL_HYPOTHESIS, seed)
    known = {repr(args) for args in seeds}
    candidates: dict[str, tuple[Any, ...]] = {}
    for args in pool:
        text = plus_cases.args_literal(args)
        if text is None or text in candidates or repr(args) in known or not allowed(args):
            continue
        candidates[text] = args
    return candidates


def _anything(args: tuple[Any, ...]) -> bool:
    return True


def _plus_cases(
    final: list[tuple[tuple[Any, ...], Run]], disputed: dict[str, Any], prefix: str
) -> list[CheckCase]:
    """A plus case per kept ``(input, reference run)`` that both have a literal text (that
    accepts the second reference's answer too where the two differ)."""
    cases: list[CheckCase] = []
    for args, run in final:
        args_text = plus_cases.args_literal(args)
        expected_text = plus_cases.literal(run.value)
        if args_text is None or expected_text is None:
            continue
        also = None
        if repr(args) in disputed:
            other = disputed[repr(args)]
            other_text = plus_cases.literal(other)
            if other_text is None or type(other) is not type(run.value):
                continue  # (a check of one type's answer would raise on the other's)
            also = (other, other_text)
        case = plus_cases.plus_case(len(cases), args_text, run.value, expected_text, also, prefix)
        cases.append(case)
    return cases


def _budget(problem: Problem, program: str, sandbox: Sandbox) -> float:
    """The reference's time limit per plus input: relative to its slowest original check."""
    calls = [call for case in problem.cases if case.mode == "compare" for call in case.calls]
    runs = run_batch(problem, program, calls[:50], sandbox, timeout_s=5.0) if calls else []
    slowest = max((r.duration_s for r in runs if r.status == "ok"), default=0.0)
    return min(BUDGET_CAP_S, max(BUDGET_FLOOR_S, BUDGET_MULTIPLIER * slowest))


@dataclass(frozen=True)
class _Checks:
    """How a generated input is run: the (guarded) reference, HumanEval+'s own reference as a
    second opinion ("" if none), the function the calls go to, the time budget per input."""

    program: str
    second: str
    callee: str
    budget: float
    # Inputs the two references answer differently (both literally, within budget): the
    # second answer by the input's repr. Either answer passes such a case.
    disputed: dict[str, Any] = field(default_factory=dict)


def _valid_runs(
    problem: Problem,
    checks: _Checks,
    inputs: Sequence[tuple[Any, ...]],
    sandbox: Sandbox,
    spend_s: float | None = None,
) -> list[tuple[tuple[Any, ...], Run]]:
    """``(input, run)`` where the reference returned the same literal twice within budget (and
    the second reference, where there is one, the same answer).

    With ``spend_s`` the inputs go to the sandbox in chunks, and no new chunk starts once the
    reference has used that much time (the inputs left are not used).
    """
    budget = checks.budget

    def runs(program: str, batch: Sequence[tuple[Any, ...]], seed: int) -> list[Run]:
        return reference_runs(
            problem, program, batch, sandbox, timeout_s=budget, seed=seed, callee=checks.callee
        )

    first: list[Run] = []
    spent = 0.0
    step = POOL_CHUNK if spend_s is not None else max(1, len(inputs))
    for start in range(0, len(inputs), step):
        if spend_s is not None and spent > spend_s:
            break
        batch = runs(checks.program, inputs[start : start + step], 0)
        spent += sum(min(run.duration_s, budget) for run in batch)
        first += batch
    ok = [i for i, run in enumerate(first) if _usable(run, budget)]
    again = runs(checks.program, [inputs[i] for i in ok], 1)
    kept = []
    for index, run in zip(ok, again, strict=False):
        if _usable(run, budget) and plus_cases.literal(run.value) == plus_cases.literal(
            first[index].value
        ):
            kept.append((inputs[index], first[index]))
    if not checks.second or not kept:
        return kept
    # Where the two references part ways, the problem does not decide between their answers:
    # the case accepts either (and none where the second one cannot answer).
    other = runs(checks.second, [args for args, _ in kept], 0)
    agreed = []
    for (args, run), opinion in zip(kept, other, strict=True):
        if not _usable(opinion, budget):
            continue
        if not plus_cases.agrees(run.value, opinion.value):
            checks.disputed[repr(args)] = opinion.value
        agreed.append((args, run))
    return agreed


def _usable(run: Run, budget: float) -> bool:
    return (
        run.status == "ok"
        and run.duration_s <= budget
        and plus_cases.literal(run.value) is not None
    )


def _choose(
    problem: Problem,
    program: str,
    sources: list[str],
    valid: list[tuple[tuple[Any, ...], Run]],
    sandbox: Sandbox,
    count: int,
    stats: dict[str, Any],
) -> tuple[list[tuple[Any, ...]], dict[str, tuple[int, ...]]]:
    """Up to ``count`` inputs, and for each mutant-killing one the mutants it was chosen for."""
    ordered = sorted(valid, key=lambda item: size(item[0]))
    probe = _spread(ordered, _kill_inputs(valid, len(sources)))
    kills = kill_runs(
        problem,
        program,
        sources,
        [a for a, _ in probe],
        sandbox,
        alarm_s=_alarm(valid),
        spend_s=KILL_BUDGET_S,
    )
    killed_by = {repr(a): k or frozenset() for (a, _), k in zip(probe, kills, strict=False)}
    chosen: list[tuple[Any, ...]] = []
    killers: dict[str, tuple[int, ...]] = {}
    covered: set[int] = set()
    while len(chosen) < count:
        best: tuple[Any, ...] | None = None
        gain: set[int] = set()
        for args, _ in probe:
            new = set(killed_by.get(repr(args), ())) - covered
            if len(new) > len(gain) and repr(args) not in killers:
                best, gain = args, new
        if best is None:
            break
        chosen.append(best)
        killers[repr(best)] = tuple(sorted(gain))
        covered |= gain
    stats["killed_mutants"] = len(covered)
    rest = [item for item in ordered if repr(item[0]) not in killers]
    small = _by_answer(rest)
    spread = [args for args, _ in _spread(rest, max(1, count // 2))][::-1]  # largest first
    mixed = [args for pair in zip(small, spread, strict=False) for args in pair]
    mixed += small[len(spread) :]
    for args in _by_feature(rest) + mixed:
        if len(chosen) >= count:
            break
        if args not in chosen:
            chosen.append(args)
    return chosen, killers


def _kill_inputs(valid: list[tuple[tuple[Any, ...], Run]], mutant_count: int) -> int:
    """How many inputs the mutants can be tried on within ``KILL_BUDGET_S`` (a slow reference
    makes slow mutants: HumanEval/75's triple loop over primes would take minutes)."""
    mean = sum(run.duration_s for _, run in valid) / max(1, len(valid))
    affordable = KILL_BUDGET_S / max(mean * (mutant_count + 1), 1e-9)
    return int(max(MIN_KILL_INPUTS, min(MAX_KILL_INPUTS, affordable)))


def _alarm(valid: list[tuple[tuple[Any, ...], Run]]) -> float:
    """A mutant's time limit per input: 20 times the reference's slowest, 0.02 s to 0.25 s."""
    slowest = max((run.duration_s for _, run in valid), default=0.0)
    return max(0.02, min(0.25, 20 * slowest))


def _spread(items: list[Any], limit: int) -> list[Any]:
    """At most ``limit`` items, evenly spread over ``items`` (small and large alike)."""
    if len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def _features(args: tuple[Any, ...]) -> set[str]:
    """Edge features of each argument: ``0:empty list``, ``1:negative``, ``0:duplicates``..."""
    return {f"{i}:{feature}" for i, value in enumerate(args) for feature in _value_features(value)}


def _value_features(value: Any) -> set[str]:
    found: set[str] = set()
    if type(value) in (list, tuple, set, dict, str):
        if not value:
            found.add(f"empty {type(value).__name__}")
        elif len(value) == 1:
            found.add(f"single {type(value).__name__}")
        if type(value) in (list, tuple, str):
            try:
                if len(set(value)) < len(value):
                    found.add("duplicates")
            except TypeError:
                pass
        if type(value) is not str:
            items = list(value.items()) if type(value) is dict else list(value)
            for item in items[:30]:
                found |= _value_features(item)
    elif type(value) in (int, float):
        if value == 0:
            found.add("zero")
        elif value == 1:
            found.add("one")
        elif value < 0:
            found.add("negative")
    return found


def _by_feature(items: list[tuple[tuple[Any, ...], Run]]) -> list[tuple[Any, ...]]:
    """The smallest input for each edge feature (empty, zero, one, negative, duplicates, single),
    then for each combination of them."""
    out: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for args, _ in items:  # smallest first
        new = _features(args) - seen
        if new:
            seen |= new
            out.append(args)
    # Then the smallest input for each combination of edges (``modp(0, 1)``: zero and one).
    combos: set[frozenset[str]] = set()
    for args, _ in items:
        features = frozenset(_features(args))
        if len(features) >= 2 and features not in combos:
            combos.add(features)
            if args not in out:
                out.append(args)
    return out


def _by_answer(items: list[tuple[tuple[Any, ...], Run]]) -> list[tuple[Any, ...]]:
    """Inputs round-robin over (answer, shape) groups, smallest first in each: one common
    answer or one small shape (``[]`` with every threshold) does not fill the suite."""
    groups: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for args, run in items:  # smallest first
        key = (plus_cases.literal(run.value) or "", _shape(args))
        groups.setdefault(key, []).append(args)
    out: list[tuple[Any, ...]] = []
    queues = list(groups.values())
    depth = 0
    while any(depth < len(q) for q in queues):
        out += [q[depth] for q in queues if depth < len(q)]
        depth += 1
    return out


def _shape(args: tuple[Any, ...]) -> str:
    """Types and lengths of the arguments: ``list:3,float``."""
    return ",".join(
        f"{type(a).__name__}:{len(a)}" if hasattr(a, "__len__") else type(a).__name__ for a in args
    )


def _shrunk(
    problem: Problem,
    program: str,
    sources: list[str],
    chosen: list[tuple[Any, ...]],
    killers: dict[str, tuple[int, ...]],
    domains: Sequence[Domain],
    allowed: Contract,
    sandbox: Sandbox,
    valid: list[tuple[tuple[Any, ...], Run]],
) -> list[tuple[Any, ...]]:
    """Each mutant-killing input made as small as keeps the reference answering and the mutants
    it was chosen for differing (a few rounds; one sandbox batch per round)."""
    current = {repr(a): a for a in chosen if repr(a) in killers}
    if not current:
        return chosen
    targets = {key: killers[key] for key in current}
    for _ in range(SHRINK_ROUNDS):
        trials: list[tuple[str, tuple[Any, ...]]] = []
        for key, args in current.items():
            for option in smaller(args, domains):
                if allowed(option) and plus_cases.args_literal(option) is not None:
                    trials.append((key, option))
        if not trials:
            break
        trials = trials[: max(len(current), _kill_inputs(valid, 1) // 2)]
        kills = kill_runs(
            problem,
            program,
            sources,
            [t for _, t in trials],
            sandbox,
            alarm_s=_alarm(valid),
            spend_s=KILL_BUDGET_S / SHRINK_ROUNDS,
            targets=[list(targets[key]) for key, _ in trials],
        )
        improved = False
        for (key, option), killed in zip(trials, kills, strict=False):
            still = killed is not None and set(targets[key]) <= killed
            if still and size(option) < size(current[key]):
                current[key] = option
                improved = True
        if not improved:
            break
    out, seen = [], set()
    for args in chosen:
        final = current.get(repr(args), args)
        if repr(final) not in seen:
            seen.add(repr(final))
            out.append(final)
    return out
