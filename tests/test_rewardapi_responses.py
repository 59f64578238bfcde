"""A trainer's decoded text as the completion the harness judges: special tokens off the ends."""

from __future__ import annotations

import pytest

from harness.rewardapi.responses import response_of, strip_special_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("    return x + y\n<|im_end|>", "    return x + y\n"),  # Qwen, SmolLM
        ("```python\ndef f():\n    pass\n```<|im_end|>", "```python\ndef f():\n    pass\n```"),
        ("code\n</s><pad><pad>", "code\n"),  # Llama 2 / Mistral end, then pads
        ("code<|eot_id|>", "code"),  # Llama 3
        ("code<end_of_turn>\n<eos>", "code"),  # Gemma
        ("code<｜end▁of▁sentence｜>", "code"),  # DeepSeek
        ("code<|endoftext|><|endoftext|>", "code"),
        ("x<|im_end|>\n<|im_start|>user\nmore", "x"),  # the model went on into a new turn
        ("<|im_start|>assistant\ncode", "code"),
        ('print("</s>")\n', 'print("</s>")\n'),  # inside the program: kept
        ("s = '<|im_end|>'\nprint(s)\n", "s = '<|im_end|>'\nprint(s)\n"),
        ("plain\n  ", "plain\n  "),  # no token: unchanged, whitespace too
    ],
)
def test_strip_special_tokens(text: str, expected: str) -> None:
    assert strip_special_tokens(text) == expected


def test_the_response_follows_the_prompt_even_when_decoding_changed_it() -> None:
    chat = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert response_of(chat + "ANS<|im_end|>", chat) == "ANS"
    # decoding put a space back differently: the last assistant turn starts the response
    assert response_of(chat + "ANS<|im_end|>", chat.replace("hi", "hi ")) == "ANS"
    assert response_of("def f():\n    return 1</s>", "def f():\n") == "    return 1"
    assert response_of("<s> def f():\n    return 1</s>", "def f():\n") == "\n    return 1"
