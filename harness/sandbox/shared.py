"""One warm sandbox per process and settings, shared by every suite and caller."""

from __future__ import annotations

import threading

from harness.sandbox.api import SandboxSettings
from harness.sandbox.bwrap import bwrap_available
from harness.sandbox.sandbox import Sandbox

# Keyed by the settings and the mode they resolve to (CODEEVAL_SANDBOX may change it).
_sandboxes: dict[tuple[SandboxSettings, bool], Sandbox] = {}
_sandbox_lock = threading.Lock()


_MAX_SHARED_SANDBOXES = 4


def shared_sandbox(settings: SandboxSettings) -> Sandbox:
    """One sandbox (one fork server) per process and settings, reused by every suite.

    At most a few stay open (the least recently used is closed): a trainer scores batches
    in many suite folders, and each folder is hidden from its own sandbox. A closed sandbox
    that is used again simply starts a new server.
    """
    key = (settings, bwrap_available() if settings.use_bwrap is None else settings.use_bwrap)
    with _sandbox_lock:
        sandbox = _sandboxes.pop(key, None) or Sandbox(settings)
        _sandboxes[key] = sandbox  # most recently used last
        while len(_sandboxes) > _MAX_SHARED_SANDBOXES:
            _sandboxes.pop(next(iter(_sandboxes))).close()
        return sandbox
