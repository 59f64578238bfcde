"""Where codeeval-rl keeps what it caches between runs, and where its bundled configs are."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def bundled(*parts: str) -> Path:
    """A folder or file of the bundled configs (the ``configs`` package's data): the same
    files for an editable install, a wheel installed anywhere, and any working folder."""
    return Path(str(resources.files("configs").joinpath(*parts)))


def cache_dir() -> Path:
    """The root cache folder: ``$CODEEVAL_CACHE`` or ``~/.cache/codeeval``.

    It holds converted models, reference calibrations, the analyzer cache and compiled checks;
    everything in it can be deleted and is rebuilt on the next run.
    """
    return Path(os.environ.get("CODEEVAL_CACHE") or Path.home() / ".cache" / "codeeval")


def write_cache_file(path: Path, data: bytes | str) -> bool:
    """Write a cache file whole or not at all (another process may read it meanwhile).

    Returns False when it could not be written: a read-only cache only costs time.
    """
    partial = path.with_suffix(f"{path.suffix}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            partial.write_text(data)
        else:
            partial.write_bytes(data)
        partial.replace(path)
    except OSError:
        return False
    return True
