"""The codeeval-rl pytest plugin: command-line options and the wiring of the session.

On the controller, ``--llm-eval`` loads the suites, gets samples (a file, the reference
solutions, or a model through the generation hook), compiles them into a generated suite and
collects that folder instead of the user's tests. xdist workers are told where the compiled suite
is; they only run it. The controller turns the reports into ``results.jsonl`` and
``summary.json`` (see :mod:`plugin.session`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plugin import hookspecs

PYTEST_DEFAULT_REPORTCHARS = "fE"  # pytest's own default for -r

CORE_OPTIONS_HELP = {
    "llm_eval": "evaluate LLM samples on these suites (comma separated): humaneval, mbpp, "
    "mbpp-sanitized, coophumaneval, classeval, humaneval-plus, mbpp-plus, humaneval-js|cpp|java|rs, "
    "mbpp-sanitized-js|cpp|java|rs, jsonl:PATH",
}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("codeeval", "codeeval-rl: evaluate code written by language models")
    group.addoption(
        "--llm-eval", dest="llm_eval", metavar="SUITE[,SUITE]", help=CORE_OPTIONS_HELP["llm_eval"]
    )
    group.addoption(
        "--llm-samples",
        dest="llm_samples",
        metavar="FILE|canonical",
        help="JSONL samples (task_id, completion, optional sample_id/agent/raw), or 'canonical' "
        "to evaluate the benchmark's reference solutions",
    )
    group.addoption(
        "--llm-split",
        dest="llm_split",
        default=None,
        metavar="SPLIT",
        help="which part of the suite, in Hugging Face slice syntax: test, test[:50], train[10%%:], train+test",
    )
    group.addoption(
        "--llm-k",
        dest="llm_k",
        default="1,10,100",
        metavar="K[,K]",
        help="pass@k values to report (only k <= the samples per problem are shown); default 1,10,100",
    )
    group.addoption(
        "--llm-out",
        dest="llm_out",
        default="codeeval-out",
        metavar="DIR",
        help="where results.jsonl, summary.json and the generated suite go (default: codeeval-out)",
    )
    group.addoption(
        "--llm-timeout",
        dest="llm_timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time limit per check case; default: 10x the reference solution's time, at least 1 s",
    )
    group.addoption(
        "--llm-data-dir",
        dest="llm_data_dir",
        default=None,
        metavar="DIR",
        help="folder of local benchmark mirrors (default: $CODEEVAL_DATA_DIR, else the hub)",
    )
    group.addoption(
        "--llm-memory-mb",
        dest="llm_memory_mb",
        type=int,
        default=1024,
        metavar="MB",
        help="address-space limit of each sample's process (default 1024)",
    )
    group.addoption(
        "--llm-reward",
        dest="llm_reward",
        default=None,
        metavar="PRESET|YAML",
        help="score samples with a reward config (weighted, binary, code_levels, class_levels or a "
        "YAML file): adds analyzers, reward, reward_parts and feedback to results.jsonl",
    )
    group.addoption(
        "--llm-per-case",
        dest="llm_per_case",
        action="store_true",
        default=False,
        help="one pytest item per check case and sample (default: one item per sample); every "
        "case is then judged, as with --llm-every-case",
    )
    group.addoption(
        "--llm-every-case",
        dest="llm_every_case",
        action="store_true",
        default=False,
        help="judge every case of every sample, even after one failed (EvalPlus's suites and "
        "stdio tests otherwise stop at a sample's first failure when only the verdict is "
        "wanted; a reward that reads per-case results asks for every case itself)",
    )
    group.addoption(
        "--llm-plus",
        dest="llm_plus",
        type=int,
        default=None,
        metavar="N",
        help="add N generated plus inputs per problem (expected: the reference solution's "
        "answers) to any function-style suite with references; summary.json then gives pass@k "
        "on the original checks beside original + plus",
    )
    group.addoption(
        "--llm-ship",
        dest="llm_ship",
        default="auto",
        choices=("auto", "always", "never"),
        help="send the compiled suite to xdist workers through xdist's channel (docs/remote.md): "
        "auto (default) ships to every worker but plain local ones (-n N), always, or never",
    )
    group.addoption(
        "--llm-compiled",
        dest="llm_compiled",
        default=None,
        metavar="DIR",
        help="run an already compiled suite folder (OUT/suite) and write its results",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "llm_task(task_id): a test generated by codeeval-rl for this task"
    )
    config.addinivalue_line(
        "markers", "plus: a generated plus case (input and expected value from the reference)"
    )
    config.pluginmanager.import_plugin("plugin.fixtures")
    config.pluginmanager.import_plugin("plugin.reports")
    config.pluginmanager.import_plugin("plugin.protocol")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:  # workers send sample items' call reports only (plugin.protocol)
        from plugin.protocol import ReplayReports

        config.pluginmanager.register(ReplayReports(config), "codeeval-replay")
    if workerinput is not None:
        from plugin.remote import worker_suite_dir

        suite_dir = worker_suite_dir(config)  # a shipped copy (plugin.remote) or the controller's
        if suite_dir:
            from plugin.batch import start_worker

            config.args[:] = [suite_dir]
            _collect_generated_modules(config)
            _no_final_gc(config)
            # The interpreter's passes at exit took a worker of HumanEval+ a second or more
            # while the controller waited. Workers only: the controller may hold a model
            # whose native objects report leaks when their cycles are left at exit.
            from harness.gcpause import fewer_collections, no_collection_at_exit

            no_collection_at_exit()
            fewer_collections()
            _drop_authoring_plugins(config)
            start_worker(config)  # sample reports in batches, when the controller says so
            from harness.pipeline.runtime import start_suite_sandbox

            start_suite_sandbox(Path(os.path.abspath(suite_dir)))  # up by the first sample
        return
    if config.getoption("llm_eval") or config.getoption("llm_compiled"):
        from plugin.session import EvalSession

        config.pluginmanager.register(EvalSession(config), "codeeval-session")
        from plugin.spawn import start_workers_together

        start_workers_together(config)  # xdist's local workers made at once, not in turn
        _collect_generated_modules(config)
        _quiet_failure_listing(config)
        _no_final_gc(config)
        _drop_authoring_plugins(config)


# Plugins that serve hand-written tests only: an evaluation session collects nothing but the
# generated suite, which never uses them. Hypothesis's imports the whole library when the
# session ends (0.1-0.15 s in the controller and again in every xdist worker).
AUTHORING_PLUGINS = ("hypothesispytest",)


def _drop_authoring_plugins(config: pytest.Config) -> None:
    for name in AUTHORING_PLUGINS:
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def _no_final_gc(config: pytest.Config) -> None:
    """No garbage collection when the session ends (pytest's default is five).

    pytest collects at exit to surface unraisable exceptions of the tests; after a benchmark
    run the heap holds every report and row (0.3 s a collection for 8200 samples), and
    generated tests create no objects with finalizers. pytester sets the same key.
    """
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # pragma: no cover - a pytest without it collects as it likes
        return
    config.stash[gc_collect_iterations_key] = 0


def _quiet_failure_listing(config: pytest.Config) -> None:
    """A benchmark run fails thousands of cases: by default the terminal shows the summary
    table, not a traceback and a summary line per failed case (results.jsonl has every
    message). An explicit ``--tb`` or ``-r`` still wins; infrastructure errors stay listed."""
    if config.option.tbstyle == "auto":
        config.option.tbstyle = "no"
    if config.option.reportchars == PYTEST_DEFAULT_REPORTCHARS:
        config.option.reportchars = "E"


def _collect_generated_modules(config: pytest.Config) -> None:
    """Generated modules are ``test_*.py``: collect (and assertion-rewrite) them even when the
    user's own configuration names test files differently."""
    if "test_*.py" not in config.getini("python_files"):
        config.addinivalue_line("python_files", "test_*.py")
