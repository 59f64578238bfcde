"""Generation options of the codeeval-rl plugin (``--llm-model`` and sampling settings).

The core plugin calls :func:`pytest_llm_generate_samples` once, on the controller, before the
suite is compiled; xdist workers never load a model. Settings left unset come from the model's
registry entry (``configs/models/NAME.yaml``, ``sampling:``), then from
:class:`harness.models.base.GenerationSettings`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.records import Problem


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("codeeval", "codeeval-rl: evaluate code written by language models")
    group.addoption(
        "--llm-model",
        dest="llm_model",
        default=None,
        metavar="NAME",
        help="generate samples with this model: a registry name (smollm2-135m, "
        "qwen2.5-coder-1.5b, ...), a hub name, a local folder, or openai:URL#MODEL",
    )
    group.addoption(
        "--llm-n", dest="llm_n", type=int, default=1, metavar="N", help="samples per problem"
    )
    group.addoption(
        "--llm-temperature",
        dest="llm_temperature",
        type=float,
        default=None,
        metavar="T",
        help="sampling temperature; 0 is greedy (default: the model's registry entry)",
    )
    group.addoption(
        "--llm-top-p",
        dest="llm_top_p",
        type=float,
        default=None,
        metavar="P",
        help="nucleus sampling mass (default: the model's registry entry)",
    )
    group.addoption(
        "--llm-max-new-tokens",
        dest="llm_max_new_tokens",
        type=int,
        default=None,
        metavar="N",
        help="tokens generated per sample at most (default: the model's registry entry)",
    )
    group.addoption(
        "--llm-seed", dest="llm_seed", type=int, default=0, metavar="SEED", help="sampling seed"
    )
    group.addoption(
        "--llm-prompt-style",
        dest="llm_prompt_style",
        choices=("chat", "completion"),
        default=None,
        help="chat: an instruction through the chat template, answered in markdown; completion: "
        "the model continues the prompt (default: the model's registry entry)",
    )
    group.addoption(
        "--llm-batch-size",
        dest="llm_batch_size",
        type=int,
        default=8,
        metavar="N",
        help="sequences per forward pass (transformers) or requests in flight (openai)",
    )
    group.addoption(
        "--llm-backend",
        dest="llm_backend",
        choices=("auto", "transformers", "vllm", "vllm-server"),
        default="auto",
        help="for local weights: the registry's choice (auto: vLLM when it runs here, else "
        "transformers), or force transformers, vllm (in process) or vllm-server (a server the "
        "harness starts and stops)",
    )
    group.addoption(
        "--llm-dtype",
        dest="llm_dtype",
        choices=("float32", "float16", "bfloat16", "auto"),
        default="float32",
        help="weights' dtype for the transformers backend (default float32)",
    )


def settings_from_config(config: pytest.Config) -> Any:
    """The run's :class:`GenerationSettings`: options, then the registry's defaults."""
    from harness.models.base import GenerationSettings
    from harness.models.registry import resolve_model

    spec = resolve_model(config.getoption("llm_model"))
    defaults = GenerationSettings()
    chosen: dict[str, Any] = {}
    for field in ("temperature", "top_p", "max_new_tokens"):
        value = config.getoption(f"llm_{field}")
        chosen[field] = (
            value if value is not None else spec.sampling.get(field, getattr(defaults, field))
        )
    try:
        return GenerationSettings(
            n=config.getoption("llm_n"),
            seed=config.getoption("llm_seed"),
            prompt_style=config.getoption("llm_prompt_style"),
            batch_size=config.getoption("llm_batch_size"),
            **chosen,
        )
    except ValueError as err:
        raise pytest.UsageError(str(err)) from err


@contextlib.contextmanager
def _visible_output(config: pytest.Config) -> Iterator[None]:
    """Let the progress bar through pytest's output capture."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        yield
        return
    with capture.global_and_fixture_disabled():
        yield


def _cached_samples(
    name: str, problems: list[Problem], settings: Any, out_dir: Path
) -> Path | None:
    """The samples file when it already holds every sample this run asks for, else None.

    Every backend records its registry entry's name (``ModelSpec.name``); a file written by
    another model or with other settings raises :class:`harness.generate.ResumeMismatch`.
    """
    from harness.generate import read_done, samples_path
    from harness.models.registry import resolve_model

    path = samples_path(out_dir)
    done = read_done(path, resolve_model(name).name, settings.to_json())
    wanted = {(p.task_id, str(j)) for p in problems for j in range(settings.n)}
    return path if wanted <= done else None


@pytest.hookimpl(trylast=True, optionalhook=True)  # its spec is codeeval's (may be -p no:codeeval)
def pytest_llm_generate_samples(
    config: pytest.Config, problems: list[Problem], out_dir: Path
) -> Path | None:
    """Generate ``--llm-n`` samples per problem with ``--llm-model`` into OUT/samples.jsonl."""
    name = config.getoption("llm_model")
    if not name:
        return None
    from harness.logs import quiet_third_parties

    # Before the first import of vLLM or transformers: their subprocesses read it at start.
    quiet_third_parties(verbose=config.get_verbosity() > 0)
    from harness.generate import ResumeMismatch, generate_samples
    from harness.models.backends import make_backend
    from harness.models.registry import RegistryError

    try:
        # The registry entry and the settings, then what the samples file already holds:
        # a malformed entry or a file of another model stops the run before a model loads,
        # and nothing loads when every answer is there.
        settings = settings_from_config(config)
        cached = _cached_samples(name, problems, settings, out_dir)
        if cached is not None:
            with _visible_output(config):
                print(
                    f"codeeval: {len(problems)} problems x {settings.n} samples of {name} are "
                    f"all in {cached}: no model loaded",
                    file=sys.stderr,
                )
            return cached
        start = time.perf_counter()
        backend = make_backend(
            name, backend=config.getoption("llm_backend"), dtype=config.getoption("llm_dtype")
        )
        loaded = time.perf_counter()
        try:
            with _visible_output(config):
                path = generate_samples(problems, backend, settings.n, settings, out_dir)
        finally:
            # vLLM's engine (or the server the harness started) holds cores and memory that
            # the evaluation needs next.
            close = getattr(backend, "close", None)
            if close is not None:
                close()
        with _visible_output(config):
            # Written while capture is off: the hook may run before the terminal reporter.
            print(
                f"codeeval: {len(problems)} problems x {settings.n} samples from {backend.name} "
                f"({type(backend).__name__}): model load {loaded - start:.1f} s, generation "
                f"{time.perf_counter() - loaded:.1f} s -> {path}",
                file=sys.stderr,
            )
    except (RegistryError, ResumeMismatch, FileNotFoundError) as err:
        raise pytest.UsageError(f"--llm-model {name}: {err}") from err
    return path
