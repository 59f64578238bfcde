"""Where codeeval-rl keeps what it caches between runs, and where its bundled configs are."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def bundled(*parts: str) -> Path:
    """A folder or file of the bundled configs (the ``configs`` package's data): the same
    files for an editable install, a wheel installed anywhere, and any working folder."""
    return Path(str(resources.files("configs").joinpath(*parts)))


# Where the dependency overlays (harness.deps) live; here, below both the sandbox that mounts
# them and harness.deps that fetches them.
DEPS_ROOT_ENV = "CODEEVAL_DEPS_DIR"


def deps_root() -> Path:
    """Where overlays live (``$CODEEVAL_DEPS_DIR``, else the user's cache folder)."""
    env = os.environ.get(DEPS_ROOT_ENV)
    if env:
        return Path(env).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return (Path(cache) / "codeeval" / "deps").resolve()


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
