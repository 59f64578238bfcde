"""A mined suite line → a :class:`~harness.records.Problem` the harness runs like any other.

Every check is a ``sandbox`` case, marked weaker (the repository's tests import the answer into
their own pytest process, which the verdict is read from) whose statement asks :mod:`harness.mining.inside_check` for one test's
outcome; the first check of a sample runs the problem's tests once, the others reuse it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from harness.mining.model import FORMAT
from harness.records import CheckCase, Problem

_HERE = Path(__file__).resolve().parent
FIRST_CASE_TIMEOUT_S = 60.0  # the whole test session; calibration replaces it with 10x its time
CASE_TIMEOUT_S = 5.0


_STANDINS = """
import importlib.abc as _abc
import importlib.machinery as _machinery
import sys as _sys
import types as _types


class _RepositoryName:  # stands for a name of the repository while the answer loads
    def __getattr__(self, name): return self
    def __call__(self, *args, **kwargs): return self
    def __getitem__(self, key): return self


class _RepositoryModules(_abc.MetaPathFinder, _abc.Loader):
    # The answer loads outside the repository; its body runs in the module copy, where the
    # repository's imports are real. Here they are stand-ins, so `import pkg` cannot fail.
    def __init__(self, packages): self.packages = packages
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.packages:
            return _machinery.ModuleSpec(name, self, is_package=True)
        return None
    def create_module(self, spec):
        module = _types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: _RepositoryName()
        return module
    def exec_module(self, module): pass


_sys.meta_path.append(_RepositoryModules(PACKAGES))
"""


def program_setup(header_names: Sequence[str], packages: Sequence[str], package: str) -> str:
    """Code before the prompt so that an answer loads on its own, outside the repository:
    annotations are not evaluated, the module names the header's defaults use and the
    repository's packages are stand-ins, and relative imports resolve against ``package``.
    The checks then run the answer's body in the real module copy."""
    text = "from __future__ import annotations\n" + _STANDINS.replace(
        "PACKAGES", repr(sorted(set(packages)))
    )
    if package:
        text += f"__package__ = {package!r}  # the answer's relative imports\n"
    return text + "".join(f"{name} = _RepositoryName()\n" for name in header_names)


@cache
def inside_source(name: str) -> str:
    """The text of one of the modules that run inside the sandbox."""
    return (_HERE / f"{name}.py").read_text()


def check_spec(record: dict[str, Any]) -> dict[str, Any]:
    """What ``__mined_check__`` needs: the repository copy, where the hole is, which tests."""
    return {
        "zip": record["repository_zip"],
        "path": record["path"],
        "hole_line": record["hole_line"],
        "indent": record["indent"],
        "name": record["entry_point"],
        "class": record.get("class_name"),
        "tests": list(record["tests"]),
        "doctest": bool(record.get("doctest")),
        "pythonpath": list(record.get("pythonpath", [])),
        "reporter": inside_source("inside_reporter"),
        "program_setup": record.get("program_setup") or "",
    }


def case_id(index: int, test_id: str) -> str:
    """A readable Python name for the check of ``test_id`` (its index keeps it unique)."""
    tail = re.sub(r"\W+", "_", test_id.rsplit("::", 1)[-1]).strip("_")[:40]
    return f"check_{index + 1}_{tail}".rstrip("_")


def problem_from_record(
    record: dict[str, Any], suite: str, extra: dict[str, Any] | None = None
) -> Problem:
    """The problem of one mined suite line (already validated by ``suites.mined``)."""
    setup = inside_source("inside_check") + f"\n\n_MINED_SPEC = {check_spec(record)!r}\n"
    cases = tuple(
        CheckCase(
            case_id=case_id(i, test),
            source=test,
            mode="sandbox",
            statement=f"__mined_check__({test!r})",
            weaker=True,  # the repository's tests import the answer into their own process
            timeout_s=FIRST_CASE_TIMEOUT_S if i == 0 else CASE_TIMEOUT_S,
        )
        for i, test in enumerate(record["tests"])
    )
    metadata = {
        "format": FORMAT,
        "tier": record["tier"],
        "features": dict(record.get("features", {})),
        "repository": record.get("repository", ""),
        "path": record["path"],
        "qualname": record.get("qualname", record["entry_point"]),
        "tests": list(record["tests"]),
        "hide_paths": [record["repository_path"]] if record.get("repository_path") else [],
        **(extra or {}),
    }
    return Problem(
        suite=suite,
        task_id=record["task_id"],
        prompt=record["prompt"],
        entry_point=record["entry_point"],
        cases=cases,
        reference=record.get("canonical_solution") or "",
        program_setup=record.get("program_setup") or "",
        test_setup=setup,
        metadata=metadata,
    )
