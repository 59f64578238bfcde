"""The fork server's own files (``inside/``), loaded by path on the trusted side.

They are stdlib only and run inside the sandbox, where no package holds them (the server loads
its siblings by path, so a candidate cannot import them). The trusted side reuses a few of
their pieces, the same code rather than a copy of it, and loads the files the same way: they
are the server's data, not modules of the trusted side's packages.
"""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

from harness.sandbox.bwrap import INSIDE_DIR


@functools.cache
def server_module(name: str) -> ModuleType:
    """``inside/<name>.py``, loaded once by path."""
    spec = importlib.util.spec_from_file_location(f"_codeeval_{name}", INSIDE_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# How far a starved sample's time limit stretches in wall time (segment.py): the trusted side
# waits that long, plus slack, before it calls a reply lost.
MAX_STRETCH: float = server_module("segment").MAX_STRETCH
