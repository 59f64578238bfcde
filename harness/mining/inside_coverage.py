"""The coverage driver of a mining run (runs in a fresh interpreter inside the sandbox).

Starts coverage.py before anything of the repository is imported, runs pytest in-process with
a context per test (its node id, switched around the test's call phase, as pytest-cov does),
and writes a second frame: for each target, the tests that executed a line of its body.
"""

from __future__ import annotations

import json
import os
import sys

import coverage
import pytest

ROOT = os.getcwd()
cov = coverage.Coverage(data_file=None, source=[ROOT], config_file=False)


class _Contexts:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):  # noqa: ANN001, ANN201
        cov.switch_context(item.nodeid)
        yield
        cov.switch_context("")


def main() -> int:
    cov.start()
    try:
        status = pytest.main(
            sys.argv[1:] + ["-p", "_codeeval_mined_reporter"], plugins=[_Contexts()]
        )
    finally:
        cov.stop()
    import _codeeval_mined_reporter as reporter

    with open(os.path.join(ROOT, "_codeeval_targets.json")) as fh:
        targets = json.load(fh)
    data = cov.get_data()
    by_file: dict[str, dict[int, list[str]]] = {}
    ran: dict[str, list[str]] = {}
    for target_id, path, start, end in targets:
        absolute = os.path.join(ROOT, path)
        if absolute not in by_file:
            by_file[absolute] = (
                data.contexts_by_lineno(absolute) if absolute in data.measured_files() else {}
            )
        tests: set[str] = set()
        for line, contexts in by_file[absolute].items():
            if start <= line <= end:
                tests.update(c for c in contexts if c)
        ran[target_id] = sorted(tests)
    reporter.emit({"ran": ran, "status": int(status)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
