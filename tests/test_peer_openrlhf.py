"""OpenRLHF 0.11.2's own remote-reward path against a real ``codeeval serve`` on loopback.

Everything OpenRLHF does is its installed code (``make setup`` pins ``openrlhf==0.11.2``):

- ``openrlhf/cli/train_ppo_ray.py``: its argument parser, built by running the statements of
  its ``__main__`` block as written (the module cannot be imported on a CPU machine: it
  imports the trainer, which needs flash_attn), parses the command of docs/service.md as it
  is written there;
- ``openrlhf.datasets.prompts_dataset.preprocess_data`` turns a dataset row into the prompt
  (through the tokenizer's chat template) and the label;
- ``openrlhf.utils.agent.SingleTurnAgentExecutor`` tokenizes the prompt, decodes prompt +
  response with ``skip_special_tokens=False``, posts the request with aiohttp, retries, and
  reads the answer;
- ``SamplesGenerator._process_response_into_experience`` (``openrlhf/trainer/ppo_utils/
  samples_generator.py``) turns the answer into the reward tensor and the logged infos. It
  imports vLLM; where vLLM is not installed the lines it runs on the reward (0.11.2, lines
  250-251 and 283-305) are reproduced in :func:`reproduced_experience`.

The one stand-in is vLLM's generation (:class:`OneResponse`): it answers with the token ids of
a given response followed by the end token, as vLLM does when a sequence stops on it.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import copy
import importlib.util
import json
import os
import re
import shlex
import sys
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from harness.cli import build_parser
from harness.rewardapi.neutral import DEFAULT_NEUTRAL
from harness.service.server import ServeSettings, serve_in_thread, settings_from_args

pytest.importorskip("openrlhf", reason="make setup installs OpenRLHF 0.11.2 (--no-deps)")
torch = pytest.importorskip("torch")
from openrlhf.datasets.prompts_dataset import preprocess_data  # noqa: E402
from openrlhf.utils.agent import SingleTurnAgentExecutor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RIGHT_BODY = "    return x + y\n"
WRONG_BODY = "    return x - y\n"
RIGHT_MARKDOWN = "Here it is:\n```python\ndef add(x: int, y: int):\n    return x + y\n```"
BROKEN_PROBLEM = {  # its reference fails its own tests: a data error, never judged
    "problem": {
        "prompt": "",
        "tests": "assert add(1, 2) == 3\n",
        "entry_point": "add",
        "reference": "def add(a, b):\n    return a - b\n",
    }
}


def documented_commands() -> tuple[list[str], list[str]]:
    """docs/service.md's OpenRLHF block: the ``codeeval serve`` and the trainer's arguments."""
    text = (ROOT / "docs" / "service.md").read_text()
    section = text[text.index("## OpenRLHF: `--reward.remote_url`") :]
    block = section[
        section.index("```bash\n") + 8 : section.index("```", section.index("```bash") + 7)
    ]
    commands = [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line]
    serve = next(c for c in commands if c[:2] == ["codeeval", "serve"])
    train = next(c for c in commands if c[:3] == ["python", "-m", "openrlhf.cli.train_ppo_ray"])
    return [a for a in serve[1:] if a != "&"], train[3:]


def openrlhf_args(argv: list[str]) -> Any:
    """What OpenRLHF's ``train_ppo_ray`` makes of ``argv``: its ``__main__`` block run as
    written (its parser, ``hierarchize``, every check and setting it derives), all but the
    last statement, ``train(args)``."""
    source = Path(importlib.util.find_spec("openrlhf.cli.train_ppo_ray").origin).read_text()
    main = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
    )
    assert ast.unparse(main.body[-1]) == "train(args)"
    namespace: dict[str, Any] = {"argparse": argparse, "os": os, "datetime": datetime}
    code = compile(ast.Module(body=main.body[:-1], type_ignores=[]), "train_ppo_ray.py", "exec")
    saved = sys.argv
    sys.argv = ["train_ppo_ray.py", *argv]
    try:
        exec(code, namespace)
    finally:
        sys.argv = saved
    return namespace["args"]


@pytest.fixture(scope="module")
def trainer_args():
    _, train = documented_commands()
    return openrlhf_args(train)


@pytest.fixture(scope="module")
def tokenizer():
    from harness.models import load_tokenizer

    return load_tokenizer("smollm2-135m")  # the offline model's tokenizer and chat template


@pytest.fixture(scope="module")
def served():
    serve, _ = documented_commands()
    settings = settings_from_args(build_parser().parse_args(serve))
    assert settings.reward == "binary"
    settings = ServeSettings(**{**settings.__dict__, "workers": 2, "port": 0})  # 2 cores here
    with serve_in_thread(settings) as (url, state):
        yield url, state


@pytest.fixture(scope="module")
def humaneval_53() -> str:
    from suites import load_suite

    return next(p for p in load_suite("humaneval") if p.task_id == "HumanEval/53").prompt


class OneResponse:
    """Stands in for vLLM's engine: the response's tokens, then the end token (vLLM keeps the
    token a sequence stopped on), then ``pads`` pad tokens."""

    def __init__(self, token_ids: list[int]) -> None:
        self.token_ids = token_ids

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        output = SimpleNamespace(
            token_ids=list(self.token_ids), text="", finish_reason="stop", logprobs=None
        )
        return SimpleNamespace(outputs=[output])


def sampling_params() -> Any:
    try:
        from vllm import SamplingParams

        return SamplingParams(max_tokens=None, skip_special_tokens=False)
    except ImportError:  # vLLM is not installed here: the two fields the executor reads
        return SimpleNamespace(max_tokens=None, logprobs=None)


def reproduced_experience(response: dict[str, Any]) -> SimpleNamespace:
    """openrlhf 0.11.2, trainer/ppo_utils/samples_generator.py, _process_response_into_experience,
    lines 250-251 and 283-305: what it makes of the reward, the score and the extra logs."""
    reward_val = response.get("reward", None)
    score_val = response.get("scores", None)
    info = {}
    if reward_val is not None:
        info["reward"] = torch.tensor([reward_val])
    if score_val is not None:
        info["score"] = torch.tensor([score_val])
    extra_logs = response.get("extra_logs", {})
    for key, value in extra_logs.items():
        if isinstance(value, torch.Tensor):
            value = value.flatten()[0].item()
        info[key] = torch.tensor([value])
    return SimpleNamespace(
        rewards=torch.tensor([reward_val]) if reward_val is not None else None,
        scores=torch.tensor([score_val]) if score_val is not None else None,
        info=info,
    )


def experience_of(response: dict[str, Any]) -> Any:
    try:
        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
    except ImportError:  # vLLM (or Ray) missing here
        return reproduced_experience(response)
    return SamplesGenerator._process_response_into_experience(None, response, max_len=2048)


def rollout(url: str, args, tokenizer, row: dict, response: str, pads: int = 0) -> dict:
    """One sample through OpenRLHF's agent path: the row as OpenRLHF reads it, the response
    generated, the reward fetched from ``url`` (the documented URL on this server's port)."""
    prompt, label = preprocess_data(
        row,
        args.data.input_template,
        args.data.input_key,
        args.data.label_key,
        tokenizer.apply_chat_template if args.data.apply_chat_template else None,
    )
    ids = tokenizer(text=response, add_special_tokens=False)["input_ids"]
    ids += [tokenizer.eos_token_id] + [tokenizer.pad_token_id] * pads
    endpoints = [re.sub(r"^http://[^/]+", url, u) for u in args.reward.remote_url]
    executor = SingleTurnAgentExecutor(endpoints)
    return asyncio.run(
        executor.execute(prompt, label, sampling_params(), 2048, tokenizer, OneResponse(ids))
    )


def test_the_documented_command_is_openrlhfs_current_flags(trainer_args) -> None:
    assert trainer_args.reward.remote_url == ["http://127.0.0.1:8765/get_reward?suite=humaneval"]
    assert trainer_args.data.label_key == "task_id" and trainer_args.data.input_key == "prompt"
    assert trainer_args.data.apply_chat_template
    _, train = documented_commands()
    for old, new in (
        ("--remote_rm_url", "--reward.remote_url"),
        ("--label_key", "--data.label_key"),
    ):
        with pytest.raises(SystemExit):  # the flags the docs named before: OpenRLHF refuses them
            openrlhf_args([old if a == new else a for a in train])


@pytest.mark.parametrize("chat", [False, True], ids=["completion-prompt", "chat-template"])
def test_answers_that_end_on_the_end_token_score_as_they_are(
    served, trainer_args, tokenizer, humaneval_53, chat: bool
) -> None:
    url, _ = served
    args = copy.deepcopy(trainer_args)
    args.data.apply_chat_template = chat  # the documented command has it on
    row = {"prompt": humaneval_53, "task_id": "HumanEval/53"}
    right = RIGHT_MARKDOWN if chat else RIGHT_BODY
    wrong = right.replace("x + y", "x - y")
    outputs = [
        rollout(url, args, tokenizer, row, right),
        rollout(url, args, tokenizer, row, wrong),
        rollout(url, args, tokenizer, row, right, pads=3),  # pad tokens after the end token
    ]
    # the query OpenRLHF sent did end on the end token
    assert all(tokenizer.eos_token in tokenizer.decode(o["observation_tokens"]) for o in outputs)
    assert [o["reward"] for o in outputs] == [[1.0], [0.0], [1.0]]
    experiences = [experience_of(o) for o in outputs]
    assert [float(e.rewards.sum()) for e in experiences] == [1.0, 0.0, 1.0]
    assert [float(e.info["unscored"].sum()) for e in experiences] == [0.0, 0.0, 0.0]


def test_an_unknown_task_id_is_masked_at_once_never_retried(
    served, trainer_args, tokenizer, humaneval_53, capsys
) -> None:
    url, _ = served
    row = {"prompt": humaneval_53, "task_id": "HumanEval/999"}
    # Untimed first: OpenRLHF's first rollout in a process imports and builds what it needs
    # (2.3 s when this test ran first in its worker). A retry would slow every rollout.
    rollout(url, trainer_args, tokenizer, row, RIGHT_MARKDOWN)
    capsys.readouterr()
    started = time.monotonic()
    output = rollout(url, trainer_args, tokenizer, row, RIGHT_MARKDOWN)
    elapsed = time.monotonic() - started
    logged = capsys.readouterr().out
    assert "Failed to fetch reward" not in logged and "Request error" not in logged
    assert elapsed < 1.0  # no retries (OpenRLHF waits a second before each)
    assert output["reward"] is not None and output["extra_logs"]["unscored"] == [1.0]
    experience = experience_of(output)
    assert float(experience.info["unscored"].sum()) == 1.0  # OpenRLHF's logs tell it apart
    assert float(experience.rewards.sum()) != 0.0


def test_an_unjudged_sample_alone_gets_the_documented_neutral_never_0(
    trainer_args, tokenizer, humaneval_53
) -> None:
    with serve_in_thread(ServeSettings(workers=0)) as (url, _):  # nothing judged here yet
        broken = {"prompt": "Write add.", "task_id": json.dumps(BROKEN_PROBLEM)}
        first = rollout(url, trainer_args, tokenizer, broken, RIGHT_MARKDOWN)
        judged = rollout(
            url,
            trainer_args,
            tokenizer,
            {"prompt": humaneval_53, "task_id": "HumanEval/53"},
            RIGHT_MARKDOWN,
        )
        unknown = rollout(
            url,
            trainer_args,
            tokenizer,
            {"prompt": humaneval_53, "task_id": "HumanEval/999"},
            RIGHT_MARKDOWN,
        )
    assert first["reward"] == [DEFAULT_NEUTRAL] and DEFAULT_NEUTRAL != 0.0
    assert first["extra_logs"]["unscored"] == [1.0]
    assert judged["reward"] == [1.0] and judged["extra_logs"]["unscored"] == [0.0]
    assert unknown["reward"] == [1.0]  # the mean of what this server has judged
    assert unknown["extra_logs"]["unscored"] == [1.0]


def test_openrlhf_misconfigured_gets_one_clear_message(
    served, trainer_args, tokenizer, caplog
) -> None:
    url, _ = served
    caplog.set_level("WARNING", logger="harness.service.app")
    body = {"query": ["p    return 1\n"], "prompts": ["p"], "labels": ["HumanEval/53"]}
    wrong_suite = httpx.post(f"{url}/get_reward?suite=nope", json=body, timeout=60)
    assert (wrong_suite.status_code, wrong_suite.json()["field"]) == (400, "suite")
    assert "set ?suite=" in wrong_suite.json()["message"]
    # --data.label_key not set: OpenRLHF's preprocess_data gives an empty label
    _, label = preprocess_data({"prompt": "p"}, None, "prompt", None, None)
    empty = httpx.post(f"{url}/get_reward", json={**body, "labels": [label]}, timeout=60)
    assert (empty.status_code, empty.json()["field"]) == (422, "labels[0]")
    assert "--data.label_key" in empty.json()["message"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("set ?suite=" in m for m in messages) and any("label_key" in m for m in messages)
