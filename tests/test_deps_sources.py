"""Allow-lists from a JSONL suite's records and from a reward config, merged per problem
(harness.deps.sources, harness.deps.resolve): parsing, errors that name the file, line and
field, and what a problem carries when its overlay is or is not fetched."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main as codeeval
from harness.deps.overlay import MARKER, ROOT_ENV, SITE, canonical, overlay_dir
from harness.deps.pins import PinError, format_allowlist, merge_allowlists, parse_allowlist
from harness.deps.resolve import apply_run_dependencies, resolve
from harness.deps.sources import check_entries, fetch_lists, jsonl_allowlists
from harness.reward import RewardConfigError, load_reward_config
from harness.reward.config import from_mapping
from suites.allowlists import suite_allowlists
from suites.jsonl_suite import JsonlSuiteError, load_jsonl

RECORD = {
    "task_id": "Toy/tag",
    "prompt": 'def tag(n):\n    """tinylib\'s VALUE, a dash, n."""\n',
    "entry_point": "tag",
    "canonical_solution": "    import tinylib\n    return f'{tinylib.VALUE}-{n}'\n",
    "test": "def check(candidate):\n    assert candidate(3) == 'one-3'\n",
}
TINY = {"tinylib": "tinylib==1.0.0"}
HELPER = {"helperlib": "helperlib==1.0.0"}

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
dists = st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,4})?", fullmatch=True)
versions = st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True)
bad_pins = st.sampled_from(
    ["x>=1", "x", "x==1.*", "x[extra]==1", "==1", "x==1; python_version<'4'"]
)


def allowlists(min_size: int = 0) -> st.SearchStrategy[dict[str, str]]:
    """Valid allow-lists (a distribution has one version)."""

    def pinned(entries: dict[str, tuple[str, str]]) -> dict[str, str]:
        first: dict[str, str] = {}
        return {n: f"{d}=={first.setdefault(d, v)}" for n, (d, v) in entries.items()}

    return st.dictionaries(names, st.tuples(dists, versions), min_size=min_size, max_size=6).map(
        pinned
    )


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def deps_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="codeeval-test-deps-"))
    monkeypatch.setenv(ROOT_ENV, str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def lay_out(root: Path, allowlist: dict[str, str], modules: dict[str, str]) -> Path:
    """An overlay as `codeeval deps fetch` leaves one (written by hand: test_deps.py and
    test_deps_run.py fetch for real)."""
    site = overlay_dir(allowlist, root) / SITE
    for name, source in modules.items():
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(source)
    (site.parent / MARKER).write_text(json.dumps({"allowlist": canonical(allowlist)}))
    for path in [root, *root.rglob("*")]:  # the sandbox's child (nobody) reads it
        path.chmod(0o755 if path.is_dir() else 0o644)
    return site


# -- parsing: the same list from every source ----------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(allowlists())
def test_every_source_reads_the_same_list(entries: dict[str, str]) -> None:
    expected = parse_allowlist(format_allowlist(entries))
    assert check_entries(json.loads(json.dumps(entries))) == expected
    config = from_mapping({"preset": "binary", "dependencies": entries}, "<test>")
    assert config.dependencies == expected


@settings(max_examples=30, deadline=None)
@given(allowlists(min_size=1), st.data())
def test_a_bad_yaml_entry_names_the_file_its_line_and_the_field(
    entries: dict[str, str], data: st.DataObject
) -> None:
    names_ = list(entries)
    bad_index = data.draw(st.integers(0, len(names_) - 1))
    bad = data.draw(bad_pins)
    lines = ["preset: binary", "shift: 0.0", "dependencies:"]
    for i, name in enumerate(names_):
        # keys quoted: YAML would read a name like `on` or `null` as a boolean or nothing
        lines.append(
            f"  {json.dumps(name)}: {json.dumps(bad if i == bad_index else entries[name])}"
        )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "reward.yaml"
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(RewardConfigError) as caught:
            load_reward_config(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}:{4 + bad_index}: dependencies: {names_[bad_index]}: ")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 4), bad_pins)
def test_a_bad_jsonl_entry_names_the_file_its_line_and_the_field(line: int, bad: str) -> None:
    records = [{**RECORD, "task_id": f"T/{i}"} for i in range(5)]
    records[line]["dependencies"] = {"tinylib": "tinylib==1.0.0", "bs4": bad}
    with tempfile.TemporaryDirectory() as folder:
        path = write_jsonl(Path(folder) / "p.jsonl", records)
        with pytest.raises(JsonlSuiteError) as caught:
            load_jsonl(path)
        with pytest.raises(PinError) as fetch_side:  # `codeeval deps fetch` reads it the same
            jsonl_allowlists(path)
    assert (caught.value.file, caught.value.line, caught.value.field) == (
        str(path), line + 1, "dependencies",
    )  # fmt: skip
    assert str(caught.value).startswith(f"{path}:{line + 1}: dependencies: bs4: ")
    assert str(fetch_side.value).startswith(f"{path}:{line + 1}: dependencies: bs4: ")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (["bs4==1"], "expected an object"),
        ({"bs-4": "beautifulsoup4==4.1"}, "import name 'bs-4' is not a top-level module name"),
        ({"bs4": 4}, "bs4: the pin must be a string"),
        ({"a": "x==1", "b": "x==2"}, "b: x is pinned to two versions"),
    ],
)
def test_jsonl_dependencies_errors(tmp_path: Path, value: object, says: str) -> None:
    path = write_jsonl(
        tmp_path / "p.jsonl", [RECORD, {**RECORD, "task_id": "B", "dependencies": value}]
    )
    with pytest.raises(JsonlSuiteError, match=None) as caught:
        load_jsonl(path)
    assert str(caught.value) == f"{path}:2: dependencies: {says}" or says in str(caught.value)
    assert str(caught.value).startswith(f"{path}:2: dependencies: ")


def test_a_reward_config_names_an_allowlist_file_beside_it(tmp_path: Path) -> None:
    (tmp_path / "deps.txt").write_text("# pins\nhelperlib: helperlib==1.0.0\n")
    config = tmp_path / "reward.yaml"
    config.write_text("preset: binary\ndependencies: deps.txt\n")
    assert load_reward_config(str(config)).dependencies == HELPER
    (tmp_path / "deps.txt").write_text("helperlib: helperlib>=1\n")
    other = tmp_path / "other.yaml"
    other.write_text("preset: binary\n\ndependencies: deps.txt\n")
    with pytest.raises(RewardConfigError, match=r"other.yaml:3: dependencies: .*deps.txt:1: "):
        load_reward_config(str(other))
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("preset: binary\ndependencies: [bs4]\n")
    with pytest.raises(RewardConfigError, match=r"wrong.yaml:2: dependencies: expected a mapping"):
        load_reward_config(str(wrong))


# -- merging -------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(allowlists(), allowlists())
def test_merging_is_a_union_or_an_error_naming_both_sources(
    a: dict[str, str], b: dict[str, str]
) -> None:
    try:
        merged = merge_allowlists(("a.jsonl:1", a), ("r.yaml", b))
    except PinError as exc:
        text = str(exc)
        assert "r.yaml" in text and "a.jsonl:1" in text
        return
    assert merged == {
        **parse_allowlist(format_allowlist(a)),
        **parse_allowlist(format_allowlist(b)),
    }
    assert merge_allowlists(("r.yaml", b), ("a.jsonl:1", a)) == merged


# -- a problem's overlay, or a defect naming the command -------------------------------------------
def test_a_jsonl_problem_needs_its_overlay(tmp_path: Path, deps_root: Path) -> None:
    plain_record = {**RECORD, "task_id": "B", "canonical_solution": "    return f'one-{n}'\n"}
    path = write_jsonl(tmp_path / "p.jsonl", [{**RECORD, "dependencies": TINY}, plain_record])
    suite = f"jsonl:{path}"
    own, plain = load_jsonl(path, suite=suite)
    (defect,) = own.defects  # the reference imports tinylib: not a "not installed" defect too
    assert defect.startswith(f"{path}:1: tests need modules not installed here: tinylib")
    assert f"run `codeeval deps fetch {suite}`" in defect
    assert own.metadata["dependencies"] == TINY and "deps_overlay" not in own.metadata
    assert plain.defects == () and "dependencies" not in plain.metadata
    site = lay_out(deps_root, TINY, {"tinylib": "VALUE = 'one'\n"})
    own, plain = load_jsonl(path, suite=suite)
    assert own.defects == () and own.metadata["deps_overlay"] == str(site)
    # A reward config's list joins each problem's: another overlay, another command.
    problems = apply_run_dependencies([own, plain], HELPER, "r.yaml")
    for problem in problems:
        (defect,) = problem.defects
        assert f"`codeeval deps fetch {suite} --reward r.yaml`" in defect
        assert "deps_overlay" not in problem.metadata
    assert "helperlib, tinylib are allowed" not in problems[0].defects[0]  # tinylib is needed
    both = lay_out(deps_root, {**TINY, **HELPER}, {"tinylib": "", "helperlib": ""})
    alone = lay_out(deps_root, HELPER, {"helperlib": ""})
    again = apply_run_dependencies(problems, HELPER, "r.yaml")  # resolving again: no pile-up
    assert [p.defects for p in again] == [(), ()]
    assert [p.metadata["deps_overlay"] for p in again] == [str(both), str(alone)]
    assert apply_run_dependencies(again, {}, "") == again
    with pytest.raises(PinError, match=r"r\.yaml: tinylib: pinned to tinylib==2\.0.*p\.jsonl:1"):
        apply_run_dependencies([own], {"tinylib": "tinylib==2.0"}, "r.yaml")


def test_an_overlay_without_the_needed_module_is_a_defect(tmp_path: Path, deps_root: Path) -> None:
    lay_out(deps_root, TINY, {"tiny_other": ""})  # the distribution provides another name
    path = write_jsonl(tmp_path / "p.jsonl", [{**RECORD, "dependencies": TINY}])
    (problem,) = load_jsonl(path)
    (defect,) = problem.defects
    assert "tinylib (the fetched overlay lacks them: check the allow-list's import names)" in defect


def test_translated_problems_are_left_alone() -> None:
    (problem,) = load_jsonl(write_jsonl(Path(tempfile.mkdtemp()) / "p.jsonl", [RECORD]))
    js = dataclasses.replace(problem, metadata={"language": "js"})
    assert resolve(js, HELPER, "r.yaml") is js


# -- the command: the merged lists a run will use -------------------------------------------------
def test_fetch_lists_for_a_suite_and_a_reward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {**RECORD, "dependencies": TINY},
            {**RECORD, "task_id": "B"},
            {**RECORD, "task_id": "C", "dependencies": TINY},
        ],
    )
    lists = suite_allowlists(f"jsonl:{path}")
    assert [entries for _, entries in lists] == [TINY, {}]
    assert [e for _, e in fetch_lists(lists, {}, "")] == [TINY]
    assert [e for _, e in fetch_lists(lists, HELPER, "r.yaml")] == [{**HELPER, **TINY}, HELPER]
    config = tmp_path / "r.yaml"
    config.write_text("preset: binary\ndependencies:\n  helperlib: helperlib==1.0.0\n")
    root = tmp_path / "root"
    assert (
        codeeval(["deps", "show", f"jsonl:{path}", "--reward", str(config), "--root", str(root)])
        == 0
    )
    out = capsys.readouterr().out
    assert f"{path}:1 + {config}: overlay" in out and f"{config}: overlay" in out
    assert out.count("(not fetched)") == 2 and "  helperlib: helperlib==1.0.0" in out
    assert codeeval(["deps", "show", "--reward", str(config), "--root", str(root)]) == 0
    assert capsys.readouterr().out.startswith(f"{config}: overlay")
    bad = write_jsonl(tmp_path / "bad.jsonl", [{**RECORD, "dependencies": {"bs4": "bs4>=1"}}])
    assert codeeval(["deps", "fetch", f"jsonl:{bad}"]) == 2
    assert f"{bad}:1: dependencies: bs4: 'bs4>=1' is not pinned" in capsys.readouterr().err
