"""The pytest plugin (entry points ``plugin.plugin``, ``plugin.generation``, ``plugin.gate``).

pytest rewrites the asserts of every module of a distribution that registers a plugin, and
caches the rewritten bytecode beside the source. Where it cannot write that cache
(``PYTHONDONTWRITEBYTECODE=1``, as in most container images, or an install the user cannot
write to), it parses and compiles each of them again in every process: about 0.2 s of CPU at
each xdist worker's start and 0.3-0.5 s at the controller's (docs/scaling.md). The product's
modules assert nothing a user reads (generated checks are rewritten by
``harness.pipeline.verdicts`` with a cache of its own), so this package's first import, which
pytest makes before any other of them, takes them off pytest's list: they are imported as
Python imports them, from their ``.pyc``.
"""

from __future__ import annotations

import sys

# The distribution's top-level packages (pyproject.toml's packages.find include).
PRODUCT_PACKAGES = frozenset({"configs", "harness", "plugin", "suites", "trainers"})


def leave_product_modules_to_python() -> None:
    """Unmark the product's modules in pytest's assertion-rewriting import hook, if installed.

    The hook keeps the names it rewrites in a set; without it (another pytest, ``--assert
    plain``) nothing changes and every module still imports.
    """
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if not isinstance(marked, set):
            continue
        ours = {name for name in marked if name.partition(".")[0] in PRODUCT_PACKAGES}
        if ours:
            marked.difference_update(ours)
            cache = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(cache, dict):
                cache.clear()


leave_product_modules_to_python()
