"""What every generation backend shares: settings, results, prompts and stop handling."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from harness.completions import code_blocks, defines_name
from harness.language_hooks import LanguageHooks, hooks_for
from harness.records import Problem

# The stop sequences of the Codex paper for continuing a HumanEval prompt: a new top-level
# statement ends the function body.
COMPLETION_STOPS: tuple[str, ...] = ("\nclass ", "\ndef ", "\n#", "\nif __name__", "\nprint(")

DEFAULT_INSTRUCTION = (
    "Complete the following Python function. Answer with the whole function, including its "
    "imports, in a single ```python code block.\n\n```python\n{prompt}\n```"
)


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings of one run (recorded with every sample)."""

    n: int = 1
    temperature: float = 0.2
    top_p: float = 0.95
    max_new_tokens: int = 384
    seed: int = 0
    prompt_style: str | None = None  # None: the registry's style for the model
    batch_size: int = 8
    stop: tuple[str, ...] = ()  # extra stop sequences, on top of the registry's
    # Chat answers: end once a closed code block defines the entry point (the evaluation core
    # takes that block and nothing else, so the rest would be wasted tokens).
    stop_at_code_end: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop", tuple(self.stop))  # JSON gives lists
        checks = {
            "n": self.n >= 1,
            "temperature": self.temperature >= 0,
            "top_p": 0 < self.top_p <= 1,
            "max_new_tokens": self.max_new_tokens >= 1,
            "batch_size": self.batch_size >= 1,
            "prompt_style": self.prompt_style in (None, "chat", "completion"),
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"generation setting {name}={getattr(self, name)!r} is invalid")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop"] = list(self.stop)
        return data


@dataclass(frozen=True)
class Prompt:
    """One prompt, in both forms: chat messages and plain text (a backend uses one)."""

    key: str
    text: str
    messages: tuple[dict[str, str], ...] = ()
    style: str = "completion"
    stop: tuple[str, ...] = ()
    entry_point: str | None = None


@dataclass(frozen=True)
class Generation:
    """One sampled answer: ``completion`` is ``raw`` cut at the first stop."""

    completion: str
    raw: str
    finish_reason: str = "stop"  # stop | length | eos
    tokens: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    """A generation backend: ``n`` answers per prompt, in prompt order."""

    name: str
    default_style: str  # the registry's prompt style: chat or completion
    stop: tuple[str, ...]  # the registry's stop sequences
    instruction: str | None  # the registry's chat instruction ({prompt} is the problem's prompt)

    def generate(
        self, prompts: list[Prompt], settings: GenerationSettings
    ) -> list[list[Generation]]: ...


def build_prompt(
    problem: Problem,
    style: str,
    stop: tuple[str, ...] = (),
    instruction: str | None = None,
) -> Prompt:
    """The prompt for a problem: the code prompt to continue, or an instruction to a chat model."""
    language = hooks_for(problem)
    if language is not None:  # JavaScript, C++, Java, Rust
        return _translated_prompt(problem, language, style, stop)
    if style == "completion":
        stops = tuple(dict.fromkeys(stop or COMPLETION_STOPS))
        return Prompt(
            key=problem.task_id,
            text=problem.prompt,
            style=style,
            stop=stops,
            entry_point=problem.entry_point,
        )
    content = (instruction or DEFAULT_INSTRUCTION).format(prompt=problem.prompt.rstrip())
    messages = ({"role": "user", "content": content},)
    return Prompt(
        key=problem.task_id,
        text=content,
        messages=messages,
        style=style,
        stop=stop,
        entry_point=problem.entry_point,
    )


def _translated_prompt(
    problem: Problem, language: LanguageHooks, style: str, stop: tuple[str, ...]
) -> Prompt:
    """A translated problem's prompt: its stub, never Python's.

    Completion style continues the stub and stops at the end of the function body (the
    language's stops; the assembler closes the braces). Chat style asks in the language's own
    instruction (a model's chat instruction is written for Python). The entry point is not
    passed on: the early stop at the end of a code block recognises only Python definitions,
    so for other languages any closed code block ends the answer.
    """
    if style == "completion":
        stops = tuple(dict.fromkeys((*language.completion_stops, *stop)))
        return Prompt(key=problem.task_id, text=problem.prompt, style=style, stop=stops)
    content = language.instruction(problem.prompt)
    messages = ({"role": "user", "content": content},)
    return Prompt(key=problem.task_id, text=content, messages=messages, style=style, stop=stop)


def answer_complete(text: str, entry_point: str | None = None) -> bool:
    """Whether a markdown answer holds a closed code block with the code we evaluate.

    The block that counts is chosen as the evaluation core chooses it
    (:mod:`harness.completions`): one that defines the entry point, or any closed block when
    there is no entry point.
    """
    if "```" not in text and "~~~" not in text:
        return False
    return any(
        block.closed and (entry_point is None or defines_name(block.code, entry_point))
        for block in code_blocks(text)
    )


def code_block_end(text: str, entry_point: str | None = None) -> int | None:
    """The index just past the line that closes the block :func:`answer_complete` looks for."""
    if not answer_complete(text, entry_point):
        return None
    lines = text.split("\n")
    for count in range(1, len(lines) + 1):
        prefix = "\n".join(lines[:count])
        if answer_complete(prefix, entry_point):
            return len(prefix)
    return None


def cut_at_stop(
    text: str, stop: tuple[str, ...], code_end: bool = False, entry_point: str | None = None
) -> tuple[str, bool]:
    """``text`` cut before its first stop sequence (or after the first code block); and if cut."""
    cut: int | None = None
    for sequence in stop:
        index = text.find(sequence)
        if index >= 0 and (cut is None or index < cut):
            cut = index
    if code_end:
        end = code_block_end(text, entry_point)
        if end is not None and (cut is None or end < cut):
            cut = end
    return (text, False) if cut is None else (text[:cut], True)


def batch_seed(seed: int, keys: list[str]) -> int:
    """A seed for one batch from the run's seed and the batch's contents.

    So the same seed gives the same samples for the same batch, whatever ran before it (which
    keeps a resumed run reproducible).
    """
    payload = "\0".join([str(seed), *keys])
    digest = hashlib.sha256(payload.encode()).digest()
    return int.from_bytes(digest[:8], "little") % (2**63)
