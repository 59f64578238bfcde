"""A user's JSONL suite and reward config with allow-lists, end to end: real pytest sessions
(a fresh process each, so the sandbox's fork server sees this test's overlay root), the real
sandbox (bubblewrap where it works), and `codeeval deps fetch` with pip from a local wheel
folder built here (no network)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as codeeval
from harness.deps.overlay import ROOT_ENV, ready_site
from harness.sandbox import bwrap_available
from tests.test_deps import build_wheel
from tests.test_deps_sources import HELPER, RECORD, TINY, lay_out
from tests.test_executors_ray import without_timings

REWARD = "preset: binary\ndependencies:\n  helperlib: helperlib==1.0.0\n"
SAMPLES = {
    "own": "    import tinylib\n    return f'{tinylib.VALUE}-{n}'\n",  # the problem's list
    "reward": "    import helperlib\n    return helperlib.tag(n)\n",  # the reward config's
    "unlisted": "    import notallowed\n    return notallowed.tag(n)\n",  # nobody's
}
MODULES = {"tinylib": "VALUE = 'one'\n", "helperlib": "def tag(n):\n    return f'one-{n}'\n"}


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    # The overlay root under the shared /tmp (not pytest's 0700 folder): without bubblewrap
    # the child (nobody) reads it where it lies.
    root = Path(tempfile.mkdtemp(prefix="codeeval-test-deps-"))
    monkeypatch.setenv(ROOT_ENV, str(root))
    monkeypatch.setenv("CODEEVAL_CACHE", str(pytester.path / "cache"))
    suite = pytester.path / "problems.jsonl"
    suite.write_text(json.dumps({**RECORD, "dependencies": TINY}) + "\n")
    reward = pytester.path / "reward.yaml"
    reward.write_text(REWARD)
    samples = pytester.path / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": RECORD["task_id"], "sample_id": s, "completion": c}) + "\n"
            for s, c in SAMPLES.items()
        )
    )
    yield {"root": root, "suite": suite, "reward": reward, "samples": samples}
    shutil.rmtree(root, ignore_errors=True)


def run(pytester: pytest.Pytester, project: dict[str, Any], name: str) -> dict[str, dict]:
    out = pytester.path / name
    result = pytester.runpytest_subprocess(
        "--llm-eval", f"jsonl:{project['suite']}", "--llm-samples", str(project["samples"]),
        "--llm-reward", str(project["reward"]), "--llm-out", str(out), "-p", "no:codeeval_gate",
    )  # fmt: skip
    assert (out / "results.jsonl").is_file(), result.stdout.str()[-3000:]
    return {r["sample_id"]: r for r in map(json.loads, (out / "results.jsonl").open())}


def check_fetched(rows: dict[str, dict]) -> None:
    assert rows["own"]["status"] == "passed", rows["own"]["cases"]
    assert rows["reward"]["status"] == "passed", rows["reward"]["cases"]
    assert rows["unlisted"]["status"] == "failed"  # the model's import: its own failure
    assert "No module named 'notallowed'" in rows["unlisted"]["cases"][0]["message"]
    assert rows["own"]["reward"] == 1.0 and rows["unlisted"]["reward"] == 0.0


def test_unfetched_is_a_data_error_naming_the_command_then_the_overlay_runs(
    pytester: pytest.Pytester, project: dict[str, Any]
) -> None:
    rows = run(pytester, project, "before")
    command = f"codeeval deps fetch jsonl:{project['suite']} --reward {project['reward']}"
    for row in rows.values():
        assert (row["status"], row["error_kind"], row["reward"]) == ("error", "data", None)
        assert any(command in note for note in row["execution"]["notes"]), row["execution"]
    # The overlay that command would leave (laid out by hand here; fetched for real below).
    lay_out(project["root"], {**TINY, **HELPER}, MODULES)
    check_fetched(run(pytester, project, "after"))


@pytest.mark.slow  # pip: seconds per install, and two sessions per sandbox mode
@pytest.mark.parametrize(
    "mode",
    [
        "nobwrap",
        pytest.param(
            "bwrap",
            marks=pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable"),
        ),
    ],
)
def test_codeeval_deps_fetch_from_a_wheel_folder_then_run(
    pytester: pytest.Pytester,
    project: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    mode: str,
) -> None:
    monkeypatch.setenv("CODEEVAL_SANDBOX", mode if mode == "nobwrap" else "")
    if mode == "nobwrap":
        from harness.sandbox import SandboxSettings
        from harness.sandbox.probe import SandboxUnusable, check_sandbox

        try:
            check_sandbox(SandboxSettings(use_bwrap=False))
        except SandboxUnusable as exc:  # e.g. an interpreter under a 0700 /root
            pytest.skip(f"the sandbox cannot run without bubblewrap here: {str(exc)[:200]}")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name, source in MODULES.items():
        build_wheel(wheels, name, "1.0.0", {name: source})
    fetch = ["deps", "fetch", f"jsonl:{project['suite']}", "--reward", str(project["reward"])]
    assert codeeval([*fetch, "--find-links", str(wheels), "--no-index"]) == 0
    assert ready_site({**TINY, **HELPER}) is not None  # the merged list, one overlay
    check_fetched(run(pytester, project, "run"))


def test_evaluate_adds_the_reward_configs_list_for_a_trainer(
    project: dict[str, Any], tmp_path: Path
) -> None:
    """harness.evaluate.evaluate() with the same reward config: the same merged overlay."""
    from harness.evaluate import evaluate
    from harness.records import Sample
    from suites.jsonl_suite import load_jsonl

    (problem,) = load_jsonl(project["suite"])
    samples = [Sample(problem.task_id, c, s) for s, c in SAMPLES.items()]
    rows = evaluate([problem], samples, reward=str(project["reward"]), out_dir=tmp_path / "a")
    assert {r["error_kind"] for r in rows} == {"data"}
    lay_out(project["root"], {**TINY, **HELPER}, MODULES)
    rows = evaluate([problem], samples, reward=str(project["reward"]), out_dir=tmp_path / "b")
    check_fetched({r["sample_id"]: r for r in rows})


def test_magrpo_scores_a_batch_with_extras_as_evaluate_does(
    project: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MAGRPO's scorer with per-sample extras (ClassEval's agent_code) applies the reward
    config's allow-list as evaluate(reward=...) does: the same batch, the same rows."""
    import harness.pipeline.run
    from harness.evaluate import evaluate
    from harness.records import Sample
    from suites.jsonl_suite import load_jsonl
    from trainers.common.sections import OutputSettings, RewardSettings
    from trainers.magrpo.harness_io import harness_scorer

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name, source in MODULES.items():
        build_wheel(wheels, name, "1.0.0", {name: source})
    fetch = ["deps", "fetch", f"jsonl:{project['suite']}", "--reward", str(project["reward"])]
    assert codeeval([*fetch, "--find-links", str(wheels), "--no-index"]) == 0
    (problem,) = load_jsonl(project["suite"])
    samples = [Sample(problem.task_id, c, s) for s, c in SAMPLES.items()]
    direct = evaluate([problem], samples, reward=str(project["reward"]), out_dir=tmp_path / "a")
    check_fetched({r["sample_id"]: r for r in direct})
    # The scorer's own out dir (a fresh one: its fork server starts after the overlay exists).
    monkeypatch.setattr(harness.pipeline.run, "default_out_dir", lambda: tmp_path / "b")
    extras = [{"agent_code": {"main": s.completion}} for s in samples]
    scorer = harness_scorer(RewardSettings(preset=str(project["reward"])), OutputSettings())
    magrpo = scorer([problem], samples, extras)
    assert [r.pop("agent_code") for r in magrpo] == [e["agent_code"] for e in extras]
    assert without_timings(magrpo) == without_timings(direct)
    with pytest.raises(ValueError, match="row_extras has 1 entries for 3 samples"):
        evaluate([problem], samples, reward=str(project["reward"]), row_extras=extras[:1])
