"""Remote xdist workers: the controller ships the compiled suite through xdist's own channel.

A worker started with ``--tx ssh=...`` or ``--tx socket=...`` (or a ``popen`` whose
``python=`` runs elsewhere: a container, a mount namespace) shares no file system with the
controller, so it cannot collect the suite at the controller's path. xdist's ``--rsyncdir``
is deprecated (removed in pytest-xdist 4), so the plugin sends the suite itself:

- the controller packs the suite folder once per run (:func:`pack_suite`: every file but
  bytecode caches, zlib-compressed) and puts it in each such worker's ``workerinput``, the
  dictionary xdist sends when it starts the worker;
- before that, it asks the worker's interpreter which codeeval-rl it has installed
  (:func:`check_worker_version`): workers need the package, never the controller's files,
  and a different version is one clear usage error instead of odd verdicts;
- the worker unpacks the suite into a folder of its own (:func:`worker_suite_dir`), runs it
  in its own sandbox, and names its tests exactly as the controller's folder would name them
  (xdist requires every worker to collect the same node ids).

Plain local workers (``-n N``: ``popen`` without ``python=``/``chdir``) see the controller's
folder and keep using it, unless ``--llm-ship always``.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import shutil
import struct
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

ARCHIVE_KEY = "codeeval_suite_archive"
NODEID_KEY = "codeeval_nodeid_prefix"
DISTRIBUTION = "codeeval-rl"

MAGIC = b"codeeval-suite/1\n"
SKIPPED_DIRS = frozenset({"__pycache__", ".pytest_cache"})
_HEADER = struct.Struct("<IQ")  # name length, data length
_ARCHIVE = pytest.StashKey[bytes]()


class ArchiveError(ValueError):
    """The bytes are not a suite archive made by :func:`pack_suite` (or were damaged)."""


# -- packing ------------------------------------------------------------------------------------
def pack_suite(root: Path, level: int = 6) -> bytes:
    """The files of the suite folder ``root`` as one compressed archive (deterministic).

    Only regular files are packed, by path relative to ``root``; ``__pycache__`` (pytest's
    rewritten bytecode, specific to the controller's interpreter) is left out.
    """
    body = bytearray()
    for path in sorted(_files(root)):
        name = path.relative_to(root).as_posix().encode()
        data = path.read_bytes()
        body += _HEADER.pack(len(name), len(data)) + name + data
    return MAGIC + zlib.compress(bytes(body), level)


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for path in root.iterdir():
        if path.is_symlink():
            continue  # a compiled suite has none; never follow one out of the folder
        if path.is_dir():
            if path.name not in SKIPPED_DIRS:
                found += _files(path)
        elif path.is_file():
            found.append(path)
    return found


def unpack_suite(archive: bytes, dest: Path) -> list[Path]:
    """Write the files of ``archive`` under ``dest`` (created); returns the paths written."""
    files = read_archive(archive)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        path = dest.joinpath(*PurePosixPath(name).parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def read_archive(archive: bytes) -> dict[str, bytes]:
    """The ``{relative name: content}`` of an archive, checked: names stay inside the folder."""
    if not archive.startswith(MAGIC):
        raise ArchiveError("not a codeeval-rl suite archive (wrong header)")
    try:
        body = zlib.decompress(archive[len(MAGIC) :])
    except zlib.error as exc:
        raise ArchiveError(f"damaged suite archive: {exc}") from None
    files: dict[str, bytes] = {}
    at = 0
    while at < len(body):
        if at + _HEADER.size > len(body):
            raise ArchiveError("damaged suite archive: truncated entry header")
        name_len, data_len = _HEADER.unpack_from(body, at)
        at += _HEADER.size
        end = at + name_len + data_len
        if end > len(body):
            raise ArchiveError("damaged suite archive: truncated entry")
        try:
            name = body[at : at + name_len].decode()
        except UnicodeDecodeError:
            raise ArchiveError("damaged suite archive: a name is not UTF-8") from None
        _check_name(name)
        files[name] = bytes(body[at + name_len : end])
        at = end
    return files


def _check_name(name: str) -> None:
    parts = PurePosixPath(name).parts
    if (
        not parts
        or name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or any(p in ("", ".", "..") for p in name.split("/"))
    ):
        raise ArchiveError(f"suite archive holds a path outside its folder: {name!r}")


# -- the controller -----------------------------------------------------------------------------
def installed_version() -> str | None:
    """The installed codeeval-rl's version here (None when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None


# Run in the worker's interpreter before xdist starts pytest there (its own sys.path).
_VERSION_PROBE = f"""
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    found = version({DISTRIBUTION!r})
except PackageNotFoundError:
    found = None
channel.send((found, sys.executable, sys.version.split()[0]))
"""


def check_worker_version(gateway: Any, expected: str | None) -> None:
    """A usage error unless the worker's codeeval-rl is ``expected`` (the controller's)."""
    channel = gateway.remote_exec(_VERSION_PROBE)
    found, executable, python = channel.receive(timeout=120)
    channel.waitclose(timeout=120)
    if found == expected:
        return
    spec = str(gateway.spec).removeprefix("execmodel=main_thread_only//")  # xdist adds it
    where = f"xdist worker {gateway.id} ({spec}: {executable}, Python {python})"
    want = f"codeeval-rl=={expected}" if expected else "codeeval-rl"
    if found is None:
        raise pytest.UsageError(
            f"codeeval-rl is not installed on {where}: install {want} there (a worker needs "
            "the package, not the controller's files)"
        )
    raise pytest.UsageError(
        f"codeeval-rl {found} on {where}, but {expected} on the controller: install {want} "
        "on the worker (verdicts must come from the same code)"
    )


def shares_files(spec: Any) -> bool:
    """Whether a worker of this xdist spec surely sees the controller's files: a plain local
    ``popen`` (same machine, same interpreter, no ``chdir``, no ``via`` proxy)."""
    return bool(spec.popen and not spec.python and not spec.chdir and not spec.via)


def nodeid_prefix(config: pytest.Config, root: Path) -> str:
    """What pytest on the controller puts before a suite file's path in its node id.

    Relative to the rootdir when the suite lies inside it, else relative to the suite folder
    itself (an initial path: pytest's rule for files outside the rootdir).
    """
    try:
        rel = root.resolve().relative_to(config.rootpath)
    except ValueError:
        return ""
    return "" if str(rel) == "." else rel.as_posix() + "/"


def prepare_node(config: pytest.Config, node: Any, root: Path) -> None:
    """Controller side of ``pytest_configure_node``: ship the suite to a worker that needs it."""
    after_node_setup(config)
    # Every worker names tests from the controller's rootdir: a local worker's own rootdir can
    # differ (pytest derives it from the arguments that exist as paths when it starts, and the
    # out folder exists by then), and a remote one's always does.
    node.workerinput[NODEID_KEY] = nodeid_prefix(config, root)
    mode = config.getoption("llm_ship", "auto")
    spec = node.gateway.spec
    if mode == "never" or (mode == "auto" and shares_files(spec)):
        return
    expected = installed_version()
    check_worker_version(node.gateway, expected)
    archive = config.stash.get(_ARCHIVE, None)
    if archive is None:  # packed once, sent to every worker that needs it
        archive = config.stash[_ARCHIVE] = pack_suite(root)
    node.workerinput[ARCHIVE_KEY] = archive


def report_empty_worker(config: pytest.Config, node: Any, ids: list[str], root: Path) -> None:
    """``pytest_xdist_node_collection_finished``: a worker that found no tests in a suite with
    samples did not see the controller's folder (it was not shipped one): say so."""
    if ids or ARCHIVE_KEY in node.workerinput:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"codeeval: xdist worker {node.gateway.id} found no tests in {root}: it does not "
            "see the controller's files; let the plugin ship them (--llm-ship auto or always)",
            yellow=True,
        )


# -- the worker's command line -------------------------------------------------------------------
_SAVED_PARAMS = pytest.StashKey[Any]()


def needs_relocated_args(spec: Any) -> bool:
    """xdist rewrites the arguments of these workers against its rsync roots
    (``make_reltoroot``) and stops on any that names an existing file outside them."""
    return bool(not spec.popen or spec.chdir)


def worker_args(config: pytest.Config, args: list[str]) -> list[str]:
    """The controller's arguments as a worker that does not share its files should get them.

    ``--llm-samples samples.jsonl`` names a file that exists here: xdist would stop with
    "arg samples.jsonl not relative to an rsync root". An option's file value is joined to it
    (``--llm-samples=samples.jsonl``: the worker parses the same options, and only the
    controller reads the file); a test path on its own is left out, as a worker collects the
    shipped suite instead.
    """
    actions = getattr(getattr(config._parser, "optparser", None), "_option_string_actions", {})
    out: list[str] = []
    for arg in args:
        if not _exists(arg):
            out.append(arg)
            continue
        prev = out[-1] if out else ""
        action = actions.get(prev)
        takes_value = action is not None and action.nargs in (None, 1, "?")
        if takes_value and prev.startswith("--"):
            out[-1] = f"{prev}={arg}"
        elif takes_value:
            out[-1] = prev + arg  # -cFILE: argparse's attached form for short options
        # else: a test path; the worker runs the shipped suite instead
    return out


def _exists(arg: str) -> bool:
    try:
        return Path(arg.split("::")[0]).exists()
    except OSError:
        return False


def before_node_setup(config: pytest.Config, gateway: Any) -> None:
    """``pytest_xdist_newgateway``: give xdist worker-safe arguments for this node's setup,
    and the plugins a worker does without (:mod:`plugin.startup`).

    xdist reads the arguments from ``config.invocation_params`` in ``WorkerController.setup``
    and calls ``pytest_configure_node`` right after; :func:`after_node_setup` puts the
    controller's own back there.
    """
    from plugin.startup import worker_plugin_args

    params = config.invocation_params
    args = [str(a) for a in params.args]
    if needs_relocated_args(gateway.spec):
        args = worker_args(config, args)
    args = worker_plugin_args(config, args)
    if args == [str(a) for a in params.args]:
        return
    config.stash[_SAVED_PARAMS] = params
    config.invocation_params = dataclasses.replace(params, args=tuple(args))


def after_node_setup(config: pytest.Config) -> None:
    saved = config.stash.get(_SAVED_PARAMS, None)
    if saved is not None:
        config.invocation_params = saved
        del config.stash[_SAVED_PARAMS]


# -- the worker ---------------------------------------------------------------------------------
def worker_suite_dir(config: pytest.Config) -> str | None:
    """The suite folder this worker runs: a shipped copy unpacked here, or the controller's."""
    workerinput: dict[str, Any] = config.workerinput  # type: ignore[attr-defined]
    archive = workerinput.get(ARCHIVE_KEY)
    suite_dir = workerinput.get("codeeval_suite_dir")
    if archive is not None:
        from plugin.lookup import SHIPPED_SUITE

        config.stash[SHIPPED_SUITE] = True
        home = _own_folder(config, workerinput)
        suite_dir = str(home / "suite")
        try:
            unpack_suite(archive, Path(suite_dir))
        except ArchiveError as exc:
            raise pytest.UsageError(f"xdist worker {workerinput.get('workerid')}: {exc}") from None
    if suite_dir and NODEID_KEY in workerinput:
        names = SuiteNodeIds(Path(suite_dir).resolve(), workerinput[NODEID_KEY])
        config.pluginmanager.register(names, "codeeval-suite-nodeids")
    return suite_dir


def _own_folder(config: pytest.Config, workerinput: dict[str, Any]) -> Path:
    """An empty folder of this worker's own under ``$TMPDIR``, removed when its pytest ends.

    Its path is the same on every run of the same controller folder and worker id: the
    assertion-rewritten checks are cached by path and source (harness.pipeline.verdicts), so a rerun
    skips rewriting every module. A lock keeps two concurrent runs out of one folder (the
    second gets a fresh one).
    """
    base = Path(tempfile.gettempdir()) / "codeeval-suites"
    base.mkdir(mode=0o700, exist_ok=True)
    key = hashlib.sha256(str(workerinput.get("codeeval_suite_dir")).encode()).hexdigest()[:16]
    folder = base / f"{key}-{workerinput.get('workerid', 'gw')}"
    lock = open(f"{folder}.lock", "w")  # noqa: SIM115 - held until the worker's pytest ends
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        folder = Path(tempfile.mkdtemp(prefix=f"{folder.name}-", dir=base))
    else:
        config.add_cleanup(lock.close)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    return folder


class SuiteNodeIds:
    """Collects the suite under the node ids the controller gives its files (every worker
    agrees: xdist requires it), wherever this worker's copy lies."""

    def __init__(self, root: Path, prefix: str):
        self.root = root
        self.prefix = prefix

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: Path, parent: Any) -> Any:
        try:
            rel = module_path.resolve().relative_to(self.root)
        except ValueError:
            return None
        if not module_path.name.startswith("test_"):
            return None
        nodeid = self.prefix + rel.as_posix()
        if parent.config.getoption("llm_per_case", False):
            return pytest.Module.from_parent(parent, path=module_path, nodeid=nodeid)
        from plugin.items import GeneratedModule

        return GeneratedModule.from_parent(parent, path=module_path, nodeid=nodeid)
