"""Quiet third-party output around a model run: one place, called before a backend is made.

vLLM, PyTorch, transformers and huggingface_hub each print their own INFO and WARNING lines,
per-layer dtype notes and deprecation warnings, some of them from vLLM's EngineCore and worker
subprocesses, where no logging call of ours can reach. Those subprocesses read their settings
from the environment when they start, so :func:`quiet_third_parties` sets environment variables
(inherited by every child) as well as this process's loggers and warning filters. Our own
progress bars and one-line notes do not go through these libraries and stay.

Settings a person exported already win (``os.environ.setdefault``), and ``verbose`` (pytest's
``-v``, ``codeeval difficulty -v``) leaves everything as the libraries have it.
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterable

# Environment read by the libraries at import time, in this process and in their children.
QUIET_ENVIRONMENT = {
    "VLLM_LOGGING_LEVEL": "ERROR",  # vLLM's INFO/WARNING lines, all processes
    "VLLM_CONFIGURE_LOGGING": "1",  # vLLM applies that level to its own handler
    "TORCH_CPP_LOG_LEVEL": "ERROR",  # c10's "[W ...] Warning: NUMA binding ..." lines
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # download bars (runs are offline: files are cached)
    "TOKENIZERS_PARALLELISM": "false",  # the fork warning of HF tokenizers in subprocesses
    # Bars that pass no ``disable`` (transformers' GGUF conversion); ours always pass one, which
    # wins over this default. tqdm reads it at import: our callers come before that import.
    "TQDM_DISABLE": "1",
}

# Loggers of this process, for libraries imported before the environment was set.
QUIET_LOGGERS = ("vllm", "transformers", "huggingface_hub", "torch", "accelerate")

# Known warnings of the libraries (not of our code): (category, message prefix). A prefix may
# not contain a comma or a colon (PYTHONWARNINGS separates filters and fields with them).
KNOWN_WARNINGS = (
    # vLLM's CPU build touches a deprecated torch name, in each of its processes.
    ("FutureWarning", "`torch.distributed.reduce_op` is deprecated"),
    # The shared memory vLLM's engine leaves when it is stopped, reported at exit.
    ("UserWarning", "resource_tracker"),
)


def quiet_third_parties(verbose: bool = False) -> None:
    """Silence the libraries' logs below ERROR, their bars and known warnings, unless ``verbose``.

    Idempotent; call it before the first import of vLLM or transformers where possible (their
    children read the environment at start, this process's loggers are set either way)."""
    if verbose:
        return
    for name, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    _add_python_warnings(f"ignore:{prefix}:{category}" for category, prefix in KNOWN_WARNINGS)
    for category, prefix in KNOWN_WARNINGS:
        warnings.filterwarnings(
            "ignore", message=re.escape(prefix), category=getattr(builtins, category)
        )
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.level, logging.ERROR))
    _quiet_loaded_transformers()


def _add_python_warnings(filters: Iterable[str]) -> None:
    # Children parse PYTHONWARNINGS at start-up. Ours go last, once each: later filters win,
    # but only for these few messages; a person's own filters keep the rest.
    current = [f for f in os.environ.get("PYTHONWARNINGS", "").split(",") if f]
    added = [f for f in filters if f not in current]
    if added:
        os.environ["PYTHONWARNINGS"] = ",".join(current + added)


def _quiet_loaded_transformers() -> None:
    # transformers reads TRANSFORMERS_VERBOSITY once, at import; its checkpoint-loading bar
    # has a switch of its own. Only when loaded already: importing it costs seconds.
    module = sys.modules.get("transformers")
    if module is None:
        return
    module.utils.logging.set_verbosity_error()
    module.utils.logging.disable_progress_bar()
