"""What the stdin/stdout suites share: the parsed record, errors that name where bad data is,
suite options, and reading a mirror or the hub.

A loader (``suites.livecodebench``, ``codecontests``, ``apps``, ``taco``, the ``jsonl:`` suite)
turns each row of its published schema into a :class:`StdioRecord`: tests as (input text,
expected output) pairs in groups (public, private, generated), the limits the data gives, and
for call-based problems the function name. ``suites.stdio_build.to_problem`` hands it to the
stdio core (``harness.stdio``), which owns the problem shape, checkers and execution;
``suites.stdio_encodings`` reads the test encodings more than one data set uses.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.jsonlines import read_objects
from harness.stdio.problem import STDIO_LANGUAGES, Checker
from suites.errors import SuiteError
from suites.hub import check_hub_reachable, load_hub_dataset

TEST_GROUPS = ("public", "private", "generated")


class StdioDataError(SuiteError):
    """A row that cannot be used; the message names where it is (file and line, or the hub
    split and row) and the field."""

    def __init__(self, where: str, field_name: str | None, message: str):
        self.where, self.field = where, field_name
        super().__init__(
            f"{where}: {field_name}: {message}" if field_name else f"{where}: {message}"
        )


@dataclass(frozen=True)
class IoTest:
    """One test: stdin text and the expected stdout, or for a call-based problem the
    arguments (one JSON value a line, as LiveCodeBench writes them) and the JSON result."""

    input: str
    output: str
    group: str = "private"
    kind: str = "stdin"  # or "functional": a call-based test


@dataclass(frozen=True)
class StdioRecord:
    """One problem as its data set gives it, before the stdio core builds the Problem."""

    suite: str
    task_id: str
    statement: str
    tests: tuple[IoTest, ...]
    starter_code: str = ""
    fn_name: str | None = None  # set: call-based, judged on the value path
    time_limit_s: float | None = None
    memory_limit_mb: float | None = None
    reference: str = ""  # a whole program that passes (the data's first solution), if any
    reference_language: str = "python"
    checker: Checker | None = None  # None: what the statement asks for (checker_for)
    defects: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def by_group(self, group: str) -> list[IoTest]:
        return [t for t in self.tests if t.group == group]


# -- suite options (NAME@OPTION@OPTION) ---------------------------------------------------


@dataclass(frozen=True)
class SuiteOptions:
    """What ``NAME@OPTION@OPTION`` asks for: a language (``cpp``), ``partial`` (every test runs,
    for partial credit, as a trainer scores), ``largestN`` (also only the N largest inputs, as
    DeepCoder trains), and the options the loader reads itself (a date window)."""

    language: str = "python"
    every_test: bool = False
    largest: int | None = None
    rest: tuple[str, ...] = ()


_LARGEST = re.compile(r"^largest(\d+)$")


def split_options(option: str | None, suite: str) -> tuple[str, list[str]]:
    """The program language among the ``@``-separated options (``python`` when none), and the
    other options, for the loader to read."""
    language, rest = "python", []
    for part in (option or "").split("@"):
        part = part.strip()
        if part.lower() in STDIO_LANGUAGES:
            language = part.lower()
        elif part:
            rest.append(part)
    return language, rest


def read_options(option: str | None, suite: str) -> SuiteOptions:
    """A suite name's options: the language, ``partial``, ``largestN``, and the rest."""
    language, parts = split_options(option, suite)
    every_test, largest, rest = False, None, []
    for part in parts:
        count = _LARGEST.match(part.lower())
        if part.lower() == "partial":
            every_test = True
        elif count:
            every_test, largest = True, int(count.group(1))
            if largest < 1:
                raise SuiteError(f"{suite}: {part!r} keeps no test; use largest1 or more")
        else:
            rest.append(part)
    return SuiteOptions(language, every_test, largest, tuple(rest))


def no_more_options(rest: Sequence[str], suite: str, known: str = "") -> None:
    """An error naming the first option the loader does not know (``known``: its others)."""
    if rest:
        raise SuiteError(
            f"{suite}: unknown option {rest[0]!r}; options are a language "
            f"({', '.join(STDIO_LANGUAGES)}){known}"
        )


TRAINING_OPTIONS = ", partial, largestN"  # what read_options knows besides a language


def suite_name(suite: str, option: str | None) -> str:
    """The name problems carry, options included, so the same name loads them again."""
    return f"{suite}@{option}" if option else suite


# -- reading rows -------------------------------------------------------------------------


Row = tuple[str, dict[str, Any]]  # (where: "FILE:LINE" or "HUB[split]:INDEX", the row)


def read_jsonl_rows(path: Path) -> list[Row]:
    """The rows of a JSONL file (``.gz`` too), each with ``FILE:LINE``."""

    def error(message: str) -> StdioDataError:  # read_objects' messages start with FILE:LINE
        where, _, rest = message.partition(": ")
        return StdioDataError(where, None, rest)

    try:
        return [(f"{path}:{n}", row) for n, row in read_objects(path, error)]  # type: ignore[arg-type]
    except OSError as exc:
        raise StdioDataError(str(path), None, f"cannot read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise StdioDataError(str(path), None, f"not valid UTF-8 at byte {exc.start}") from None


def data_folders(data_dir: str | Path | None) -> list[Path]:
    """``data_dir`` and ``$CODEEVAL_DATA_DIR``, the folders a mirror may be in."""
    return [Path(d) for d in (data_dir, os.environ.get("CODEEVAL_DATA_DIR")) if d]


def find_mirror(data_dir: str | Path | None, folder: str) -> Path | None:
    """The mirror folder ``folder`` under ``data_dir`` or ``$CODEEVAL_DATA_DIR``, if any."""
    for base in data_folders(data_dir):
        if (base / folder).is_dir():
            return base / folder
    return None


def split_files(mirror: Path, splits: Iterable[str]) -> dict[str, Path]:
    """``{split: SPLIT.jsonl}`` for the splits a mirror folder has (``.jsonl.gz`` too)."""
    found: dict[str, Path] = {}
    for split in splits:
        for name in (f"{split}.jsonl", f"{split}.jsonl.gz"):
            if (mirror / name).is_file():
                found[split] = mirror / name
                break
    return found


def mirror_rows(
    data_dir: str | Path | None, folder: str, splits: Sequence[str], suite: str
) -> dict[str, list[Row]] | None:
    """Each split's rows from the mirror folder ``folder`` (``SPLIT.jsonl``, or ``.gz``), or
    None when there is no such folder; a folder that holds none of the splits is an error."""
    mirror = find_mirror(data_dir, folder)
    if mirror is None:
        return None
    files = split_files(mirror, splits)
    if not files:
        wanted = "/".join(splits)
        raise SuiteError(f"{suite}: {mirror} holds none of {wanted}.jsonl (or .jsonl.gz)")
    return {split: read_jsonl_rows(path) for split, path in files.items()}


def hub_rows(
    hub_name: str, suite: str, mirror_hint: str, builder: str | None = None, **kwargs: Any
) -> dict[str, list[Row]]:
    """Every split of a hub data set as rows; an error says where a mirror would go.

    ``builder`` (``"parquet"``, with ``data_files`` in ``kwargs``) reads a repository's data
    files directly: ``datasets`` refuses a repository that still ships a loading script."""
    try:
        import datasets  # noqa: F401 - missing, it has a message of its own
    except ImportError as exc:  # pragma: no cover - datasets is a train dependency
        raise SuiteError(
            f"{suite}: no mirror ({mirror_hint}) and `datasets` is not installed"
        ) from exc
    try:
        loaded = load_hub_dataset(builder or hub_name, **kwargs)
    except Exception as exc:  # the hub raises many kinds; all mean "not available here"
        raise SuiteError(
            f"{suite}: no local mirror ({mirror_hint}) and the hub data set {hub_name} "
            f"could not be loaded: {exc}"
        ) from exc
    return {
        split: [(f"{hub_name}[{split}]:{i}", dict(row)) for i, row in enumerate(rows)]
        for split, rows in loaded.items()
    }


class HubFileMissing(SuiteError):
    """The hub repository answered, and it has no such file (a release not published yet)."""


def hub_file_rows(hub_name: str, filename: str, suite: str, mirror_hint: str) -> list[Row]:
    """The rows of one JSONL file of a hub data set repository (for data sets whose loading
    script ``datasets`` no longer runs). :class:`HubFileMissing` when the repository has no
    such file; any other failure (offline, no package) is a plain :class:`SuiteError`."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import RemoteEntryNotFoundError
    except ImportError as exc:  # pragma: no cover - a dependency of datasets
        raise SuiteError(f"{suite}: no mirror ({mirror_hint}) and no huggingface_hub") from exc
    failed = f"{suite}: no local mirror ({mirror_hint}) and {filename} of the hub data set "
    try:
        check_hub_reachable()
        path = hf_hub_download(hub_name, filename, repo_type="dataset")
    except RemoteEntryNotFoundError as exc:
        raise HubFileMissing(f"{failed}{hub_name} does not exist: {exc}") from exc
    except Exception as exc:  # offline, no access: all mean "not here"
        raise SuiteError(f"{failed}{hub_name} could not be fetched: {exc}") from exc
    return [
        (f"{hub_name}/{filename}:{w.rsplit(':', 1)[1]}", r) for w, r in read_jsonl_rows(Path(path))
    ]


# -- fields --------------------------------------------------------------------------------


def text_field(row: Mapping[str, Any], name: str, where: str, *, required: bool = True) -> str:
    """A string field; a missing optional one (or JSON null) is ``""``."""
    value = row.get(name)
    if value is None:
        if required:
            raise StdioDataError(where, name, "missing")
        return ""
    if not isinstance(value, str):
        raise StdioDataError(where, name, f"expected a string, got {type(value).__name__}")
    return value


def json_text_field(row: Mapping[str, Any], name: str, where: str) -> Any:
    """A field that holds JSON as a string (APPS ``input_output``, LiveCodeBench tests)."""
    text = text_field(row, name, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StdioDataError(where, name, f"not valid JSON: {exc.msg} at char {exc.pos}") from None


def unique_ids(records: Sequence[tuple[str, StdioRecord]]) -> list[StdioRecord]:
    """The records, raising on a task id that appears twice (naming both places)."""
    seen: dict[str, str] = {}
    for where, record in records:
        if record.task_id in seen:
            raise StdioDataError(
                where, "task_id", f"{record.task_id!r} repeats {seen[record.task_id]}"
            )
        seen[record.task_id] = where
    return [record for _, record in records]
