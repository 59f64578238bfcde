"""Generated check modules are rewritten by pytest's assertion rewriter once per content, not
once per folder: a trainer compiles the same checks into a new folder every batch, and every
``pytest --llm-eval`` run into its own ``--llm-out``. A module loaded from the cache still
reports its own file in a failure."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from harness.pipeline.verdicts import load_check_module

MODULE = """
def test_case_0(values):
    assert values == [1, 2], "the sample's answer"


def helper():
    def inner():
        raise ValueError("inside")
    return inner
"""


def test_the_same_checks_in_another_folder_reuse_the_rewritten_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    paths = []
    for run in ("run-1", "run-2"):
        path = tmp_path / run / "test_task.py"
        path.parent.mkdir()
        path.write_text(MODULE)
        paths.append(path)
    first = load_check_module(paths[0])
    cached = sorted((tmp_path / "cache" / "checks").iterdir())
    second = load_check_module(paths[1])
    assert sorted((tmp_path / "cache" / "checks").iterdir()) == cached and len(cached) == 1
    assert first is not second

    # Rewritten (pytest's message with the compared values), and naming its own file.
    with pytest.raises(AssertionError) as failed:
        second.test_case_0([1, 3])
    assert "[1, 3] == [1, 2]" in str(failed.value)
    frames = traceback.extract_tb(failed.value.__traceback__)
    assert frames[-1].filename == str(paths[1])
    assert second.helper().__code__.co_filename == str(paths[1])
    assert first.helper().__code__.co_filename == str(paths[0])
    with pytest.raises(ValueError) as raised:
        second.helper()()
    assert traceback.extract_tb(raised.value.__traceback__)[-1].filename == str(paths[1])
