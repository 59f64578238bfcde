"""The judge: runs a sample's sandbox-mode checks in a process that never runs candidate code.

Stdlib only; loaded by path by the fork server and run right after ``os.fork()``, beside the
candidate's child of the same segment (server.py). Checks that cannot be split into "call,
then compare in the trusted process" run here: the benchmark's test setup and the prompt's
helper definitions (trusted data of the problem: ``poly`` for HumanEval/32, ``encode_cyclic``
for /38) are executed in the judge's own namespace; the names the candidate must provide
(``candidate``, a ClassEval class, the program's other top-level names that the benchmark's
code does not define) are :class:`remote.Remote` proxies whose operations the child performs.
Each check's outcome goes to the server as a frame on the judge's own pipe, which the
candidate never holds.

The judge is confined like the child (limits, no inheritable fds, its own session, the same
dropped uid) and is not dumpable, so its memory and descriptors stay out of the candidate's
reach.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import os
import signal
import sys
import time
from typing import Any, NoReturn

FRAME_FD, TO_CHILD_FD, FROM_CHILD_FD = 3, 4, 5
_exit = os._exit


def confine(child: Any, cfg: dict[str, Any], workdir: str, cpu_s: int) -> None:
    """Own session, fds 0-5 only (stdio to /dev/null), the child's limits and uid, the work
    folder.

    The candidate's own uid and group: the judge shares the work folder (ClassEval's tests and
    the program write files for each other). Being not dumpable keeps the candidate out of the
    judge's memory and descriptors (no ptrace, /proc/<pid>/mem, fd/ or pidfd_getfd); a signal
    it sends can only end the judge, and then no check of the sample passes.
    """
    os.setsid()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(FROM_CHILD_FD + 1, 1 << 20)
    child.limit_and_drop(cfg, cpu_s)  # the same limits and user as the candidate's child
    try:  # not dumpable: no ptrace and no /proc/<pid>/mem or fd/ for another process
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001 - the server set it already; forks inherit it
        pass
    os.chdir(workdir)
    kernel = cfg.get("_kernel")
    if kernel is not None:  # as the child: writes only in the folder, no IPC, ptrace, keyrings
        kernel.confine(workdir)
    child.limit_files_and_memory(cfg)


def run(
    codec: Any,
    remote: Any,
    child: Any,
    request: dict[str, Any],
    first: int,
    nonce: str,
    cfg: dict[str, Any],
    workdir: str,
    cpu_s: int,
) -> NoReturn:
    """Judge the sandbox-mode cases ``first..`` of ``request``; never returns."""
    code = 0
    try:
        confine(child, cfg, workdir, cpu_s)
        _judge(codec, remote, child, request, first, nonce)
    except remote.BridgeClosed:
        code = 0  # the child is gone or broke the protocol: the server decides the case
    except BaseException:  # noqa: B036 - the server sees no frame: the case is not passed
        code = 70
    _exit(code)


def _exec_each(source: str, code: Any, env: dict[str, Any]) -> None:
    """Run trusted setup code; a statement that fails (a prompt's odd line) is left out."""
    if code is not None:
        try:
            exec(code, env)
            return
        except BaseException:  # noqa: B036 - then statement by statement
            pass
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in tree.body:
        try:
            exec(compile(ast.Module([node], []), "<helpers>", "exec"), env)
        except BaseException:  # noqa: B036, S112
            continue


def _judge(
    codec: Any, remote: Any, child: Any, request: dict[str, Any], first: int, nonce: str
) -> None:
    import random

    # The checks' inputs: the server hands the judge the trusted side's check seed (a keyed hash,
    # harness/sandbox/check_seed.py), never the child's public seed, so no program replays them.
    random.seed(request.get("seed", 0))
    deps = request.get("deps_path")
    if deps:
        at = next((i for i, p in enumerate(sys.path) if "-packages" in p), len(sys.path))
        sys.path.insert(at, deps)
    # __file__: the program's file, as in the child (a mined check reads the answer there).
    program_file = os.path.join(os.getcwd(), "solution.py")
    env: dict[str, Any] = {
        "__name__": "__judge__",
        "__builtins__": builtins,
        "__file__": program_file,
    }
    _exec_each(request.get("test_setup", ""), request.get("test_setup_code"), env)
    _exec_each(request.get("helpers", ""), request.get("helpers_code"), env)
    side = remote.JudgeSide(codec, TO_CHILD_FD, FROM_CHILD_FD)
    plain = remote.plain_value(side)
    cases = request["cases"]
    entry = request["entry_point"]
    bound = False
    for index in range(first, len(cases)):
        case = cases[index]
        if case.get("mode") != "sandbox":
            continue
        start = time.perf_counter()
        try:
            if not bound:  # the program exists only once the child reaches this case
                _bind_program(side, env, entry)
                bound = True
            ns = dict(env)
            ns["__plain__"] = plain
            if entry in env:
                ns["candidate"] = env[entry]
            if case.get("prelude"):
                exec(case.get("prelude_code") or compile(case["prelude"], "<check>", "exec"), ns)
            exec(case.get("statement_code") or compile(case["statement"], "<check>", "exec"), ns)
            payload: dict[str, Any] = {"status": "ok"}
            if side.closed:  # the check swallowed the bridge's error: report nothing
                raise remote.BridgeClosed("the bridge broke during the check")
        except remote.BridgeClosed:
            raise
        except AssertionError as exc:
            if side.closed:
                raise remote.BridgeClosed("the bridge broke during the check") from None
            payload = {"status": "assertion", "exception": child._exception(exc)}
        except BaseException as exc:  # noqa: B036 - the check raised (often the candidate did)
            if side.closed:
                raise remote.BridgeClosed("the bridge broke during the check") from None
            payload = {"status": "raised", "exception": child._exception(exc)}
        payload["duration_s"] = time.perf_counter() - start
        payload["n"], payload["i"] = nonce, index
        # The frame goes out before the child may move on: once the child has run the rest
        # and ended, the server reads what is in the pipes, and this frame must be there.
        data = memoryview(codec.frame(codec.KIND_CASE, index, payload))
        while data:
            data = data[os.write(FRAME_FD, data) :]
        side.end_case()


def _bind_program(side: Any, env: dict[str, Any], entry: str) -> None:
    """Proxies for the program's names the benchmark's own code does not define.

    Trusted names win (a helper the prompt defines is the benchmark's, whatever the program
    says) and builtins are never shadowed. Every other name is a proxy, a module the program
    imported included: the judge never takes a name from the candidate and imports or
    resolves it to an object of its own.
    """
    names = side.apply("names")
    if type(names) is not list:
        raise TypeError("the program's names did not come back as a list")
    for item in names:
        if type(item) is not list or len(item) != 3 or type(item[0]) is not str:
            continue
        name, _, value = item
        if name != entry and (name in env or name in builtins.__dict__):
            continue
        env[name] = value
