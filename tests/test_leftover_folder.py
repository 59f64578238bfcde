"""A sample whose folder cannot be removed whole does not cost the samples after it.

The clean-up removes at most ``cleanup.MAX_REMOVED`` entries of a sample's folder (a bound on
its time); what is past it stays, closed, in a folder no view shows. Under bubblewrap that is
the sandbox's own /tmp, a sized tmpfs, so a sample that leaves a million files behind would
take the room, and the inodes, of every later sample of the same server. The server retires
after such a sample instead: the samples queued behind it get a fresh server (a fresh /tmp)
and a fresh try, and pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.evaluate import evaluate
from harness.records import CheckCase, Problem, Sample
from harness.sandbox.server_files import server_module

pytestmark = pytest.mark.slow  # a million files made and removed: about half a minute

# Folders of a thousand files: the clean-up checks its bound between folders.
FOLDERS = server_module("cleanup").MAX_REMOVED // 1000 + 20

# Returns the inodes in use on its folder's file system and its own answer.
HONEST = """
import os
def f(x):
    st = os.statvfs(".")
    return [x + 1, st.f_files - st.f_ffree]
"""

# Leaves more files in its folder than one clean-up removes, then answers.
FLOOD = f"""
import os
def f(x):
    for folder in range({FOLDERS}):
        os.mkdir(str(folder))
        for i in range(1000):
            os.close(os.open(f"{{folder}}/{{i}}", os.O_CREAT | os.O_WRONLY, 0o600))
    return [x + 1, 0]
"""


def _problem(most_inodes: int) -> Problem:
    """A problem whose one check wants the answer, and at most ``most_inodes`` in use where
    the sample's folder lives."""
    check = f"assert v[0][0] == 2 and v[0][1] <= {most_inodes}"
    case = CheckCase("c0", "f(1)", "compare", calls=("candidate(1)",), check=check)
    return Problem("toy", "toy/0", "", "f", (case,), HONEST)


def test_samples_after_one_that_leaves_a_million_files_pass(
    sandbox_mode: str, tmp_path: Path
) -> None:
    # Each honest program its own text: equal programs are judged once.
    samples = [
        Sample("toy/0", f"# {name}\n{program}", name)
        for name, program in (
            ("before", HONEST), ("flood", FLOOD), ("after-1", HONEST), ("after-2", HONEST)
        )
    ]  # fmt: skip
    # Under bubblewrap each sample's /tmp is the server's own: a fresh one holds a few inodes.
    # Without it the folders are on the host's /dev/shm, whose use is anyone's.
    most = 10_000 if sandbox_mode == "bwrap" else 1 << 62
    rows = evaluate([_problem(most)], samples, out_dir=tmp_path, timeout_s=120)
    by_id = {row["sample_id"]: row for row in rows}
    for name in ("before", "after-1", "after-2"):
        assert by_id[name]["status"] == "passed", by_id[name]
