"""Products built on the core find their way in here, the way pytest finds its plugins.

The core (compile, runtime, verdicts, reward, the pipeline) never imports a product such as
the compiled languages or the plus-case generator. A product registers what it adds (a
language, a problem step) in a registry of the layer below it when its package is imported,
and the core calls :func:`load_extensions` before it consults a registry. That imports:

* the bundled products (:data:`BUNDLED`), and
* every module named by an installed distribution under the ``codeeval.extensions`` entry-point
  group, so a third-party package can add a language or a step without editing this project::

      [project.entry-points."codeeval.extensions"]
      kotlin = "codeeval_kotlin"

Loading is idempotent and cheap after the first call.
"""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "codeeval.extensions"
# The products shipped with the harness; each registers itself when imported.
BUNDLED: tuple[str, ...] = ("harness.languages", "harness.plus", "harness.stdio")

_loaded = False
_lock = threading.RLock()  # a product may consult a registry while it is being imported


class ExtensionError(ImportError):
    """An extension named by an entry point could not be imported."""


def load_extensions() -> None:
    """Import the bundled products and the installed extensions (once per process)."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        for name in BUNDLED:
            importlib.import_module(name)
        for point in entry_points(group=ENTRY_POINT_GROUP):
            try:
                point.load()
            except Exception as exc:  # a broken third-party package names itself
                raise ExtensionError(
                    f"codeeval extension {point.name!r} ({point.value}) failed to import: "
                    f"{type(exc).__name__}: {exc}; uninstall it or fix it"
                ) from exc
        _loaded = True
