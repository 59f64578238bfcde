"""trainers.dqn: targets, losses and decoding against hand-computed values, properties of the
targets, a toy problem the composed pieces must solve, the config's refusals, and the offline
data (results.jsonl and the real run history, migrated from schema version 1)."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.history import SCHEMA_VERSION, History
from suites import load_suite
from trainers.common.config import ConfigError, load_config
from trainers.common.sections import missing_help
from trainers.dqn import core
from trainers.dqn.config import DQNConfig
from trainers.dqn.data import DataError, from_history, from_results

REPO = Path(__file__).resolve().parents[1]
pytest_plugins = ["pytester"]
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny tensors: threads only contend


def q_tensor(values: list) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


# -- targets --------------------------------------------------------------------------------------


def test_double_q_targets_hand_computed() -> None:
    # H=2 heads, B=2 sequences, T=3 positions, V=3 tokens; gamma 0.5.
    # Sequence 0 (3 tokens, reward 2): the next state of t=0 is position 1, of t=1 position 2.
    #   position 1: online means [0.5, 2, 2.5] -> a* = 2; target twins value it 4 and 6 -> 4
    #     (the target's own best, 20, and the online values are not what is bootstrapped)
    #   position 2: online means [0, 4, 1] -> a* = 1; target twins -1 and 3 -> -1
    #   y = [0 + 0.5 * 4, 0 + 0.5 * -1, 2 (last token: the reward, no bootstrap)]
    # Sequence 1 (2 tokens, reward -1, one pad): all Q zero -> y = [0, -1, 0 (pad)]
    zeros = [[0, 0, 0]] * 3
    online = q_tensor(
        [
            [[[9, 9, 9], [1, 3, 0], [0, 7, 1]], zeros],
            [[[9, 9, 9], [0, 1, 5], [0, 1, 1]], zeros],
        ]
    )
    target = q_tensor(
        [
            [[[9, 9, 9], [10, 20, 4], [9, -1, 9]], zeros],
            [[[9, 9, 9], [0, 0, 6], [9, 3, 9]], zeros],
        ]
    )
    mask = q_tensor([[1, 1, 1], [1, 1, 0]])
    y = core.double_q_targets(q_tensor([2.0, -1.0]), mask, online, target, gamma=0.5)
    assert y.tolist() == [[2.0, -0.5, 2.0], [0.0, -1.0, 0.0]]


def test_terminal_rewards_and_done_flags() -> None:
    mask = q_tensor([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    assert core.terminal_rewards(q_tensor([3, -2, 5]), mask).tolist() == [
        [0, 3, 0, 0],
        [0, 0, 0, -2],
        [0, 0, 0, 0],  # an empty row takes no reward
    ]
    assert core.done_flags(mask).tolist() == [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]


@st.composite
def batches(draw: st.DrawFn) -> tuple[torch.Tensor, ...]:
    heads, b, t, v = draw(st.integers(2, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 5)), 4
    lengths = draw(st.lists(st.integers(1, t), min_size=b, max_size=b))
    mask = torch.tensor([[1.0] * n + [0.0] * (t - n) for n in lengths])
    floats = st.floats(-5, 5, allow_nan=False, width=32)
    shape = (heads, b, t, v)
    online = torch.tensor(
        draw(st.lists(floats, min_size=math.prod(shape), max_size=math.prod(shape)))
    )
    target = torch.tensor(
        draw(st.lists(floats, min_size=math.prod(shape), max_size=math.prod(shape)))
    )
    rewards = torch.tensor(draw(st.lists(floats, min_size=b, max_size=b)))
    return rewards, mask, online.view(shape), target.view(shape)


@given(batches(), st.floats(0, 1))
@settings(max_examples=100, deadline=None)
def test_target_properties(batch: tuple[torch.Tensor, ...], gamma: float) -> None:
    rewards, mask, online, target = batch
    y = core.double_q_targets(rewards, mask, online, target, gamma)
    last = core.last_index(mask)
    for i in range(mask.shape[0]):
        # the last real token's target is the harness's reward itself; padding is 0
        assert y[i, last[i]].item() == pytest.approx(rewards[i].item())
        assert y[i, int(mask[i].sum()) :].abs().sum().item() == 0
        # every other target is gamma times a value the target heads hold at the next state
        for t in range(int(last[i])):
            assert (
                target[:, i, t + 1].amin() * gamma - 1e-4
                <= y[i, t]
                <= (target[:, i, t + 1].amax() * gamma + 1e-4)
                or gamma == 0
            )
    # gamma 0: only the rewards remain
    y0 = core.double_q_targets(rewards, mask, online, target, 0.0)
    assert torch.equal(y0, core.terminal_rewards(rewards, mask))


# -- losses ---------------------------------------------------------------------------------------


def test_td_loss_hand_computed() -> None:
    q_taken = q_tensor([[[1, 2]], [[3, 0]]])  # H=2, B=1, T=2
    y = q_tensor([[0, 1]])
    # (1-0)^2, (2-1)^2, (3-0)^2, (0-1)^2 -> 12 / 4
    assert core.td_loss(q_taken, y, q_tensor([[1, 1]])).item() == pytest.approx(3.0)
    # the second token is padding: (1 + 9) / 2
    assert core.td_loss(q_taken, y, q_tensor([[1, 0]])).item() == pytest.approx(5.0)


def test_cql_penalty_hand_computed() -> None:
    # token 1: Q = [0, 0, 0], data took 0: log 3 - 0. token 2: Q = [log 1, log 2, log 3], data
    # took 2: log 6 - log 3 = log 2. Mean: (log 3 + log 2) / 2 = log 6 / 2.
    q = torch.tensor([[[[0.0, 0.0, 0.0], [0.0, math.log(2), math.log(3)]]]])
    actions = torch.tensor([[0, 2]])
    got = core.cql_penalty(q, actions, q_tensor([[1, 1]]))
    assert got.item() == pytest.approx(math.log(6) / 2, rel=1e-6)
    # with padding the second token does not count
    assert core.cql_penalty(q, actions, q_tensor([[1, 0]])).item() == pytest.approx(math.log(3))


def test_taken_reads_each_heads_value_of_the_data_token() -> None:
    q = torch.arange(2 * 1 * 2 * 3, dtype=torch.float32).view(2, 1, 2, 3)
    assert core.taken(q, torch.tensor([[2, 0]])).tolist() == [[[2.0, 3.0]], [[8.0, 9.0]]]


# -- decoding ------------------------------------------------------------------------------------


def test_shifted_logits_hand_computed() -> None:
    # pi = [0.5, 0.5], Q = [1, 3]: V = 2, A = [-1, 1]; beta 2 -> logits + [-2, 2]
    got = core.shifted_logits(q_tensor([0, 0]), q_tensor([1, 3]), beta=2.0)
    assert got.tolist() == [-2.0, 2.0]
    assert core.advantages(q_tensor([0, 0]), q_tensor([1, 3])).tolist() == [-1.0, 1.0]
    assert core.shifted_logits(q_tensor([0.3, 1]), q_tensor([7, 3]), beta=0).tolist() == [
        pytest.approx(0.3),
        1.0,
    ]


@given(
    st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=6),
    st.lists(st.floats(-10, 10, allow_nan=False), min_size=6, max_size=6),
    st.floats(0, 3),
)
@settings(max_examples=100, deadline=None)
def test_shifted_policy_is_pi_times_exp_beta_q(logits: list, q: list, beta: float) -> None:
    """ILQL's policy: softmax(shifted) is proportional to pi(a|s) exp(beta Q(s, a)); V(s) only
    moves every logit alike."""
    lg = torch.tensor(logits, dtype=torch.float64)
    qv = torch.tensor(q[: len(logits)], dtype=torch.float64)
    got = torch.softmax(core.shifted_logits(lg, qv, beta).double(), dim=-1)
    want = torch.softmax(lg, -1) * torch.exp(beta * qv)
    assert torch.allclose(got, want / want.sum(), atol=1e-5)


def test_polyak_update_hand_computed() -> None:
    target = [torch.nn.Parameter(q_tensor([0, 10]))]
    online = [torch.nn.Parameter(q_tensor([10, 0]))]
    core.polyak_update(target, online, tau=0.1)
    assert target[0].tolist() == pytest.approx([1.0, 9.0])


# -- the pieces composed, on a problem with a known answer ----------------------------------------


def test_toy_problem_learns_values_and_decoding_prefers_the_rewarded_token() -> None:
    """Two one-step-apart episodes share their first state; token 1 there led to reward +1,
    token 2 to -1. Learning from the data alone, Q of the data tokens approaches the returns,
    and the shifted logits put more mass on token 1 than the policy did."""
    torch.manual_seed(0)
    vocab, dim = 6, 4
    embedding = torch.randn(vocab, dim)
    heads = core.TwinQ(embedding, heads=2, inner=16)
    target = __import__("copy").deepcopy(heads)
    opt = torch.optim.Adam(heads.parameters(), lr=0.02)
    s0, s_good, s_bad = torch.randn(dim), torch.randn(dim), torch.randn(dim)
    hidden = torch.stack([torch.stack([s0, s_good]), torch.stack([s0, s_bad])])  # (B=2, T=2, d)
    actions = torch.tensor([[1, 4], [2, 4]])
    mask = torch.ones(2, 2)
    rewards = torch.tensor([1.0, -1.0])
    for _ in range(400):
        q = heads(hidden)
        y = core.double_q_targets(rewards, mask, q.detach(), target(hidden).detach(), gamma=1.0)
        loss = core.td_loss(core.taken(q, actions), y, mask) + 0.05 * core.cql_penalty(
            q, actions, mask
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        core.polyak_update(target.parameters(), heads.parameters(), tau=0.1)
    with torch.no_grad():
        q = target(hidden).amin(dim=0)
    assert q[0, 1, 4].item() == pytest.approx(1.0, abs=0.15)  # last tokens: the rewards
    assert q[1, 1, 4].item() == pytest.approx(-1.0, abs=0.15)
    assert q[0, 0, 1].item() > 0.5 > -0.5 > q[0, 0, 2].item()  # s0: good token vs bad token
    logits = torch.zeros(vocab)
    shifted = torch.softmax(core.shifted_logits(logits, q[0, 0], beta=3.0), -1)
    assert shifted[1] > 0.5 and shifted[2] < torch.softmax(logits, -1)[2]


# -- config ---------------------------------------------------------------------------------------


def test_every_field_has_help_and_the_cpu_config_loads() -> None:
    assert missing_help(DQNConfig) == []
    cfg = load_config(DQNConfig, REPO / "configs" / "dqn_he_cpu.yaml", [])
    assert cfg.dqn.data == "collect" and not cfg.model.lora.enabled


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("dqn.num_heads=1", "dqn.num_heads=2"),
        ("dqn.tau=0", "freeze the target heads"),
        ("dqn.data=somewhere.csv", "none of: a results.jsonl path"),
        ("dqn.gamma=1.5", "must be in [0, 1]"),
        ("dqn.eval_k=[4]", "raise dqn.eval_num_samples"),
        ("dqn.collect_temperature=0", "dqn.collect_temperature > 0"),
        ("model.lora.enabled=true", "model.lora.enabled=false"),
        ("external.mode=level_feedback", "single-turn"),
        ("dataset.eval_split=null", "set dataset.eval_split"),
        ("output.resume_from=latest", "does not resume"),
    ],
)
def test_config_refuses_impossible_settings(override: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re_escape(says)):
        load_config(DQNConfig, REPO / "configs" / "dqn_he_cpu.yaml", [override])


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


# -- offline data ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def problems() -> dict[str, Any]:
    return {p.task_id: p for p in load_suite("humaneval", "test[:2]", None)}


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_results_rows_become_episodes_and_held_out_rows_stay_out(
    tmp_path: Path, problems: dict[str, Any]
) -> None:
    rows = [
        {
            "task_id": "HumanEval/0",
            "status": "failed",
            "completion": "x",
            "raw": "```x```",
            "reward": -1.5,
        },
        {"task_id": "HumanEval/1", "status": "passed", "completion": "y", "reward": 2},
        {"task_id": "HumanEval/99", "status": "passed", "completion": "z", "reward": 2},
        {"task_id": "HumanEval/0", "status": "error", "completion": "w", "reward": None},
    ]
    episodes, skipped = from_results(write_rows(tmp_path / "r.jsonl", rows), problems)
    assert [(e.task_id, e.completion, e.reward) for e in episodes] == [
        ("HumanEval/0", "```x```", -1.5),  # the model's raw text: its own tokens
        ("HumanEval/1", "y", 2.0),
    ]
    assert episodes[0].prompt == problems["HumanEval/0"].prompt
    assert skipped == {"not_in_training_split": 1, "infrastructure_error": 1}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"task_id": "HumanEval/0", "completion": "x"}', ":2: field 'reward' is missing"),
        ('{"task_id": "HumanEval/0", "completion": "x", "reward": "1"}', ":2: field 'reward' must"),
        ('{"task_id": "HumanEval/0", "reward": 1}', ":2: field 'completion' is missing"),
        ('{"completion": "x", "reward": 1}', ":2: field 'task_id' is missing"),
        ("[1]", ":2: expected a JSON object"),
        ("{oops", ":2: not valid JSON"),
    ],
)
def test_bad_results_name_file_line_and_field(
    tmp_path: Path, problems: dict[str, Any], line: str, says: str
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"task_id": "HumanEval/1", "completion": "y", "reward": 1}\n' + line + "\n")
    with pytest.raises(DataError, match=re_escape(str(path) + says)):
        from_results(path, problems)


V1_SAMPLES = """CREATE TABLE samples (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, suite TEXT NOT NULL,
    task_id TEXT NOT NULL, sample_id TEXT NOT NULL, status TEXT NOT NULL, passed INTEGER NOT NULL,
    error_kind TEXT, agent TEXT, reward REAL, reward_parts TEXT)"""


def test_history_migrates_from_version_1_and_stores_prompt_and_completion(
    tmp_path: Path, problems: dict[str, Any]
) -> None:
    path = tmp_path / "history.sqlite"
    con = sqlite3.connect(path)  # a database as schema version 1 wrote it, with one run
    con.executescript(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,"
        " model TEXT NOT NULL DEFAULT '', split TEXT NOT NULL DEFAULT '', code_version TEXT NOT"
        " NULL DEFAULT '', out_dir TEXT NOT NULL DEFAULT '', settings TEXT NOT NULL DEFAULT '{}',"
        " summary TEXT NOT NULL DEFAULT '{}');" + V1_SAMPLES + ";"
        "INSERT INTO runs (created_at, summary) VALUES ('2026-01-01', '{\"suites\": {}}');"
        "INSERT INTO samples VALUES (1, 'humaneval', 'HumanEval/0', 's0', 'failed', 0, NULL,"
        " NULL, 0.5, NULL); PRAGMA user_version = 1;"
    )
    con.close()
    history = History(path)
    assert history.rows(1) == [
        {
            "suite": "humaneval",
            "task_id": "HumanEval/0",
            "sample_id": "s0",
            "status": "failed",
            "passed": False,
            "error_kind": None,
            "agent": None,
            "reward": 0.5,
        }
    ]
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    assert {"prompt", "completion"} <= {r[1] for r in con.execute("PRAGMA table_info(samples)")}
    con.close()
    # the old run has no text: learning from it says what to do
    with pytest.raises(DataError, match="before history schema version 2"):
        from_history(history, problems, 1)
    with pytest.raises(DataError, match="no recorded run has completion text"):
        from_history(history, problems)
    # a new run stores the prompt (from the run's problems) and the completion
    rows = [
        {
            "suite": "humaneval",
            "task_id": "HumanEval/1",
            "sample_id": "a",
            "status": "passed",
            "passed": True,
            "completion": "    return 1\n",
            "reward": 1.0,
        },
        {
            "suite": "humaneval",
            "task_id": "HumanEval/0",
            "sample_id": "b",
            "status": "failed",
            "passed": False,
            "completion": "    pass\n",
            "reward": -1.0,
        },
    ]
    prompts = {t: p.prompt for t, p in problems.items()}
    run = history.record(summary={"suites": {}}, rows=rows, prompts=prompts)
    stored = history.rows(run)
    assert [(r["prompt"], r["completion"]) for r in stored] == [
        (problems["HumanEval/1"].prompt, "    return 1\n"),
        (problems["HumanEval/0"].prompt, "    pass\n"),
    ]
    episodes, _ = from_history(history, problems)  # the newest run with text
    assert [(e.task_id, e.reward, e.completion) for e in episodes] == [
        ("HumanEval/1", 1.0, "    return 1\n"),
        ("HumanEval/0", -1.0, "    pass\n"),
    ]
    assert from_history(history, problems, run)[0] == episodes
    with pytest.raises(DataError, match="no run with id 7"):
        from_history(history, problems, 7)


# -- a real evaluation session records what the trainer learns from ------------------------------


def test_an_evaluation_run_records_prompts_and_completions_for_the_trainer(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.gate  # noqa: F401  (pytester's in-process run must not import these first)
    import harness.report  # noqa: F401

    monkeypatch.setenv("CODEEVAL_HISTORY", str(pytester.path / "history.sqlite"))
    rows = [
        {
            "task_id": f"T/{i}",
            "prompt": f'def add{i}(x):\n    """Return x + {i}."""\n',
            "entry_point": f"add{i}",
            "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n",
            "canonical_solution": f"    return x + {i}\n",
        }
        for i in range(3)
    ]
    pytester.makefile(".jsonl", problems="\n".join(json.dumps(p) for p in rows))
    samples = [
        {"task_id": f"T/{i}", "completion": "    return 0\n" if i == 0 else f"    return x + {i}\n"}
        for i in range(3)
    ]
    pytester.makefile(".jsonl", samples="\n".join(json.dumps(s) for s in samples))
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--llm-eval",
        "jsonl:problems.jsonl",
        "--llm-samples",
        "samples.jsonl",
        "--llm-reward",
        "code_levels_single",
        "--llm-out",
        "out",
    )
    assert result.ret == 1  # one wrong sample
    problems = {p.task_id: p for p in load_suite(f"jsonl:{pytester.path / 'problems.jsonl'}")}
    episodes, skipped = from_history(History(pytester.path / "history.sqlite"), problems)
    assert skipped == {"not_in_training_split": 0, "infrastructure_error": 0}
    assert [(e.task_id, e.prompt, e.completion) for e in episodes] == [
        (f"T/{i}", rows[i]["prompt"], samples[i]["completion"]) for i in range(3)
    ]
    assert episodes[0].reward < episodes[1].reward == episodes[2].reward


def test_code_levels_scores_a_decoded_answer_with_no_def() -> None:
    """A decoded answer without any ``def`` that does not parse crashed the code_levels reward
    (found by the CPU run's held-out decoding); it scores as code without functions."""
    from harness.reward.presets import lenient_functions

    assert lenient_functions("Here is the answer:\n```\nsum(x for x in y\n") == {}
    assert set(lenient_functions("def f(:\n  pass\ndef g():\n    return 1\n")) == {"g"}
