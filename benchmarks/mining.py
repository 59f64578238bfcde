"""Mine real projects from PyPI into suites; optionally evaluate a model on each tier.

    python benchmarks/mining.py                                   # inflection and toolz
    python benchmarks/mining.py --evaluate smollm2-135m --per-tier 4

Each project's source distribution (which ships its tests) is downloaded once with
``pip download --no-binary :all:`` into ``$CODEEVAL_CACHE/mining/sdists`` and unpacked beside
it; offline, a project not yet in the cache is skipped with a message. The suites and their
reports go to ``--out`` (default ``$CODEEVAL_CACHE/mining/suites``). ``--evaluate MODEL`` then
runs ``pytest --llm-eval jsonl:SUITE --llm-split tierN[:K] --llm-model MODEL`` per tier and
prints pass@1 per tier.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from harness.mining import MineOptions, MiningError, mine
from harness.mining.pipeline import print_report
from harness.paths import cache_dir

PROJECTS = (("inflection", "0.5.1"), ("toolz", "1.2.0"))
REPO = Path(__file__).resolve().parents[1]


def sdist_folder(name: str, version: str, cache: Path) -> Path | None:
    """The unpacked sdist of ``name==version`` (downloaded when missing), or None offline."""
    folder = cache / "src" / f"{name}-{version}"
    if folder.is_dir():
        return folder
    archive = cache / "sdists" / f"{name}-{version}.tar.gz"
    if not archive.is_file():
        archive.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             f"{name}=={version}", "-d", str(archive.parent), "--quiet"],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0 or not archive.is_file():
            print(f"skipping {name}=={version}: cannot download its sdist (offline?): "
                  f"{done.stderr.strip()[-300:]}")  # fmt: skip
            return None
    with tarfile.open(archive) as tar:
        tar.extractall(folder.parent, filter="data")
    return folder


def evaluate_tiers(suite: Path, model: str, per_tier: int, out: Path) -> dict[str, dict]:
    """pass@1 per tier of ``model`` on ``suite`` (the first ``per_tier`` problems of each)."""
    tiers = sorted({json.loads(line)["tier"] for line in suite.read_text().splitlines()})
    results: dict[str, dict] = {}
    for tier in tiers:
        target = out / f"{suite.stem}-{model}-{tier}"
        split = f"{tier}[:{per_tier}]" if per_tier else tier
        command = [
            sys.executable, "-m", "pytest", "--llm-eval", f"jsonl:{suite}", "--llm-split", split,
            "--llm-model", model, "--llm-out", str(target), "-p", "no:codeeval_gate", "-q",
            "-p", "no:cacheprovider", "--rootdir", str(target), "-c", os.devnull,
        ]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=target.parent)
        summary_file = target / "summary.json"
        if not summary_file.is_file():
            print(done.stdout[-2000:], done.stderr[-2000:])
            continue
        summary = json.loads(summary_file.read_text())
        (row,) = summary["suites"].values()
        results[tier] = {
            "problems": row["problems"], "passed": row["passed"], "pass@1": row.get("pass@1"),
            "seconds": round(time.perf_counter() - started, 1), "command": " ".join(command[1:]),
        }  # fmt: skip
        print(f"  {model} on {suite.stem} {split}: pass@1 {row.get('pass@1')} "
              f"({row['passed']}/{row['problems']}), {results[tier]['seconds']} s")  # fmt: skip
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", nargs="*", default=[f"{n}=={v}" for n, v in PROJECTS])
    parser.add_argument("--out", type=Path, default=None, help="where suites and reports go")
    parser.add_argument("--evaluate", metavar="MODEL", help="evaluate MODEL on each tier")
    parser.add_argument("--per-tier", type=int, default=0, help="problems per tier (0: all)")
    parser.add_argument("--limit", type=int, default=None, help="validate at most N functions")
    args = parser.parse_args()
    cache = cache_dir() / "mining"
    out = (args.out or cache / "suites").resolve()
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, dict] = {}
    for spec in args.projects:
        name, _, version = spec.partition("==")
        folder = sdist_folder(name, version, cache)
        if folder is None:
            continue
        suite = out / f"{name}.jsonl"
        try:
            report = mine(folder, suite, MineOptions(limit=args.limit))
        except MiningError as exc:
            print(f"{name}: {exc}")
            continue
        print_report(report)
        summary[name] = {
            k: v for k, v in report.to_json().items() if k not in ("problems", "drops")
        }
        if args.evaluate and report.problems:
            summary[name]["evaluation"] = evaluate_tiers(suite, args.evaluate, args.per_tier, out)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"summary: {out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
