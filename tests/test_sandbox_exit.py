"""A process that exits with its sandbox still open closes it at exit, not during teardown.

As root, closing a sandbox forks (the sweep of its candidates' uid). Left to the sandbox's
``__del__`` while the interpreter clears its modules, that fork ran every library's at-fork
hooks over cleared modules: with filelock 4.3 installed, each pytest worker and each user
script ended with "Exception ignored" tracebacks. Or the sandbox module was cleared first, and
the close failed silently, its uid not swept. An ``atexit`` handler now closes it first.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import atexit, os, sys
    # Registered before the harness is imported, so it runs after the harness's own handlers.
    atexit.register(lambda: print("open" if box._proc is not None else "closed", "at exit"))
    # Says so if a fork happens once the interpreter is finalizing (as filelock's hooks fail).
    os.register_at_fork(
        before=lambda late=sys.is_finalizing, write=os.write: late()
        and write(2, b"forked while finalizing\\n")
    )
    from harness.sandbox import CaseRequest, SampleRequest, SandboxSettings
    from harness.sandbox.shared import shared_sandbox
    # the one every evaluate() call and pytest worker of this process reuses
    box = shared_sandbox(SandboxSettings(use_bwrap=sys.argv[1] == "1"))
    request = SampleRequest(
        "def f():\\n    return 1\\n", "f", (CaseRequest("c", "compare", calls=("f()",)),)
    )
    print(box.run(request).cases["c"].status)
    # the process ends with the sandbox open, as a script or a pytest worker does
    """
)


def test_an_open_sandbox_is_closed_before_the_interpreter_tears_down(use_bwrap: bool) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "1" if use_bwrap else "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "closed", "at", "exit"]
    assert "forked while finalizing" not in done.stderr
    assert "Exception ignored" not in done.stderr
