"""Prompts for translated problems: the stub in the target language, never Python's.

Completion style continues the stub and stops at the end of the function body (the language's
``completion_stops``; the assembler closes the braces). Chat style asks for the whole function
in the language's code block. A model's own chat instruction (the model registry's) is written
for Python, so translated problems use the language's instead. The entry point is not passed
on: the backends' early stop at the end of a code block recognises only Python definitions,
and for other languages any closed code block ends the answer.
"""

from __future__ import annotations

from harness.languages.registry import language_for
from harness.models.base import Prompt
from harness.records import Problem


def build_native_prompt(problem: Problem, style: str, stop: tuple[str, ...] = ()) -> Prompt:
    language = language_for(problem)
    if style == "completion":
        stops = tuple(dict.fromkeys((*language.completion_stops, *stop)))
        return Prompt(key=problem.task_id, text=problem.prompt, style=style, stop=stops)
    content = language.instruction(problem.prompt)
    messages = ({"role": "user", "content": content},)
    return Prompt(key=problem.task_id, text=content, messages=messages, style=style, stop=stop)
