"""Code completion with an analyzer feedback loop (after LLMcoder), and its evaluation.

``Coder(...).complete(code)`` completes unfinished code: a model proposes completions,
analyzers (mypy, signature, hallucination, the pair's tests in the sandbox, an optional LLM
judge) check them, and their messages go back to the model in a search over conversations
(:mod:`harness.coder.search`). ``codeeval coder`` runs it from the command line, builds
offline pairs from HumanEval and MBPP (:mod:`harness.coder.pairs`), evaluates configs over
them, computes metrics (:mod:`harness.coder.metrics`) and writes a report.
"""

from harness.coder.search import Coder, Conversation, SearchRun
from harness.coder.settings import CoderSettings

__all__ = ["Coder", "CoderSettings", "Conversation", "SearchRun"]
