"""A trainer's decoded text as the completion the harness judges.

OpenRLHF's agent path decodes prompt + response with ``skip_special_tokens=False``, and vLLM
keeps the token that ended generation as the last output token, so the text ends in the
model's end token (``<|im_end|>``, ``<|eot_id|>``, ``</s>`` ...), sometimes followed by pad
tokens. A program (or a markdown block: its closing fence would carry the token) that ends so
is not the answer the model gave. :func:`strip_special_tokens` takes such tokens off both ends,
and cuts the text where the model went on into a new turn; :func:`response_of` finds the
response in prompt + response. What is left is then read as every completion is
(:mod:`harness.completions`: markdown blocks, whole solutions, continuations).

A token is stripped only at the ends (or before a new turn), never inside the text, so a
program that prints ``"</s>"`` keeps it.
"""

from __future__ import annotations

import re

# Ends of a turn or of the text, and pads, of the common chat models (Qwen, Llama 3, Mistral,
# Gemma, Phi, DeepSeek, SmolLM, GPT-NeoX, Command R, gpt-oss).
END_TOKENS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<|return|>",
    "</s>",
    "<eos>",
    "<end_of_turn>",
    "<|END_OF_TURN_TOKEN|>",
    "<|EOT|>",
    "<｜end▁of▁sentence｜>",
    "[EOS]",
    "<pad>",
    "<|pad|>",
    "<|padding|>",
    "[PAD]",
    "<unk>",
    "<｜▁pad▁｜>",
)
# Starts of a turn: text after an end token and one of these is a turn the model made up.
TURN_STARTS = (
    "<|im_start|>",
    "<|start_header_id|>",
    "<start_of_turn>",
    "<|start|>",
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<｜User｜>",
    "<｜Assistant｜>",
    "[INST]",
    "<s>",
    "<bos>",
    "<|begin_of_text|>",
)
# Any ``<|name|>`` token (vocabularies add their own: <|fim_pad|>, <|endofturn|> ...).
_GENERIC = r"<\|[A-Za-z0-9_.:\-]{1,40}\|>|<｜[^｜\s]{1,40}｜>"
_TOKEN = "|".join([*(re.escape(t) for t in (*END_TOKENS, *TURN_STARTS)), _GENERIC])
_TRAILING = re.compile(rf"(?:{_TOKEN})(?:\s|{_TOKEN})*\Z")
_LEADING = re.compile(
    rf"\A(?:(?:{_TOKEN})(?:(?:assistant|model)[ \t]*(?:<\|end_header_id\|>)?)?\s*)+"
)
_NEW_TURN = re.compile(
    "(?:"
    + "|".join(re.escape(t) for t in END_TOKENS)
    + r")\s*(?:"
    + "|".join(re.escape(t) for t in TURN_STARTS)
    + ")"
)
# Where an assistant's answer starts in a chat-template text (the last one is the response).
_ASSISTANT_STARTS = re.compile(
    r"<\|im_start\|>assistant\n|<\|start_header_id\|>assistant<\|end_header_id\|>\n*"
    r"|<start_of_turn>model\n|<\|assistant\|>\n?|<｜Assistant｜>|\[/INST\]"
)


def strip_special_tokens(text: str) -> str:
    """``text`` without special tokens at its ends, cut where the model started a new turn.
    Text without them comes back unchanged (its own whitespace too)."""
    cut = _NEW_TURN.search(text)
    if cut is not None:
        text = text[: cut.start()]
    text = _TRAILING.sub("", text)
    return _LEADING.sub("", text, count=1)


def response_of(query: str, prompt: str) -> str:
    """The response in ``query`` (prompt + response, as OpenRLHF decodes it), its special
    tokens stripped. ``query`` normally starts with ``prompt``; when decoding changed the
    prompt's text (spaces, a BOS token), the response starts after the last assistant turn of
    a chat template, else after the prompt's text, else ``query`` is taken whole."""
    if query.startswith(prompt):
        return strip_special_tokens(query[len(prompt) :])
    starts = list(_ASSISTANT_STARTS.finditer(query))
    if starts and _ASSISTANT_STARTS.search(prompt):
        return strip_special_tokens(query[starts[-1].end() :])
    core = prompt.strip()
    if core and core in query:
        return strip_special_tokens(query[query.index(core) + len(core) :])
    return strip_special_tokens(query)
