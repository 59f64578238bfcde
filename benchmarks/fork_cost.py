"""What one fork()+_exit+wait costs on this machine, the floor of one-process-per-sample.

    python benchmarks/fork_cost.py [--forks 300] [--pad-mb 40]

Prints CPU milliseconds per fork (parent and child together) for a bare interpreter, for one
that has numpy imported (bigger page tables to copy), for one with the modules the fork
server's zygote loads for candidates (``harness/sandbox/inside/server.py``'s ``PRELOAD``), and
for a bare one holding ``--pad-mb`` more of written memory: the cost of each megabyte the
forking process holds, which every sample pays on both sides of the fork (the page tables
copied, then torn down when the child exits). Each figure is the resident anonymous memory of
the process that forks beside it. Every sample the sandbox runs pays at least this once.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys

from harness.sandbox.inside.server import PRELOAD

CHILD = """
import gc, os, sys
pad = [bytearray(1 << 20) for _ in range(int(sys.argv[2]))]  # written: resident, private
for name in sys.argv[3:]:
    __import__(name)
gc.freeze()
anon = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("RssAnon"))
n = int(sys.argv[1])
t0 = os.times()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
t1 = os.times()
used = (t1.user + t1.system + t1.children_user + t1.children_system) - (
    t0.user + t0.system + t0.children_user + t0.children_system)
print(f"{used / n * 1000:.3f} {anon / 1024:.1f}")
"""


def cpu_ms_per_fork(forks: int, modules: list[str], pad_mb: int = 0) -> tuple[float, float]:
    """CPU ms per fork+exit+wait, and the forking process's resident anonymous MB."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(forks), str(pad_mb), *modules],
        capture_output=True,
        text=True,
        check=True,
    )
    ms, anon_mb = out.stdout.split()
    return float(ms), float(anon_mb)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--forks", type=int, default=300)
    parser.add_argument("--pad-mb", type=int, default=40, help="written memory to add (MB)")
    args = parser.parse_args()
    gc.collect()
    bare, bare_mb = cpu_ms_per_fork(args.forks, [])
    rows = [
        ("bare interpreter", bare, bare_mb),
        ("numpy imported", *cpu_ms_per_fork(args.forks, ["numpy"])),
        ("the zygote's preloaded modules", *cpu_ms_per_fork(args.forks, list(PRELOAD))),
        (f"bare + {args.pad_mb} MB written", *cpu_ms_per_fork(args.forks, [], args.pad_mb)),
    ]
    for label, ms, anon_mb in rows:
        print(
            f"fork+exit+wait, {label:<32}: {ms:.3f} ms CPU ({ms / bare:.2f}x), "
            f"{anon_mb:.1f} MB resident anonymous"
        )
    padded, padded_mb = rows[-1][1:]
    if padded_mb > bare_mb:
        slope = (padded - bare) / (padded_mb - bare_mb)
        print(f"each MB the forking process holds: {slope:.3f} ms CPU a fork")
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
