"""Training reports: ``codeeval report RUN_DIR`` on a trainer's output folder.

A real two-turn MAGRPO run on CPU (tiny model, the real harness scoring in the sandbox) logs
per-turn training and evaluation metrics; its page shows them and renders in headless
Chromium. The shapes PPO (agents, central critic) and TRL's GRPO (flat names) log are read
into the same sections; a property checks that every logged number lands in exactly one series
with its agent and turn; bad files are reported with file, line and field.
"""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness import cli
from harness.models import tiny_model
from harness.report import plots
from harness.report.rundata import RunFileError
from harness.report.training import (
    Key,
    is_training_run,
    load_training_run,
    series_of,
    topic,
    training_page,
)
from suites import load_suite
from tests.test_report import render, svg_images, write_run
from trainers.common.config import load_config
from trainers.common.logger import flatten, read_metrics
from trainers.common.policy import wrap_agents
from trainers.magrpo.config import MAGRPOConfig
from trainers.magrpo.trainer import MAGRPOTrainer

SVG = "{http://www.w3.org/2000/svg}"
SECTIONS = [
    "Run",
    "Reward",
    "Reward parts",
    "Losses",
    "KL",
    "Clip fraction",
    "Completion length",
    "Evaluation",
]


def h2(page: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", page)


def charts(page: str) -> dict[str, ET.Element]:
    """The page's SVG charts by title."""
    return {root.findtext(f"{SVG}title") or "": root for root in svg_images(page)}


def lines(root: ET.Element) -> list[str]:
    return [g.get("aria-label") or "" for g in root.iter(f"{SVG}g") if g.get("class") == "series"]


def write_metrics(folder: Path, records: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


# -- a real CPU run ------------------------------------------------------------------------------


@pytest.mark.usefixtures("one_torch_thread")
def test_multi_turn_cpu_run_report_renders_in_chromium(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cfg = load_config(
        MAGRPOConfig,
        None,
        [
            f"output.dir={out}",
            "magrpo.num_turns=2",
            "external.mode=level_feedback",
            "reward.preset=code_levels",
            "magrpo.max_steps=2",
            "magrpo.num_epochs=2",
            "magrpo.num_generations=2",
            "magrpo.max_new_tokens=8",
            "magrpo.beta=0.05",
            "magrpo.eval_interval=1",
            "magrpo.eval_num_samples=2",
            "magrpo.eval_k=[1,2]",
            "logging.progress_bar=false",
            "output.save_final_model=false",
            "output.save_interval=0",
        ],
    )
    model, tok = tiny_model(0)
    torch.manual_seed(cfg.seed)
    agents = wrap_agents(model, tok, ["helper", "main"], cfg.model, with_reference=True)
    problems = load_suite("humaneval", "test[:2]", None)
    # the real harness scores (default scorer and feedback: the sandbox, code_levels)
    trainer = MAGRPOTrainer(
        cfg, agents=agents, train_problems=problems[:1], eval_problems=problems[1:]
    )
    records = trainer.train()
    assert read_metrics(out) == records and [r["step"] for r in records] == [1, 2]
    for record in records:
        flat = flatten(record)
        for turn in (1, 2):
            for key in ("reward_mean", "expected_return", "pass@1", "pass@2"):
                assert math.isfinite(flat[f"eval/turn_{turn}/{key}"]), key
            assert math.isfinite(flat[f"turn_{turn}/expected_return"])
        assert math.isfinite(flat["reference_kl_mean"])

    assert cli.main(["report", str(out)]) == 0
    page_path = out / "report.html"
    page = page_path.read_text()
    assert h2(page)[: len(SECTIONS)] == SECTIONS
    drawn = charts(page)
    # per turn in training, per agent for the losses, per turn for evaluation pass@k
    assert set(lines(drawn["expected_return per step"])) == {"turn 1", "turn 2"}
    assert set(lines(drawn["loss per step"])) == {"overall", "helper", "main"}
    assert set(lines(drawn["reference_kl_mean per step"])) >= {"overall", "helper", "main"}
    for k in (1, 2):
        assert set(lines(drawn[f"evaluation pass@{k} per step"])) == {"turn 1", "turn 2"}
    assert "reward parts per step (turn 2)" in drawn
    assert set(lines(drawn["evaluation expected_return per step"])) == {"turn 1", "turn 2"}
    # the evaluation table has each turn's pass@1 at its last value
    last = records[-1]["eval"]["turn_2"]["pass@1"]
    assert re.search(rf"<td>pass@1</td><td>\(all\)</td><td class=\"num\">2</td>.*?{last:.4f}", page)

    seen = render(page_path, tmp_path)
    assert seen["errors"] == []
    assert seen["h2"][: len(SECTIONS)] == SECTIONS
    assert len(seen["imgs"]) == len(drawn) >= 10
    assert all(i["ok"] and i["w"] > 100 and i["h"] > 50 for i in seen["imgs"]), seen["imgs"]


# -- the other trainers' shapes -----------------------------------------------------------------


PPO_CENTRAL = [
    {
        "step": s,
        "reward": 0.5 * s,
        "infra_errors": 0,
        "agents": {
            f"agent{a}": {
                "policy_loss": 0.1 * s + a,
                "clip_frac": 0.05 * s,
                "kl": 0.01 * s,
                "completion_length": 16.0 + a,
            }
            for a in range(2)
        },
        "critic": {"value_loss": 2.0 / s, "value_mean": 0.1, "advantage_mean": -0.2},
    }
    for s in (1, 2, 3)
]

GRPO_TRL = [
    {
        "step": s,
        "loss": 0.01 * s,
        "grad_norm": 0.4,
        "completions/mean_length": 12.0 + s,
        "rewards/code_levels/mean": 0.2 * s,
        "reward": 0.2 * s,
        "kl": 0.001 * s,
        "clip_ratio/region_mean": 0.0,
        "eval_reward": 0.3,
    }
    for s in (1, 2)
] + [{"step": 2, "train_runtime": 9.5, "train_loss": 0.015, "epoch": 2.0}]


def test_ppo_central_critic_metrics_per_agent(tmp_path: Path) -> None:
    run = load_training_run(write_metrics(tmp_path / "ppo", PPO_CENTRAL))
    assert run.trainer == "ppo"
    series = run.series
    assert series[Key("train", "agent1", 0, "clip_frac")] == [(s, 0.05 * s) for s in (1, 2, 3)]
    assert series[Key("train", "critic", 0, "value_loss")][-1] == (3, 2.0 / 3)
    page = training_page(run)
    drawn = charts(page)
    assert set(lines(drawn["clip_frac per step"])) == {"agent0", "agent1"}
    assert set(lines(drawn["value_loss per step"])) == {"critic"}
    assert set(lines(drawn["completion_length per step"])) == {"agent0", "agent1"}
    assert "This run logged no evaluation" in page
    assert "Other metrics" in h2(page)


def test_trl_grpo_flat_names_and_closing_totals(tmp_path: Path) -> None:
    run = load_training_run(write_metrics(tmp_path / "grpo", GRPO_TRL))
    assert run.trainer == "grpo" and len(run.records) == 2
    assert run.totals["train_runtime"] == 9.5
    series = run.series
    assert series[Key("eval", "", 0, "reward")] == [(1, 0.3), (2, 0.3)]
    assert topic("rewards/code_levels/mean") == "reward parts"
    assert topic("completions/mean_length") == "completion length"
    assert topic("clip_ratio/region_mean") == "clip fraction"
    page = training_page(run)
    assert "totals.train_runtime" in page and "No clip fraction" not in page


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("reward_mean", "reward"),
        ("expected_return", "reward"),
        ("reference_kl_penalty_mean", "KL"),
        ("reward_parts/tests", "reward parts"),
        ("policy_loss", "losses"),
        ("td_loss", "losses"),
        ("clip_frac", "clip fraction"),
        ("completion_tokens_mean", "completion length"),
        ("pass@10", "pass@k"),
        ("grad_norm", "other"),
        ("kl", "KL"),
        ("skill", "other"),  # "kl" inside a word is no KL
    ],
)
def test_topics(metric: str, expected: str) -> None:
    assert topic(metric) == expected


# -- every number in exactly one series ----------------------------------------------------------

NAMES = st.sampled_from(["loss", "reward_mean", "kl", "clip_frac", "grad_norm", "x/y"])
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**6), 10**6), st.none()
)
BLOCK = st.dictionaries(NAMES, VALUES, max_size=4)


@st.composite
def records(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[Key, Any]]]:
    """A MAGRPO/PPO-shaped record and, for each of its leaves, where it must land."""
    record: dict[str, Any] = {"step": draw(st.integers(0, 1000))}
    placed: list[tuple[Key, Any]] = []

    def put(target: dict[str, Any], block: dict[str, Any], scope: str, agent: str, turn: int):
        target.update(block)
        placed.extend((Key(scope, agent, turn, k), v) for k, v in block.items())

    put(record, draw(BLOCK), "train", "", 0)
    for turn in draw(st.lists(st.integers(1, 4), unique=True, max_size=3)):
        block = draw(BLOCK)
        parts = draw(st.dictionaries(st.sampled_from(["tests", "syntax"]), VALUES, max_size=2))
        record[f"turn_{turn}"] = {**block, "reward_parts": parts}
        placed.extend((Key("train", "", turn, k), v) for k, v in block.items())
        placed.extend((Key("train", "", turn, f"reward_parts/{k}"), v) for k, v in parts.items())
    agents = draw(st.lists(st.sampled_from(["helper", "main", "critic"]), unique=True, max_size=2))
    nest = draw(st.booleans())  # PPO nests agents under "agents", MAGRPO names them at the top
    for name in agents:
        block = draw(BLOCK)
        (record.setdefault("agents", {}) if nest and name != "critic" else record)[name] = block
        placed.extend((Key("train", name, 0, k), v) for k, v in block.items())
    if draw(st.booleans()):
        record["eval"] = {}
        put(record["eval"], draw(BLOCK), "eval", "", 0)
        for turn in draw(st.lists(st.integers(1, 3), unique=True, max_size=2)):
            block = draw(BLOCK)
            record["eval"][f"turn_{turn}"] = block
            placed.extend((Key("eval", "", turn, k), v) for k, v in block.items())
    return record, placed


@given(records())
@settings(max_examples=200, deadline=None)
def test_every_finite_number_lands_in_its_series(case: tuple[dict[str, Any], list]) -> None:
    record, placed = case
    # through JSON, as a trainer writes it (the logger turns non-finite floats into null)
    got = sorted(series_of(json.loads(json.dumps(record))))
    want = sorted(
        (key, float(v)) for key, v in placed if isinstance(v, int | float) and math.isfinite(v)
    )
    assert got == want


@given(
    st.dictionaries(
        st.text(max_size=30),
        st.lists(
            st.tuples(st.integers(0, 10**6), st.floats(allow_nan=True, allow_infinity=True)),
            max_size=20,
        ),
        max_size=12,
    )
)
@example({"inf": [], "nan": [(1, 0.5)], "Infinity": [(2, float("inf"))]})
@settings(max_examples=100, deadline=None)
def test_step_lines_are_well_formed_for_any_data(series: dict[str, list]) -> None:
    uri = plots.step_lines("title & <more>", series)
    text = base64.b64decode(uri.split(",", 1)[1]).decode()
    root = ET.fromstring(text)  # well-formed, names escaped
    # No NaN or infinite coordinate is drawn (a series' name may say "nan" or "inf": text).
    drawn = " ".join(
        value
        for element in root.iter()
        for name, value in element.attrib.items()
        if name != "aria-label"  # the series' name
    )
    assert "nan" not in drawn.lower() and "inf" not in drawn.lower()
    assert len(lines(root)) == len(series)


def test_a_single_step_still_draws(tmp_path: Path) -> None:
    run = load_training_run(write_metrics(tmp_path / "one", PPO_CENTRAL[:1]))
    assert all(float(r.get("width", 0)) > 100 for r in svg_images(training_page(run)))


# -- detection and bad files ---------------------------------------------------------------------


def test_report_tells_training_folders_from_evaluation_out_dirs(tmp_path: Path) -> None:
    train = write_metrics(tmp_path / "train", PPO_CENTRAL)
    evaluation = write_run(tmp_path / "eval", {"t/0": ["passed", "failed"]})
    assert is_training_run(train) and is_training_run(train / "metrics.jsonl")
    assert not is_training_run(evaluation) and not is_training_run("12")
    # an evaluation out dir with a stray metrics.jsonl is still an evaluation
    write_metrics(evaluation, PPO_CENTRAL)
    assert not is_training_run(evaluation)
    target = tmp_path / "page.html"
    assert cli.main(["report", str(train), "-o", str(target)]) == 0
    assert "codeeval training report" in target.read_text()
    assert cli.main(["report", str(evaluation)]) == 0
    assert "codeeval report" in (evaluation / "report.html").read_text()


def test_a_folder_with_neither_file_says_what_it_wants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert cli.main(["report", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert "summary.json" in err and "metrics.jsonl" in err and "empty" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"step": 1, "loss": 1}\n{"step": 2,\n', ":2: not valid JSON"),
        ('{"step": 1}\n[1, 2]\n', ":2: expected a JSON object per line"),
        ('{"loss": 1}\n', ":1: field 'step' is missing"),
        ('{"step": "one"}\n', ":1: field 'step' must be a whole number"),
        ("\n\n", "no step was logged"),
    ],
)
def test_bad_metrics_name_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "metrics.jsonl").write_text(text)
    with pytest.raises(RunFileError, match=re.escape(message)) as caught:
        load_training_run(tmp_path)
    assert str(tmp_path / "metrics.jsonl") in str(caught.value)


def test_bad_config_yaml_names_its_line(tmp_path: Path) -> None:
    write_metrics(tmp_path, PPO_CENTRAL)
    (tmp_path / "config.yaml").write_text("model:\n  name: x\n  bad: [unclosed\n")
    with pytest.raises(RunFileError, match=r"config\.yaml:\d+: not valid YAML"):
        load_training_run(tmp_path)
