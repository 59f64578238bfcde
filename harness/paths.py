"""Where codeeval-rl keeps what it caches between runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The root cache folder: ``$CODEEVAL_CACHE`` or ``~/.cache/codeeval``.

    It holds converted models, reference calibrations, the analyzer cache and compiled checks;
    everything in it can be deleted and is rebuilt on the next run.
    """
    return Path(os.environ.get("CODEEVAL_CACHE") or Path.home() / ".cache" / "codeeval")
