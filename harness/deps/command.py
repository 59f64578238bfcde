"""``codeeval deps fetch|show``: the command line of :mod:`harness.deps`.

```
codeeval deps fetch classeval                        # from PyPI (the network)
codeeval deps fetch classeval --find-links WHEELS --no-index   # offline, from a wheel folder
codeeval deps fetch --allowlist deps.txt             # an allow-list file of your own
codeeval deps show classeval                         # the allow-list and where its overlay is
```
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

from harness.deps.fetch import FetchError, fetch
from harness.deps.overlay import deps_root, overlay_dir, read_marker, ready_site
from harness.deps.pins import PinError, check_allowlist, read_allowlist

ATTRIBUTE = "DEPENDENCIES"  # a suite module's allow-list (import name -> dist==version)


def suite_allowlist(name: str) -> dict[str, str]:
    """The allow-list a registered suite declares (empty: it needs no third-party modules)."""
    from suites import registry

    key = name.lower()
    loader = registry._REGISTRY.get(registry._ALIASES.get(key, key))
    if loader is None:
        known = ", ".join(registry.known_suites())
        raise PinError(f"unknown suite {name!r} (known: {known})")
    module_name = loader.split(":", 1)[0] if isinstance(loader, str) else loader.__module__
    module = importlib.import_module(module_name)
    return check_allowlist(getattr(module, ATTRIBUTE, {}), f"{module_name}.{ATTRIBUTE}")


def add_deps_parser(sub: Any) -> None:
    deps = sub.add_parser(
        "deps",
        help="fetch the pinned third-party packages a suite's programs may import",
        description="Install a suite's allow-listed packages into a read-only overlay for the "
        "sandbox. The only codeeval step that downloads; runs never do.",
    )
    inner = deps.add_subparsers(dest="deps_command", required=True)
    for verb, text in (("fetch", "install into the overlay"), ("show", "print the allow-list")):
        cmd = inner.add_parser(verb, help=text)
        cmd.add_argument("suites", nargs="*", help="suites whose DEPENDENCIES to use")
        cmd.add_argument(
            "--allowlist", type=Path, help="an allow-list file ('import_name: dist==version')"
        )
        cmd.add_argument(
            "--root", type=Path, help="overlay root (default: $CODEEVAL_DEPS_DIR or the cache)"
        )
        if verb == "fetch":
            cmd.add_argument("--find-links", action="append", default=[], metavar="DIR")
            cmd.add_argument("--no-index", action="store_true", help="never ask an index")
            cmd.add_argument("--index-url", help="a package index other than PyPI")
            cmd.add_argument("--force", action="store_true", help="reinstall even if present")


def _allowlists(args: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    lists = [(name, suite_allowlist(name)) for name in args.suites]
    if args.allowlist:
        lists.append((str(args.allowlist), read_allowlist(args.allowlist)))
    if not lists:
        raise PinError("name a suite (e.g. classeval) or give --allowlist FILE")
    return lists


def run_deps(args: argparse.Namespace) -> int:
    try:
        lists = _allowlists(args)
    except PinError as exc:
        print(f"codeeval deps: error: {exc}", file=sys.stderr)
        return 2
    root = args.root.resolve() if args.root else deps_root()
    status = 0
    for name, allowlist in lists:
        if not allowlist:
            print(f"{name}: allows no third-party modules")
            continue
        if args.deps_command == "show":
            site = ready_site(allowlist, root)
            where = site or f"{overlay_dir(allowlist, root)} (not fetched)"
            print(f"{name}: overlay {where}")
            for module, pin in allowlist.items():
                print(f"  {module}: {pin}")
            continue
        try:
            site = fetch(
                allowlist,
                root=root,
                find_links=args.find_links,
                no_index=args.no_index,
                index_url=args.index_url,
                force=args.force,
            )
        except FetchError as exc:
            print(f"codeeval deps fetch: {name}: {exc}", file=sys.stderr)
            status = 1
            continue
        marker = read_marker(site.parent) or {}
        installed = ", ".join(marker.get("installed", [])) or "?"
        print(f"{name}: {site} ({installed})")
    return status
