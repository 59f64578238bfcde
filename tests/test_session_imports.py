"""An evaluation session loads only what it uses, as Python loads it: no hypothesis in any
process, start to end, and the product's modules not through pytest's assertion rewriting
(where it cannot cache, that re-compiles each of them in every process: ``plugin/__init__``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from plugin import PRODUCT_PACKAGES
from tests.test_plugin import PROBLEMS, SAMPLES, write_jsonl

# Written by every process of the session (controller and xdist workers) as it ends: whether
# hypothesis was ever imported there, whether its pytest plugin was still registered, and which
# of the product's modules pytest's assertion-rewriting hook loaded.
RECORDER = (
    f"PRODUCT = {tuple(sorted(PRODUCT_PACKAGES))!r}\n"
    + """
import json, os, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    name = getattr(config, "workerinput", {}).get("workerid", "controller")
    record = {
        "hypothesis_imported": "hypothesis" in sys.modules,
        "hypothesis_plugin": config.pluginmanager.get_plugin("hypothesispytest") is not None,
        "rewritten": sorted(
            name
            for name, module in list(sys.modules.items())
            if name.partition(".")[0] in PRODUCT
            and type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook"
        ),
    }
    with open(os.path.join(os.environ["IMPORTS_DIR"], name + ".json"), "w") as fh:
        json.dump(record, fh)
"""
)

# pytest imports these by name, and rewrites them: the package and what plugin.plugin loads
PLUGIN_MODULES = {"plugin", "plugin.fixtures", "plugin.protocol", "plugin.reports"}


@pytest.mark.parametrize("workers", ["0", "2"])
def test_no_process_of_an_evaluation_session_imports_hypothesis(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    records = pytester.path / "imports"
    records.mkdir()
    monkeypatch.setenv("IMPORTS_DIR", str(records))
    pytester.makepyfile(recorder=RECORDER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), *sys.path]))
    suite = write_jsonl(pytester.path / "problems.jsonl", PROBLEMS)
    samples = write_jsonl(pytester.path / "samples.jsonl", SAMPLES[:2])
    result = pytester.runpytest_subprocess(
        "-p", "recorder", "--llm-eval", f"jsonl:{suite}", "--llm-samples", str(samples),
        "--llm-out", str(pytester.path / "out"), "-p", "no:codeeval_gate", "-n", workers,
    )  # fmt: skip
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    seen = {p.stem: json.loads(p.read_text()) for p in Path(records).glob("*.json")}
    expected = {"controller"} | {f"gw{i}" for i in range(int(workers))}
    assert set(seen) == expected
    for name, record in seen.items():
        assert not record["hypothesis_imported"] and not record["hypothesis_plugin"], name
        # none of the hundred-odd modules the plugin modules import
        assert set(record["rewritten"]) <= PLUGIN_MODULES, name


def test_plain_pytest_sessions_keep_the_hypothesis_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it="""
        def test_registered(pytestconfig):
            assert pytestconfig.pluginmanager.get_plugin("hypothesispytest") is not None
        """
    )
    assert pytester.runpytest_subprocess("-p", "no:codeeval_gate").ret == 0


def test_the_packages_left_to_python_are_the_distributions() -> None:
    """``plugin.PRODUCT_PACKAGES`` names what pyproject.toml packages, no more, no less."""
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {pattern.rstrip("*") for pattern in include} == PRODUCT_PACKAGES
