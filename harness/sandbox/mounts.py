"""The mount plan: bwrap options that show some paths and hide others, at most one mount each.

Every bubblewrap view of the disk is built with :func:`mount_plan`: the fork server's
(:func:`harness.sandbox.bwrap.view_args`) and the compiled languages' warm sandbox
(harness/languages/view.py). Nothing here runs bubblewrap; it only reads the disk to decide.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

__all__ = ["mount_plan", "parents", "under"]


def under(path: str, parent: str) -> bool:
    """Whether ``path`` is ``parent`` or lies inside it (by name, nothing resolved)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def parents(path: str) -> list[str]:
    """Strict ancestors of an absolute path, outermost first, without ``/``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


# Kinds of entries in the mount plan; the first three show an empty (fresh) folder.
_HIDE, _COVER, _FRESH, _KEEP, _LINK, _DIR = "hide", "cover", "fresh", "keep", "link", "dir"
_EMPTY = {_HIDE, _COVER, _FRESH, _DIR}
_MAX_MOUNTS = 400  # a sane bound for covering a closed folder entry by entry


def _nearest(marks: dict[str, str], path: str, include_self: bool = True) -> str | None:
    """The mark deciding what ``path`` shows: its own, else its nearest marked ancestor's."""
    if include_self and path in marks:
        return marks[path]
    for parent in reversed(parents(path)):
        if parent in marks:
            return marks[parent]
    return marks.get("/")  # "/" is marked only when the root starts empty


def _closed(path: str, need: int, all_of: bool = False) -> bool:
    """Whether other users lack the permission bit(s) ``need`` on ``path``."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return (mode & need) != need if all_of else not mode & need


def mount_plan(
    hidden: Iterable[str], keep: Iterable[str], drop: bool, empty_root: bool = False
) -> list[str]:
    """bwrap options that hide ``hidden`` and keep ``keep`` visible, after :func:`base_args`.

    ``empty_root``: the root starts empty (after :func:`isolation_args`, not :func:`base_args`):
    only ``keep`` shows, and a hidden path matters only inside a kept one.

    ``/tmp`` is already a fresh tmpfs. Every path gets at most one mount and the options come
    parents first, so the deepest mount on a path decides what it shows: a hidden folder, a
    kept folder bound back inside it, a hidden folder inside that again. Folders bubblewrap
    must create on the way to a kept path are made 0755 (its own mkdir follows the umask).
    With ``drop`` (the child becomes ``nobody``), a real folder on the way that others cannot
    enter is covered with a tmpfs, and a kept folder others cannot read is rebuilt from its
    entries, so that ``nobody`` reaches every kept path.
    """
    keep = list(keep)
    marks: dict[str, str] = {"/tmp": _FRESH}
    if empty_root:
        marks["/"] = _FRESH
    for path in hidden:
        if empty_root and not any(under(path, k) for k in keep):
            continue  # not shown anyway: a mount would only make its name appear
        marks[path] = _HIDE
    todo = sorted(set(keep), key=lambda p: (p.count("/"), p))
    while todo and len(marks) < _MAX_MOUNTS:
        path = todo.pop(0)
        if path == "/" or path in marks or not os.path.lexists(path):
            continue  # a hidden path equal to a kept one stays hidden
        _mark_kept(marks, path, drop, empty_root)
    _mark_made_folders(marks)
    return _plan_args(marks)


def _mark_kept(marks: dict[str, str], path: str, drop: bool, empty_root: bool) -> None:
    """Mark what makes kept ``path`` show (and, with ``drop``, reachable for ``nobody``)."""
    if drop:
        for parent in parents(path):
            if _nearest(marks, parent) not in _EMPTY and _closed(parent, stat.S_IXOTH):
                marks[parent] = _COVER
    if drop and os.path.isdir(path) and _closed(path, stat.S_IROTH | stat.S_IXOTH, all_of=True):
        _rebuild(marks, path)
    elif _nearest(marks, path, include_self=False) in _EMPTY:
        marks[path] = _LINK if empty_root and os.path.islink(path) else _KEEP


def _rebuild(marks: dict[str, str], path: str) -> None:
    """Others cannot list or enter kept folder ``path``: an empty 0755 folder with each of its
    entries bound in."""
    marks[path] = _COVER
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        entries = []
    for name in entries:
        entry = os.path.join(path, name)
        if entry not in marks:
            marks[entry] = _LINK if os.path.islink(entry) else _KEEP


def _mark_made_folders(marks: dict[str, str]) -> None:
    """Folders bubblewrap creates on the way to any mount point: 0755, made before it does."""
    for path in list(marks):
        for parent in parents(path):
            if parent not in marks and _nearest(marks, parent) in _EMPTY:
                marks[parent] = _DIR


def _plan_args(marks: dict[str, str]) -> list[str]:
    """The marks as bwrap options, parents first (the root's own mark is implied)."""
    args: list[str] = []
    for path in sorted(marks, key=lambda p: (p.count("/"), p)):
        kind = marks[path]
        if path == "/":
            continue
        if kind == _HIDE:
            args += _hide(path)
        elif kind == _COVER:
            args += ["--tmpfs", path]  # a tmpfs root is 0755
        elif kind == _DIR:
            args += ["--perms", "0755", "--dir", path]
        elif kind == _LINK:
            args += ["--symlink", os.readlink(path), path]
        elif kind == _KEEP:
            args += ["--ro-bind", path, path]
    return args


def _hide(path: str) -> list[str]:
    """Arguments that make ``path`` empty (a folder) or unreadable (a file)."""
    if os.path.isdir(path):
        return ["--tmpfs", path]
    return ["--ro-bind", "/dev/null", path]
