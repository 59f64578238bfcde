"""The Coder: complete unfinished code by a search over conversations with analyzer feedback.

Each conversation ends with one completion of the user's code and the analyzers' verdicts on
it. A step picks one conversation that has not been expanded (the best score when
``meta_temperature`` is 0, else sampled with probability ∝ exp(score / meta_temperature)),
sends the analyzers' messages back to the model, and asks for ``n`` new completions. Those that
duplicate another, or repeat a completion that already failed on the way to this
conversation, are dropped; if none remain, the step asks again at a higher temperature and
``n`` (``delta_temperature``, ``max_temperature``, ``factor_n``, ``max_n``, up to
``max_retries`` times). The rest are analyzed and become new conversations. The search stops
as soon as one passes every critical analyzer, or after ``max_iter`` steps, and returns the
best completion seen. With ``backtracking`` every unexpanded conversation stays a candidate
(the search can go back to an earlier, better one); without it only the conversations the
last step made can be expanded.

``feedback_variant``: ``coworker`` keeps one growing conversation (every earlier completion
and message stays in it); ``separate`` starts each request afresh with only the user's code,
the latest completion and its messages.
"""

from __future__ import annotations

import math
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from harness.coder.analyzers import AnalyzerResult, CoderAnalyzer, Completion, make_analyzers
from harness.coder.extract import completion_from_reply
from harness.coder.prompts import DEFAULT_PROMPT, load_prompt
from harness.coder.settings import CoderSettings
from harness.records import Problem

FEEDBACK_CLOSING = (
    "Fix these problems. Answer with the corrected completion only: the code that continues "
    "the original code, in one ```python code block."
)


@dataclass
class Conversation:
    """One node of the search: its messages (ending with the model's completion, except the
    root's), the completion and the analyzers' verdicts on it."""

    index: int
    messages: list[dict[str, str]]
    completion: str | None = None
    results: dict[str, AnalyzerResult] = field(default_factory=dict)
    parent: int | None = None
    iteration: int = 0
    mistakes: tuple[str, ...] = ()  # failed completions on the path here, this one included

    @property
    def score(self) -> float:
        return sum(r.score for r in self.results.values())

    @property
    def passed(self) -> bool:
        return self.completion is not None and all(
            r.passed for r in self.results.values() if r.type == "critical"
        )

    def feedback(self) -> str:
        """The message that sends the analyzers' verdicts back to the model."""
        parts = [f"[{r.name}] {r.message}" for r in self.results.values() if r.message]
        if not parts:
            parts = ["[analyzers] The completion does not pass every check."]
        return "\n\n".join(parts) + "\n\n" + FEEDBACK_CLOSING

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "parent": self.parent,
            "iteration": self.iteration,
            "completion": self.completion,
            "score": self.score,
            "passed": self.passed,
            "results": {k: v.to_json() for k, v in self.results.items()},
            "messages": self.messages,
        }


@dataclass
class SearchRun:
    """What one :meth:`Coder.complete` did (``results.json`` of an evaluation is made of it)."""

    code: str
    conversations: list[Conversation] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    chosen: int | None = None
    log: list[str] = field(default_factory=list)
    tokens_generated: int = 0
    requests: int = 0
    time_s: float = 0.0
    analyzer_time_s: dict[str, float] = field(default_factory=dict)

    @property
    def best(self) -> Conversation | None:
        return self.conversations[self.chosen] if self.chosen is not None else None

    @property
    def completion(self) -> str:
        best = self.best
        return best.completion or "" if best is not None else ""

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {
            "completion": self.completion,
            "passed": bool(best and best.passed),
            "chosen": self.chosen,
            "messages": best.messages if best else [],
            "analyzer_results": [
                {"iteration": it["iteration"], "results": it["results"]} for it in self.iterations
            ],
            "iterations": self.iterations,
            "conversations": [c.to_json() for c in self.conversations],
            "log": "\n".join(self.log),
            "time": self.time_s,
            "tokens_generated": self.tokens_generated,
            "requests": self.requests,
            "analyzer_time_s": self.analyzer_time_s,
        }


class Coder:
    """Completes code with a model and a feedback loop over analyzers.

    ``Coder(analyzers=["mypy", "signature"], model_first="smollm2-135m", max_iter=5)``;
    every :class:`CoderSettings` field is a keyword. ``complete(code)`` returns the best
    completion; ``last_run`` keeps the whole search.
    """

    def __init__(self, settings: CoderSettings | None = None, **options: Any) -> None:
        self.settings = settings.replace(**options) if settings else CoderSettings(**options)
        s = self.settings
        self.system_prompt = load_prompt(s.system_prompt or DEFAULT_PROMPT)
        self.analyzers: list[CoderAnalyzer] = make_analyzers(s.analyzers, s.judge_model)
        self.last_run: SearchRun | None = None
        self._random = random.Random(s.seed)

    def complete(self, code: str, problem: Problem | None = None) -> str:
        """The best completion of ``code`` (``problem``: the tests of the pair, if any)."""
        return self.search(code, problem).completion

    def search(self, code: str, problem: Problem | None = None) -> SearchRun:
        s = self.settings
        start = time.perf_counter()
        run = SearchRun(code=code)
        self.last_run = run
        root = Conversation(
            0,
            [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": code},
            ],
        )
        run.conversations.append(root)
        self._log(run, f"user code: {len(code)} characters, analyzers: {', '.join(s.analyzers)}")
        queue = [root]
        for iteration in range(1, s.max_iter + 1):
            if not queue:
                self._log(run, "nothing left to expand: the search ends")
                break
            parent = self._pick(queue)
            queue.remove(parent)
            record: dict[str, Any] = {"iteration": iteration, "expanded": parent.index}
            children = self._expand(run, parent, code, problem, iteration, record)
            run.iterations.append(record)
            if not s.backtracking:
                queue.clear()  # only what this step made can be expanded next
            queue.extend(children)
            passing = [c for c in children if c.passed]
            if passing:
                run.chosen = max(passing, key=lambda c: c.score).index
                self._log(run, f"iteration {iteration}: conversation {run.chosen} passes")
                break
        if run.chosen is None:
            done = [c for c in run.conversations if c.completion is not None]
            if done:  # the best score; the earliest among equals
                run.chosen = max(done, key=lambda c: (c.score, -c.index)).index
        run.time_s = time.perf_counter() - start
        return run

    def _pick(self, queue: list[Conversation]) -> Conversation:
        """The next conversation to expand (see the module's docstring)."""
        temperature = self.settings.meta_temperature
        if temperature <= 0 or len(queue) == 1:
            return max(queue, key=lambda c: (c.score, c.index))  # newest among equals
        top = max(c.score for c in queue)
        weights = [math.exp((c.score - top) / temperature) for c in queue]
        return self._random.choices(queue, weights=weights)[0]

    def _request(self, parent: Conversation, code: str) -> list[dict[str, str]]:
        """The messages sent to the model to expand ``parent``."""
        if parent.completion is None:
            return list(parent.messages)
        feedback = {"role": "user", "content": parent.feedback()}
        if self.settings.feedback_variant == "separate":
            return [
                parent.messages[0],
                {"role": "user", "content": code},
                parent.messages[-1],  # the model's own latest answer
                feedback,
            ]
        return [*parent.messages, feedback]

    def _expand(
        self,
        run: SearchRun,
        parent: Conversation,
        code: str,
        problem: Problem | None,
        iteration: int,
        record: dict[str, Any],
    ) -> list[Conversation]:
        s = self.settings
        messages = self._request(parent, code)
        model = s.model_first if parent.completion is None else s.model_feedback
        kept = self._sample(run, parent, code, messages, model, iteration, record)
        if s.log_conversation:
            for m in messages:
                self._log(run, f"[{m['role']}]\n{m['content']}")
        candidates = [Completion(code, c, problem) for c, _ in kept]
        verdicts = self._analyze(run, candidates)
        children = [
            self._child(run, parent, messages, completion, raw, results, iteration)
            for (completion, raw), results in zip(kept, verdicts, strict=True)
        ]
        record["children"] = [c.index for c in children]
        record["results"] = [{k: v.to_json() for k, v in c.results.items()} for c in children]
        return children

    def _sample(
        self,
        run: SearchRun,
        parent: Conversation,
        code: str,
        messages: list[dict[str, str]],
        model: str,
        iteration: int,
        record: dict[str, Any],
    ) -> list[tuple[str, str]]:
        """New ``(completion, raw reply)`` pairs for ``messages``: empty answers, the parent's
        mistakes and duplicates dropped; with none left, sampled again hotter and wider."""
        from harness.coder.models import chat

        s = self.settings
        seen = {c.completion for c in run.conversations if c.completion is not None}
        temperature, n = s.temperature, s.n
        dropped = {"duplicate": 0, "repeated_mistake": 0, "empty": 0}
        attempts: list[dict[str, Any]] = []
        kept: list[tuple[str, str]] = []
        for retry in range(s.max_retries + 1):
            if retry:  # too few remained: sample hotter and more
                temperature = min(temperature + s.delta_temperature, s.max_temperature)
                n = min(math.ceil(n * s.factor_n), s.max_n)
            seed = s.seed + 1000 * iteration + 100 * retry
            (generations,) = chat(
                model,
                [messages],
                n=n,
                temperature=temperature,
                max_new_tokens=s.max_new_tokens,
                seed=seed,
            )
            run.requests += len(generations)
            run.tokens_generated += sum(g.tokens for g in generations)
            attempts.append({"temperature": temperature, "n": n})
            for g in generations:
                completion = completion_from_reply(g.completion, code)
                if not completion.strip():
                    dropped["empty"] += 1
                elif completion in parent.mistakes:
                    dropped["repeated_mistake"] += 1
                elif completion in {k for k, _ in kept} or (
                    s.require_unique_sampling and completion in seen
                ):
                    dropped["duplicate"] += 1
                else:
                    kept.append((completion, g.raw))
            if kept:
                break
            self._log(run, f"iteration {iteration}: no usable completion at T={temperature:.2f}")
        record.update(model=model, attempts=attempts, dropped=dropped)
        return kept

    def _child(
        self,
        run: SearchRun,
        parent: Conversation,
        messages: list[dict[str, str]],
        completion: str,
        raw: str,
        results: dict[str, AnalyzerResult],
        iteration: int,
    ) -> Conversation:
        """The conversation that answers ``messages`` with ``raw``, added to the run and logged."""
        child = Conversation(
            len(run.conversations),
            [*messages, {"role": "assistant", "content": raw}],
            completion=completion,
            results=results,
            parent=parent.index,
            iteration=iteration,
            mistakes=parent.mistakes + (completion,),
        )
        run.conversations.append(child)
        summary = ", ".join(
            f"{r.name} {'pass' if r.passed else 'FAIL'} ({r.score:g})" for r in results.values()
        )
        self._log(run, f"iteration {iteration}: conversation {child.index}: {summary}")
        if self.settings.log_conversation:
            self._log(run, f"[completion]\n{completion}\n[feedback]\n{child.feedback()}")
        return child

    def _analyze(
        self, run: SearchRun, candidates: list[Completion]
    ) -> list[dict[str, AnalyzerResult]]:
        """Every analyzer over the batch. Analyzers whose work is out of this process run in
        ``n_procs`` threads; those that parse here run one after another on this thread
        (CPython's ``ast`` is not safe in two threads at once)."""
        if not candidates:
            return []
        out: dict[str, list[AnalyzerResult]] = {}

        def timed(analyzer: CoderAnalyzer) -> list[AnalyzerResult]:
            start = time.perf_counter()
            results = analyzer.analyze(candidates)
            spent = time.perf_counter() - start
            run.analyzer_time_s[analyzer.name] = run.analyzer_time_s.get(analyzer.name, 0) + spent
            return results

        outside = [a for a in self.analyzers if not getattr(a, "in_process", True)]
        with ThreadPoolExecutor(max_workers=max(1, self.settings.n_procs)) as pool:
            futures = {a.name: pool.submit(timed, a) for a in outside}
            for analyzer in self.analyzers:
                if analyzer.name not in futures:
                    out[analyzer.name] = timed(analyzer)
            for name, future in futures.items():
                out[name] = future.result()
        return [{a.name: out[a.name][i] for a in self.analyzers} for i in range(len(candidates))]

    def _log(self, run: SearchRun, line: str) -> None:
        run.log.append(line)
        if self.settings.verbose:
            print(f"[coder] {line}", file=sys.stderr)
