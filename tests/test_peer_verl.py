"""verl 0.9.1's own reward loop scoring through the project's documented reward file.

Everything verl does is its installed code (``make setup`` pins ``verl==0.9.1``, ``--no-deps``,
with the few packages its reward modules import):

- the trainer config is verl's own (``verl/trainer/config/_generated_ppo_trainer.yaml``, what
  hydra composes for ``main_ppo``), with docs/reward_api.md's overrides applied as written there
  (``key=value`` and ``++key=value``; the data files and the model are this machine's);
- the reward file is docs/reward_api.md's, written out as it is;
- ``verl.experimental.reward_loop.RewardLoopWorker`` loads the tokenizer, and verl's
  ``load_reward_manager`` loads the custom function (with its ``reward_kwargs``) and builds
  the manager ``reward.reward_manager.name`` names; the worker's ``compute_score_batch`` runs
  one ``run_single`` per sample at once on its event loop, as in training;
- the scores go into the reward tensor through the manager class's ``assemble_rm_scores``.
  What ``RewardLoopManager.compute_rm_score`` does around it (it starts Ray actors) is
  reproduced in :func:`stack_outputs`: verl 0.9.1, ``verl/experimental/reward_loop/
  reward_loop.py`` lines 356-369.

The ``remote`` manager runs its function in Ray actors: it is in the slow tier.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.rewardapi import RewardSetupError
from harness.rewardapi.neutral import DEFAULT_NEUTRAL

pytest.importorskip("verl", reason="make setup installs verl 0.9.1 (--no-deps)")
torch = pytest.importorskip("torch")
from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker  # noqa: E402
from verl.experimental.reward_loop.reward_manager.registry import REWARD_MANAGER  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CODE_SOURCES = ("codecontests", "apps", "taco", "livecodebench", "primeintellect", "codeforces")
SUM_STDIN = {"inputs": ["1 2\n", "5 7\n", None], "outputs": ["3\n", "12\n", "0\n"]}
SUM_PROGRAM = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"
ADD_CALL = {"fn_name": "add", "inputs": ["1\n2", "[1]\n[2]"], "outputs": ["3", "[1, 2]"]}
ADD_FUNCTION = "```python\ndef add(a, b):\n    return a + b\n```"
ADD_ASSERTS = {"fn_name": "add", "assert_case": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]}
OCCURRENCES = {  # LiveCodeBench's call-based form (verl's sandbox_fusion test takes it from there)
    "fn_name": "occurrencesOfElement",
    "inputs": ["[1, 3, 1, 7]\n[1, 3, 2, 4]\n1", "[1, 2, 3]\n[10]\n5"],
    "outputs": ["[0, -1, 2, -1]", "[-1]"],
}
LEETCODE = (
    "class Solution:\n"
    "    def occurrencesOfElement(self, nums: List[int], queries: List[int], x: int) -> List[int]:\n"
    "        where = [i for i, n in enumerate(nums) if n == x]\n"
    "        return [where[k - 1] if k <= len(where) else -1 for k in queries]\n"
)


def documented() -> tuple[str, list[str]]:
    """docs/reward_api.md's verl reward file and its ``main_ppo`` overrides."""
    text = (ROOT / "docs" / "reward_api.md").read_text()
    section = text[text.index("## verl\n") :]
    python = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    bash = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert python and bash
    words = shlex.split(bash.group(1).replace("\\\n", " "))
    assert words[:3] == ["python", "-m", "verl.trainer.main_ppo"]
    return python.group(1), words[3:]


def verl_config(tmp_path: Path, **changes: str) -> Any:
    """verl's trainer config with the documented overrides, the reward file written where
    ``reward.custom_reward_function.path`` says (relative: the working directory)."""
    import verl

    from harness.models.loading import resolve_folder

    reward_file, overrides = documented()
    config = OmegaConf.load(
        Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    )
    tokenizer_folder, _ = resolve_folder("smollm2-135m", with_model=False)
    dotlist = []
    for override in overrides:
        key, _, value = override.lstrip("+").partition("=")
        if not override.startswith("++"):  # hydra refuses a plain override of a missing key
            assert OmegaConf.select(config, key, default=KeyError) is not KeyError, key
        dotlist.append(f"{key}={value}")
    # this machine's model (its tokenizer is all the reward loop loads), and the test's changes
    dotlist.append(f"actor_rollout_ref.model.path={tokenizer_folder}")
    dotlist += [f"{k}={v}" for k, v in changes.items()]
    config = OmegaConf.merge(config, OmegaConf.from_dotlist(dotlist))
    path = tmp_path / config.reward.custom_reward_function.path
    path.write_text(reward_file)
    return config


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the documented reward file path is relative
    return tmp_path


def data_proto(tokenizer, rows: list[tuple[Any, Any, str]]) -> DataProto:
    """What the rollout hands the reward loop: prompts, responses (each ending on the end
    token, then pads), the attention mask, and the parquet rows' fields."""
    responses = [
        tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        for _, _, text in rows
    ]
    width = max(len(r) for r in responses) + 2
    pad = tokenizer.pad_token_id
    prompt = [pad, pad, 1, 2]
    mask = [[0, 0, 1, 1] + [1] * len(r) + [0] * (width - len(r)) for r in responses]
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([prompt] * len(rows)),
            "responses": torch.tensor([r + [pad] * (width - len(r)) for r in responses]),
            "attention_mask": torch.tensor(mask),
        },
        non_tensors={
            "data_source": np.array([source for source, _, _ in rows], dtype=object),
            "reward_model": np.array(
                [{"ground_truth": truth, "style": "rule"} for _, truth, _ in rows], dtype=object
            ),
            "extra_info": np.array([{"index": i} for i in range(len(rows))], dtype=object),
        },
    )


def stack_outputs(worker: RewardLoopWorker, data: DataProto, outputs: list[dict]):
    """verl 0.9.1, verl/experimental/reward_loop/reward_loop.py lines 356-369
    (RewardLoopManager.compute_rm_score): the scores into rm_scores, the extra infos stacked."""
    scores = [item["reward_score"] for item in outputs]
    rm_scores = type(worker.reward_manager).assemble_rm_scores(data, scores)
    reward_extra_infos = [output.get("reward_extra_info", {}) for output in outputs]
    reward_extra_keys = list(reward_extra_infos[0].keys())
    non_tensor_batch = {}
    for key in reward_extra_keys:
        non_tensor_batch[key] = np.array([info[key] for info in reward_extra_infos])
    return rm_scores, non_tensor_batch


def score(worker: RewardLoopWorker, rows: list[tuple[Any, Any, str]]):
    data = data_proto(worker.input_tokenizer, rows)
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(data))
    rm_scores, extra = stack_outputs(worker, data, outputs)
    assert rm_scores.sum(dim=1).tolist() == pytest.approx([o["reward_score"] for o in outputs])
    return [o["reward_score"] for o in outputs], extra


def test_the_documented_config_is_verls_current_keys(in_tmp: Path) -> None:
    reward_file, overrides = documented()
    keys = [o.lstrip("+").partition("=")[0] for o in overrides]
    assert "reward_model.reward_manager" not in keys and "custom_reward_function.path" not in keys
    config = verl_config(in_tmp)
    assert config.reward.reward_manager.name in REWARD_MANAGER  # verl's own check
    assert config.reward.custom_reward_function.name == "compute_score"
    assert "compute_score" in reward_file and "compute_score_batch" not in reward_file


@pytest.mark.parametrize("manager", sorted(set(REWARD_MANAGER) - {"remote"}))
def test_every_reward_loop_manager_scores_through_the_documented_function(
    in_tmp: Path, manager: str
) -> None:
    worker = RewardLoopWorker(verl_config(in_tmp, **{"reward.reward_manager.name": manager}))
    scores, extra = score(
        worker,
        [
            ("humaneval", "HumanEval/53", "    return x + y\n"),
            ("humaneval", "HumanEval/53", "    return x - y\n"),
            (
                "openai_humaneval",
                "HumanEval/53",
                "```python\ndef add(x, y):\n    return x + y\n```",
            ),
        ],
    )
    assert scores == [1.0, 0.0, 1.0]
    assert extra["passed"].tolist() == [1.0, 0.0, 1.0]
    assert extra["unscored"].tolist() == [0.0, 0.0, 0.0]


def test_verls_code_data_is_judged_as_it_is_for_every_data_source(in_tmp: Path) -> None:
    worker = RewardLoopWorker(verl_config(in_tmp))
    rows: list[tuple[Any, Any, str]] = []
    for source in CODE_SOURCES:
        rows += [
            (source, json.dumps(SUM_STDIN), SUM_PROGRAM),  # stdin/stdout, as JSON text
            (source, ADD_CALL, ADD_FUNCTION),  # call-based, fn_name, one JSON value a line
            (source, ADD_ASSERTS, ADD_FUNCTION),  # assert-based (KodCode)
        ]
    wrong = [
        ("codecontests", SUM_STDIN, "print(0)\n"),
        ("primeintellect", ADD_CALL, "def add(a, b):\n    return a - b\n"),
        ("taco", ADD_ASSERTS, "def add(a, b):\n    return 3\n"),
    ]
    right = [
        ("livecodebench", OCCURRENCES, LEETCODE),  # LeetCode's class Solution
        ("apps", {"fn_name": "add", "inputs": [[1, 2]], "outputs": [[3]]}, ADD_FUNCTION),  # APPS
        ("taco", {"inputs": [["1 2"]], "outputs": [["3"]]}, SUM_PROGRAM),  # lists of lines
        ("primeintellect", ["assert add(1, 2) == 3", "assert add(2, 2) == 4"], ADD_FUNCTION),
        ("codeforces", json.dumps(["assert add(1, 2) == 3"]), ADD_FUNCTION),  # bare assert lines
    ]
    scores, extra = score(worker, rows + wrong + right)
    assert scores == [1.0] * len(rows) + [0.0] * len(wrong) + [1.0] * len(right)
    assert extra["unscored"].sum() == 0


def test_humaneval_and_mbpp_names_map_to_the_suites(in_tmp: Path) -> None:
    worker = RewardLoopWorker(verl_config(in_tmp))
    mbpp_11 = (
        "def remove_Occ(s, ch):\n    return s.replace(ch, '', 1)[::-1].replace(ch, '', 1)[::-1]\n"
    )
    scores, _ = score(
        worker,
        [
            ("openai/openai_humaneval", "HumanEval/53", "    return x + y\n"),
            ("openai_humaneval", 53, "    return x + y\n"),
            ("evalplus/humanevalplus", "HumanEval/53", "    return x + y\n"),
            ("mbpp", 11, mbpp_11),
            ("google-research-datasets/mbpp", "Mbpp/11", mbpp_11),
        ],
    )
    assert scores == [1.0] * 5


def test_rows_that_cannot_be_judged_are_masked_and_logged_never_raised(
    in_tmp: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.rewardapi.verl as adapter

    caplog.set_level("DEBUG", logger="harness.rewardapi.verl")
    monkeypatch.setattr(adapter, "_scorers", {})  # a fresh process: only this test's judgments
    worker = RewardLoopWorker(verl_config(in_tmp))
    bad = [
        ("humaneval", None, "x"),  # no ground truth
        ("no-such-suite", "X/1", "x"),
        ("humaneval", "HumanEval/9999", "x"),
        ("codecontests", '{"inputs": ["1"', "x"),  # code data that is not JSON
        ("apps", {"inputs": ["1\n"], "outputs": []}, "x"),
    ]
    good = [
        ("humaneval", "HumanEval/53", "    return x + y\n"),
        ("humaneval", "HumanEval/53", "    return x - y\n"),
        ("humaneval", "HumanEval/53", "    return x + y\n"),
    ]
    # verl scores each sample on its own, all at once: judged first, so the running mean the
    # unjudged rows fall back on is known (none of them names a judged problem)
    scores, extra = score(worker, good)
    assert scores == [1.0, 0.0, 1.0]
    scores, extra = score(worker, bad)
    assert extra["unscored"].tolist() == [1.0] * len(bad)
    assert scores == pytest.approx([2 / 3] * len(bad))  # neutral: the running mean, never 0
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for reason in (
        "ground_truth: missing",
        "data_source 'no-such-suite' names no suite",
        "HumanEval/9999",
        "not valid JSON",
        "ground_truth.outputs",
    ):
        assert reason in logged


def test_a_row_alone_with_nothing_judged_gets_the_documented_neutral(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.rewardapi.verl as adapter

    monkeypatch.setattr(adapter, "_scorers", {})  # a fresh process: nothing judged yet
    worker = RewardLoopWorker(verl_config(in_tmp))
    scores, extra = score(worker, [("no-suite-yet", "X/1", "x")])
    assert extra["unscored"].tolist() == [1.0]
    assert scores == [DEFAULT_NEUTRAL] and DEFAULT_NEUTRAL != 0.0


def test_the_batched_function_under_the_reward_loop_says_what_to_set(in_tmp: Path) -> None:
    config = verl_config(in_tmp, **{"reward.custom_reward_function.name": "compute_score_batch"})
    (in_tmp / config.reward.custom_reward_function.path).write_text(
        "from harness.rewardapi.verl import compute_score_batch  # noqa: F401\n"
    )
    worker = RewardLoopWorker(config)
    with pytest.raises(
        RewardSetupError, match=r"reward\.custom_reward_function\.name=compute_score$"
    ):
        score(worker, [("humaneval", "HumanEval/53", "    return x + y\n")])


def test_verls_older_batch_manager_takes_the_batched_form(in_tmp: Path) -> None:
    from verl.workers.reward_manager import get_reward_manager_cls

    from harness.models import load_tokenizer
    from harness.rewardapi.verl import compute_score_batch

    tokenizer = load_tokenizer("smollm2-135m")
    manager = get_reward_manager_cls("batch")(
        tokenizer, 0, compute_score_batch, reward="binary", workers=2
    )
    data = data_proto(
        tokenizer,
        [
            ("humaneval", "HumanEval/53", "    return x + y\n"),
            ("humaneval", "HumanEval/9999", "x"),
            ("codecontests", SUM_STDIN, SUM_PROGRAM),
        ],
    )
    result = manager(data, return_dict=True)
    assert result["reward_tensor"].sum(dim=1).tolist()[0::2] == [1.0, 1.0]
    assert result["reward_extra_info"]["unscored"] == [0.0, 1.0, 0.0]


@pytest.mark.slow
def test_the_remote_manager_scores_in_ray_actors(in_tmp: Path) -> None:
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={
            "env_vars": {
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                "CODEEVAL_DATA_DIR": os.environ.get("CODEEVAL_DATA_DIR", ""),
            }
        },
    )
    try:
        config = verl_config(
            in_tmp, **{"reward.reward_manager.name": "remote", "reward.num_workers": "1"}
        )
        worker = RewardLoopWorker(config)
        scores, extra = score(
            worker,
            [
                ("humaneval", "HumanEval/53", "    return x + y\n"),
                ("humaneval", "HumanEval/9999", "x"),
                ("codecontests", SUM_STDIN, SUM_PROGRAM),
            ],
        )
    finally:
        ray.shutdown()
    assert scores[0::2] == [1.0, 1.0]
    assert extra["unscored"].tolist() == [0.0, 1.0, 0.0]
