"""A pytest plugin loaded (``-p``) by the pytest session a mined check starts in the sandbox.

Stdlib and pytest only: its text is written next to the repository copy. It reads a nonce from
a file it deletes at import (before any test code runs), and writes one frame at the end of the
session: the nonce and a JSON object with every test's outcome. A session that ends early (a
candidate calling ``os._exit``) writes no frame, and the check fails.
"""

from __future__ import annotations

import json
import os

_DIR = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_DIR, "nonce")) as _fh:
    _NONCE = _fh.read().strip()
os.unlink(os.path.join(_DIR, "nonce"))
_FD = int(os.environ.pop("CODEEVAL_MINED_FD"))
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 4}
outcomes: dict[str, str] = {}
messages: dict[str, str] = {}
doctests: list[str] = []
finished: list[int] = []


def _summary(longrepr: str) -> str:
    """The ``E`` lines of a failure (what went wrong), else its tail: short feedback."""
    errors = [line for line in longrepr.splitlines() if line.startswith("E ")]
    return ("\n".join(errors) if errors else longrepr)[-800:]


def emit(payload: dict) -> None:
    """One frame on the result pipe: the nonce, a space, JSON, a newline."""
    data = (_NONCE + " " + json.dumps(payload) + "\n").encode()
    while data:
        data = data[os.write(_FD, data) :]


def pytest_collection_modifyitems(items: list) -> None:
    doctests.extend(i.nodeid for i in items if type(i).__name__ == "DoctestItem")


def pytest_runtest_logreport(report) -> None:  # noqa: ANN001 - pytest's TestReport
    if report.passed:
        outcome = "passed" if report.when == "call" else None
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    else:
        outcome = "failed" if report.when == "call" else "error"
        messages[report.nodeid] = _summary(str(report.longrepr))
    if outcome is None:
        return
    old = outcomes.get(report.nodeid)
    if old is None or _RANK[outcome] > _RANK[old]:
        outcomes[report.nodeid] = outcome


def pytest_sessionfinish(session, exitstatus) -> None:  # noqa: ANN001
    finished.append(int(exitstatus))
    emit({"outcomes": outcomes, "messages": messages, "doctests": doctests,
          "exit": int(exitstatus)})  # fmt: skip
