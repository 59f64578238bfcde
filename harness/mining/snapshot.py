"""The copy of a repository the sandbox sees: a zip of the files its tests need.

Documentation, VCS folders, build outputs and bytecode never go in (a candidate could read
the original body from a ``.pyc`` or a rendered page); a target's module goes in with its
body removed. The zip travels inside the problem itself, so a mined suite is one JSONL file.
"""

from __future__ import annotations

import base64
import io
import zipfile
from pathlib import Path

from harness.mining.model import MiningError
from harness.mining.source import DOC_DIRS, walk_files

MAX_FILE_BYTES = 512 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
_SKIP_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".dll", ".dylib", ".whl", ".gz", ".zip")
_TOP_LEVEL_DOCS = ("readme", "changes", "changelog", "history", "news", "authors", "license")


def snapshot_files(root: Path) -> dict[str, bytes]:
    """The repository's files a test run may need, by repository-relative POSIX path."""
    files: dict[str, bytes] = {}
    total = 0
    for path in walk_files(root):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if parts[0] in DOC_DIRS or rel.endswith(_SKIP_SUFFIXES):
            continue
        if len(parts) == 1 and parts[0].lower().startswith(_TOP_LEVEL_DOCS):
            continue
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            continue
        data = path.read_bytes()
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise MiningError(
                f"{root}: the files the tests may need exceed {MAX_TOTAL_BYTES >> 20} MiB; "
                "mine a smaller folder"
            )
        files[rel] = data
    return files


def pack(files: dict[str, bytes], overrides: dict[str, str] | None = None) -> str:
    """The files (with ``overrides`` replacing some texts) as a base64 zip, deterministically."""
    buffer = io.BytesIO()
    merged = {**files, **{k: v.encode("utf-8") for k, v in (overrides or {}).items()}}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for rel in sorted(merged):
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, merged[rel])
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def unpack(blob: str) -> dict[str, bytes]:
    """The files of a :func:`pack` blob (for reports and tests)."""
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(blob))) as archive:
        return {name: archive.read(name) for name in archive.namelist()}
