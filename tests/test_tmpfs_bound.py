"""What a sample may keep in files is bounded, not only each file's size.

Under bubblewrap the samples' work folders live on the sandbox's own /tmp, a tmpfs: its pages
are memory that no OOM kill of the sample frees, and ``max_file_mb`` caps one file, not how
many. Every tmpfs of the sandbox therefore gets a size (``bwrap --size``): /tmp the memory
limit, at most ``bwrap.TMPFS_CAP_MB``; the mount plan's empty folders and /dev/shm a little.
A sample writing past it gets ENOSPC; the next sample of the same server finds the room free
again; an honest sample writing a few megabytes passes.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator

import pytest

from harness.sandbox import CaseRequest, SampleRequest, Sandbox, SandboxSettings, bwrap
from harness.sandbox.bwrap import bwrap_available

needs_size = pytest.mark.skipif(
    not bwrap_available() or not bwrap.size_works("bwrap"),
    reason="bubblewrap, with --size (>= 0.7, not setuid), is not usable here",
)
CASE = (CaseRequest("c", "compare", calls=("candidate()",), timeout_s=60.0),)

# Writes files of (16 MiB - 1) bytes, in its work folder, in tempfile's folder (TMPDIR, under
# /tmp) and in /tmp itself when it may, until a write fails or LIMIT bytes are written; the
# files stay. Returns the errno that stopped it, the bytes written, and the size of the file
# system its folder is on.
FILL = """
import errno, os, tempfile
def f():
    chunk = b"x" * ((16 << 20) - 1)
    written, stop, n = 0, None, 0
    places = [".", tempfile.gettempdir(), "/tmp"]
    while written < LIMIT and stop is None:
        where = places[n % len(places)]
        n += 1
        try:
            with open(os.path.join(where, f"fill{n}"), "wb") as fh:
                fh.write(chunk)
            written += len(chunk)
        except OSError as exc:
            if where == "/tmp" and exc.errno == errno.EACCES:
                places.remove("/tmp")  # /tmp is the server's (the sample runs as another uid)
                continue
            stop = errno.errorcode.get(exc.errno, str(exc.errno))
    st = os.statvfs(".")
    return [stop, written, st.f_blocks * st.f_frsize]
"""

FREE = """
import os
def f():
    st = os.statvfs(".")
    return [st.f_bfree * st.f_frsize, st.f_blocks * st.f_frsize, sorted(os.listdir("/tmp"))]
"""

# An honest sample: a few files of a megabyte, in its folder and in tempfile's, read back.
HONEST = """
import os, tempfile
def f():
    sizes = []
    for i in range(3):
        with open(f"data{i}.bin", "wb") as fh:
            fh.write(bytes([i]) * (1 << 20))
        with tempfile.NamedTemporaryFile(delete=False) as fh:
            fh.write(b"y" * (1 << 20))
        sizes.append(os.path.getsize(f"data{i}.bin") + os.path.getsize(fh.name))
    return sizes
"""


def _value(sandbox: Sandbox, program: str, **names: object):
    head = "".join(f"{k} = {v!r}\n" for k, v in names.items())
    result = sandbox.run(SampleRequest(head + program, "f", CASE, budget_s=120.0))
    assert result.infra_error is None, result.infra_error
    case = result.cases["c"]
    assert case.status == "ok", (case.message, case.exception, result.stderr)
    return case.values[0]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(SandboxSettings(use_bwrap=True)) as sb:
        yield sb


def test_every_tmpfs_of_the_command_is_sized() -> None:
    if not bwrap.size_works("bwrap"):
        pytest.skip("this bubblewrap has no usable --size")
    for memory_mb, tmp in ((256, 256 << 20), (4096, bwrap.TMPFS_CAP_MB << 20), (None, None)):
        command = bwrap.build_command([], ["/bin/true"], memory_mb=memory_mb)
        at = [i for i, arg in enumerate(command) if arg == "--tmpfs"]
        assert at, command
        for i in at:
            assert command[i - 2] == "--size", command[i - 2 : i + 2]
        sizes = {command[i + 1]: int(command[i - 1]) for i in at}
        assert sizes["/tmp"] == (tmp or bwrap.tmpfs_bytes())
        assert sizes["/dev/shm"] == bwrap.EMPTY_TMPFS_BYTES
        assert all(v == bwrap.EMPTY_TMPFS_BYTES for k, v in sizes.items() if k != "/tmp")
        assert command[command.index("--") - 6 :][:6] == [
            "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"
        ]  # fmt: skip


def test_the_tmpfs_bound_follows_the_memory_limit() -> None:
    assert bwrap.tmpfs_bytes(256) == 256 << 20
    assert bwrap.tmpfs_bytes(1 << 20) == bwrap.TMPFS_CAP_MB << 20
    assert bwrap.tmpfs_bytes(None) == bwrap.TMPFS_CAP_MB << 20


def test_an_old_bubblewrap_gets_no_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bwrap, "size_works", lambda _bwrap: False)
    command = bwrap.build_command([], ["/bin/true"], memory_mb=256)
    assert "--size" not in command
    assert "--tmpfs" in command


@needs_size
def test_filling_the_work_folder_stops_at_the_bound(sandbox: Sandbox) -> None:
    bound = bwrap.tmpfs_bytes(None)  # what the Sandbox's own command asks for at most
    stop, written, total = _value(sandbox, FILL, LIMIT=bound + (64 << 20))
    assert stop == errno.errorcode[errno.ENOSPC], (stop, written, total)
    assert total <= bound
    assert written <= total
    # The sample's files went with its folder: the next sample has the whole room again.
    free, total_after, listing = _value(sandbox, FREE)
    assert total_after == total
    assert free >= total - (8 << 20), (free, total, listing)
    assert [name for name in listing if name.startswith("fill")] == []


@needs_size
def test_an_honest_sample_writing_files_passes(sandbox: Sandbox) -> None:
    assert _value(sandbox, HONEST) == [2 << 20] * 3
