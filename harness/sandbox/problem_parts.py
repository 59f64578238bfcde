"""A problem's compiled parts for the fork server, built on the trusted side and kept on disk.

The server runs a problem's inputs as code objects. They are compiled here, once per problem
and Python, by the server's own function (``inside/problem_code.py``), and kept as
``cache_dir()/inputs/<key>.marshal``: a later run, a second worker or a restarted server reads
them back (``marshal``, about a twentieth of ``compile``'s time) instead of compiling them
again. The key covers everything the parts are made of (the problem's key, which hashes its
entry point, setup, helpers, dependency folder and every case's code) and what makes them
(this Python, and the source of the function that builds them).
"""

from __future__ import annotations

import hashlib
import marshal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.paths import cache_dir, write_cache_file
from harness.sandbox.bwrap import INSIDE_DIR
from harness.sandbox.server_files import server_module

Parts = tuple[bytes, bytes]  # (the child's part, the judge's part: b"" without one)


def _maker_tag() -> bytes:
    source = (INSIDE_DIR / "problem_code.py").read_bytes()
    return f"{sys.version}\0{sys.implementation.cache_tag}\0".encode() + source


_TAG = hashlib.sha256(_maker_tag()).hexdigest()[:16]


def cache_file(key: str) -> Path:
    """Where the parts of the problem whose key is ``key`` are kept for this Python."""
    return cache_dir() / "inputs" / f"{key}-{_TAG}.marshal"


def problem_parts(key: str, definition: Callable[[], dict[str, Any]]) -> Parts:
    """The compiled parts of the problem whose key is ``key`` (read from the cache, else built
    from ``definition()``, the server's definition of it, and cached)."""
    path = cache_file(key)
    try:
        parts = marshal.loads(path.read_bytes())
        if type(parts) is tuple and len(parts) == 2 and all(type(p) is bytes for p in parts):
            return parts
    except (OSError, ValueError, EOFError, TypeError):
        pass
    parts = server_module("problem_code").compiled_parts(definition())
    write_cache_file(path, marshal.dumps(parts))
    return parts
