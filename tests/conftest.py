"""Shared test fixtures: the offline benchmark mirrors and a private cache folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from harness.sandbox.bwrap import bwrap_available

# No per-example deadline in any property test: on a loaded CI machine a garbage collection
# or a slow fork can take one example past hypothesis's 200 ms, which says nothing of the code.
settings.register_profile("codeeval", deadline=None)
settings.load_profile("codeeval")

REPO = Path(__file__).resolve().parents[1]
# Fixture trees are data for the tests (a repository to mine, a package, ...): their own test
# files are run by the tests that use them, never collected by this session.
collect_ignore = ["fixtures"]
SHARED_DATA = Path(os.environ.get("CODEEVAL_DATA_DIR", REPO.parent / "shared" / "data"))
NO_MIRROR = not SHARED_DATA.is_dir()
if not NO_MIRROR:
    # What CI sets: every way in (evaluate(), the reward engine, pytester sessions, servers
    # started as subprocesses) finds the mirrors, as a user's shell with it set would.
    os.environ.setdefault("CODEEVAL_DATA_DIR", str(SHARED_DATA))
else:
    # A clone without the mirror: no test reaches for the hub; one whose suite needs the
    # mirror skips and says so (pytest_runtest_makereport below).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Without the mirror, a test stopped by a suite whose data is not here is skipped, with
    the suite's own message (which names the mirror); with the mirror it fails as usual."""
    report = yield
    if NO_MIRROR and report.failed and call.excinfo is not None:
        from suites.errors import SuiteError

        if _raised_by(call.excinfo.value, SuiteError):
            reason = f"needs the benchmark mirror ({SHARED_DATA} or CODEEVAL_DATA_DIR): "
            report.outcome = "skipped"
            report.longrepr = (
                str(item.path),
                item.location[1] or 0,
                reason + str(call.excinfo.value),
            )
    return report


def _raised_by(error: BaseException, kind: type[BaseException]) -> bool:
    """``error`` is a ``kind``, or was raised while handling one (an API's own error that
    names the field, ``raise ... from None`` over the suite's, keeps it as its context)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(False, id="nobwrap"),
        pytest.param(
            True,
            id="bwrap",
            marks=pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here"),
        ),
    ],
)
def use_bwrap(request: pytest.FixtureRequest) -> bool:
    """Both sandbox modes: without bubblewrap (Landlock's view), and with it where it works."""
    return bool(request.param)


@pytest.fixture(params=["bwrap", "nobwrap"])
def sandbox_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both sandbox modes for whatever the test starts (CODEEVAL_SANDBOX set for the mode
    without bubblewrap, so sandboxes with default settings, drivers and sessions follow)."""
    from harness.sandbox.landlock_view import no_bwrap_guards

    if request.param == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not usable here")
    if request.param == "nobwrap":
        if not no_bwrap_guards().view:
            pytest.skip("this kernel has no Landlock: without bubblewrap there is no view")
        monkeypatch.setenv("CODEEVAL_SANDBOX", "nobwrap")
    return str(request.param)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The offline mirrors of MBPP and ClassEval (never copied into the project)."""
    if not (SHARED_DATA / "mbpp.jsonl").is_file():
        pytest.skip(f"benchmark mirrors not found in {SHARED_DATA} (set CODEEVAL_DATA_DIR)")
    return SHARED_DATA


@pytest.fixture(autouse=True, scope="session")
def private_history(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs made by the tests are recorded in a throwaway history, never the user's."""
    os.environ["CODEEVAL_HISTORY"] = str(tmp_path_factory.mktemp("history") / "history.sqlite")


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Model tests on 2 shared cores: more torch threads only spin (use via pytestmark)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
