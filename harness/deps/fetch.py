"""``codeeval deps fetch``: install an allow-list's pins into its overlay folder with pip.

The only step of codeeval-rl that uses the network (or a local wheel folder with
``--find-links DIR --no-index``). pip installs into a temporary folder beside the overlay,
which is made readable by everyone (the sandbox's child runs as ``nobody``), marked complete
and renamed into place: a fetch that fails or is interrupted leaves no half overlay behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.deps.overlay import (
    MARKER,
    SITE,
    canonical,
    deps_root,
    interpreter_tag,
    overlay_dir,
    ready_site,
)

PIP_TIMEOUT_S = 1800


class FetchError(RuntimeError):
    """pip could not install the pins (the message has pip's own words)."""


def pip_command(
    pins: Sequence[str],
    target: Path,
    report: Path,
    find_links: Sequence[str] = (),
    no_index: bool = False,
    index_url: str | None = None,
) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "install", "--target", str(target), "--report", str(report)]
    cmd += ["--no-input", "--disable-pip-version-check", "--no-warn-script-location"]
    # Wheels only: no package's build code runs here, and the same files land on every machine.
    cmd += ["--only-binary", ":all:"]
    for link in find_links:
        cmd += ["--find-links", str(link)]
    if no_index:
        cmd.append("--no-index")
    if index_url:
        cmd += ["--index-url", index_url]
    return cmd + list(pins)


def _open_to_all(folder: Path) -> None:
    """Folders 0755 and files a+r: the sandbox's child (``nobody``) must read them all."""
    for here, _dirs, files in os.walk(folder):
        os.chmod(here, 0o755)
        for name in files:
            path = os.path.join(here, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444)


def _installed(report: Path) -> list[str]:
    """``name==version`` of every distribution pip installed (from its ``--report``)."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    found = []
    for item in data.get("install", []):
        meta = item.get("metadata", {})
        if meta.get("name") and meta.get("version"):
            found.append(f"{meta['name']}=={meta['version']}")
    return sorted(found)


def fetch(
    allowlist: Mapping[str, str],
    *,
    root: Path | None = None,
    find_links: Sequence[str] = (),
    no_index: bool = False,
    index_url: str | None = None,
    force: bool = False,
) -> Path:
    """The allow-list's overlay ``site`` folder, installed now unless it is already there."""
    root = root or deps_root()
    allowlist = canonical(allowlist)
    if not force:
        ready = ready_site(allowlist, root)
        if ready is not None:
            return ready
    final = overlay_dir(allowlist, root)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=root))
    try:
        pins = sorted(set(allowlist.values()))
        report = Path(tempfile.mkstemp(prefix="pip-report-", suffix=".json")[1])
        cmd = pip_command(pins, work / SITE, report, find_links, no_index, index_url)
        env = {**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"}
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False, env=env
            )
            installed = _installed(report)
        finally:
            report.unlink(missing_ok=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
            raise FetchError(f"pip could not install {' '.join(pins)}:\n" + "\n".join(tail))
        marker = {
            "allowlist": dict(sorted(allowlist.items())),
            "interpreter": interpreter_tag(),
            "installed": installed,
        }
        (work / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
        _open_to_all(work)
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final / SITE
