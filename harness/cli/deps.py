"""``codeeval deps fetch|show``: the command line of :mod:`harness.deps`.

```
codeeval deps fetch classeval                        # from PyPI (the network)
codeeval deps fetch classeval --find-links WHEELS --no-index   # offline, from a wheel folder
codeeval deps fetch jsonl:ours.jsonl                 # the `dependencies` of each problem
codeeval deps fetch jsonl:ours.jsonl --reward r.yaml # ... each merged with the reward's list
codeeval deps fetch --allowlist deps.txt             # an allow-list file of your own
codeeval deps show classeval                         # the allow-list and where its overlay is
```

A run merges each Python problem's own allow-list with its reward config's
(:mod:`harness.deps.resolve`); the fetch installs exactly those merged lists, one overlay each.
"""

from __future__ import annotations

import argparse
import sys
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from harness.deps.fetch import FetchError, fetch
from harness.deps.overlay import deps_root, overlay_dir, read_marker, ready_site
from harness.deps.pins import PinError, read_allowlist
from harness.deps.sources import fetch_lists
from suites.allowlists import suite_allowlists


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
        cmd.add_argument(
            "suites",
            nargs="*",
            help="suites whose allow-lists to use (a registered suite's DEPENDENCIES, or "
            "jsonl:PATH: each problem's `dependencies`)",
        )
        cmd.add_argument(
            "--allowlist", type=Path, help="an allow-list file ('import_name: dist==version')"
        )
        cmd.add_argument(
            "--reward",
            metavar="CONFIG",
            help="a reward config (YAML or preset) whose `dependencies` a run adds to each "
            "problem's: fetch the merged lists the run will use",
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
    run: dict[str, str] = {}
    run_source = ""
    if args.reward:
        from harness.reward import RewardConfigError, load_reward_config

        try:
            config = load_reward_config(args.reward)
        except (RewardConfigError, OSError) as exc:
            raise PinError(f"--reward {args.reward}: {exc}") from None
        run, run_source = dict(config.dependencies), config.source
    lists = [item for name in args.suites for item in suite_allowlists(name)]
    if args.allowlist:
        lists.append((str(args.allowlist), read_allowlist(args.allowlist)))
    if not lists and not args.reward:
        raise PinError("name a suite (e.g. classeval, jsonl:PATH) or give --allowlist FILE")
    if not lists:  # a reward config alone: its own list
        lists = [("", {})]
    merged = fetch_lists(lists, run, run_source)
    if not merged:
        names = ", ".join([*args.suites, *([str(args.allowlist)] if args.allowlist else [])])
        print(f"{names or args.reward}: allows no third-party modules")
    return merged


def run_deps(args: argparse.Namespace) -> int:
    try:
        lists = _allowlists(args)
    except PinError as exc:
        print(f"codeeval deps: error: {exc}", file=sys.stderr)
        return 2
    root = args.root.resolve() if args.root else deps_root()
    status = 0
    for name, allowlist in lists:
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
        lacking = [m for m in allowlist if PathFinder.find_spec(m, [str(site)]) is None]
        if lacking:  # an import name the pinned distribution does not provide
            print(
                f"codeeval deps fetch: {name}: warning: {', '.join(lacking)} cannot be imported "
                "from the overlay: check the allow-list's import names",
                file=sys.stderr,
            )
    return status
