"""score (informative, optional): an LLM judge rates the completion from 0 to 10.

The judge is any model backend (:func:`harness.models.make_backend`: a registry name or
``openai:URL#model``). Its rating only ranks conversations (score = rating / 10 - 1); it never
decides whether the search stops. A reply without a number is reported, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.coder.analyzers.base import AnalyzerResult, AnalyzerType, Completion

JUDGE_PROMPT = (
    "Rate how well the completion continues the code, from 0 (wrong or useless) to 10 (correct, "
    "idiomatic, complete). Answer with the number first, then one sentence.\n\n"
    "Code:\n```python\n{code}\n```\n\nCompletion:\n```python\n{completion}\n```"
)
_NUMBER = re.compile(r"\b(10|[0-9])(?:\.\d+)?\b")


class ScoreAnalyzer:
    name = "score"
    type: AnalyzerType = "informative"
    in_process = False  # the work is the judge model's

    def __init__(self, model: str | None) -> None:
        if not model:
            raise ValueError("the score analyzer needs a judge model (judge_model in the config)")
        self.model = model

    def analyze(self, candidates: Sequence[Completion]) -> list[AnalyzerResult]:
        from harness.coder.models import chat

        replies = chat(
            self.model,
            [
                [
                    {
                        "role": "user",
                        "content": JUDGE_PROMPT.format(code=c.code, completion=c.completion),
                    }
                ]
                for c in candidates
            ],
            temperature=0.0,
            max_new_tokens=48,
        )
        results = []
        for (reply,) in replies:
            found = _NUMBER.search(reply.raw)
            if found is None:
                results.append(
                    AnalyzerResult(
                        self.name, self.type, 0.0, True, "", {"unrated": reply.raw[:200]}
                    )
                )
                continue
            rating = float(found.group(1))
            results.append(
                AnalyzerResult(
                    self.name,
                    self.type,
                    rating / 10 - 1,
                    True,
                    f"A reviewer rated the completion {rating:g}/10.",
                    {"rating": rating},
                )
            )
        return results
