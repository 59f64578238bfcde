"""The on-disk memo behind suite loading: it returns what the function computes, or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.memo import DiskMemo, IdentityMemo
from harness.pipeline import checks
from suites import load_suite


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path))
    return tmp_path


def test_values_survive_a_new_process(cache: Path) -> None:
    memo = DiskMemo("demo", "v1")
    memo.put(DiskMemo.key("a", [1]), {"x": [1, 2]})
    memo.save()
    again = DiskMemo("demo", "v1")
    assert again.get(DiskMemo.key("a", [1])) == {"x": [1, 2]}
    assert again.get(DiskMemo.key("b")) is None


def test_a_new_version_or_a_broken_file_is_an_empty_memo(cache: Path) -> None:
    memo = DiskMemo("demo", "v1")
    memo.put("k", 1)
    memo.save()
    assert DiskMemo("demo", "v2").get("k") is None
    (cache / "memo-demo.json").write_text("{not json")
    assert DiskMemo("demo", "v1").get("k") is None
    (cache / "memo-demo.json").write_text('{"version": "v1", "entries": [1]}')
    assert DiskMemo("demo", "v1").get("k") is None


def test_cached_splits_equal_fresh_splits(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "_MEMO", DiskMemo("split_check", "test"))
    sources = [p.metadata["test_source"] for p in load_suite("humaneval", "test[:40]")]
    assert len(sources) == 40
    for source in sources:
        first = checks.split_check(source)
        checks._MEMO.save()
        monkeypatch.setattr(checks, "_MEMO", DiskMemo("split_check", "test"))  # a new process
        assert checks.split_check(source) == first == checks._split_check(source, ("candidate",))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 1)), max_size=40), st.integers(1, 5))
def test_an_identity_memo_computes_once_per_owner_and_key(uses: list, limit: int) -> None:
    """Equal owners that are distinct objects are distinct entries; an owner's value is
    computed again only after the memo started over, past its limit (checked against a model)."""
    owners = [tuple([n % 4]) for n in range(8)]  # 0 and 4 are equal, distinct objects
    memo: IdentityMemo[tuple] = IdentityMemo(limit=limit)
    computed = 0
    model: set[tuple[int, int]] = set()
    expected = 0
    for index, extra in uses:
        owner = owners[index]

        def compute(owner: tuple = owner, extra: int = extra) -> tuple:
            nonlocal computed
            computed += 1
            return (owner, extra)

        value = memo.get(owner, compute, extra)
        assert value[0] is owner and value[1] == extra
        if (index, extra) not in model:
            if len(model) >= limit:
                model.clear()
            model.add((index, extra))
            expected += 1
        assert computed == expected
