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

# The siblings a file needs in its globals before it runs, as the server loads it (server.py).
_NEEDS: dict[str, tuple[str, ...]] = {"cleanup": ("processes",), "segment": ("processes",)}


@functools.cache
def server_module(name: str) -> ModuleType:
    """``inside/<name>.py``, loaded once by path, with the siblings it needs."""
    spec = importlib.util.spec_from_file_location(f"_codeeval_{name}", INSIDE_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update({need: server_module(need) for need in _NEEDS.get(name, ())})
    spec.loader.exec_module(module)
    return module


# How far a starved sample's time limit stretches in wall time (segment.py): the trusted side
# waits that long, plus slack, before it calls a reply lost.
MAX_STRETCH: float = server_module("segment").MAX_STRETCH
