"""xdist workers that share no file system with the controller (plugin.remote).

The workers here are real execnet gateways that cannot see the controller's files: a
``popen`` gateway whose ``python=`` runs the interpreter under bubblewrap with the test's
folder (the samples, the out folder, the compiled suite) covered by an empty tmpfs, and
execnet's own socket server started the same way in a folder of its own. The worker's sandbox
runs nested inside that (real bubblewrap again). Verdicts must equal a local ``-n 2`` run's,
sample by sample.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin.remote import (
    MAGIC,
    ArchiveError,
    installed_version,
    nodeid_prefix,
    pack_suite,
    read_archive,
    shares_files,
    unpack_suite,
    worker_args,
)

# -- the archive ------------------------------------------------------------------------------
_component = st.text("abcXYZ019_-.", min_size=1, max_size=8).filter(
    lambda c: c not in (".", "..", "__pycache__", ".pytest_cache")
)
_trees = st.dictionaries(
    st.lists(_component, min_size=1, max_size=3).map(tuple), st.binary(max_size=300), max_size=8
).filter(lambda tree: not any(a != b and b[: len(a)] == a for a in tree for b in tree))


@settings(max_examples=30, deadline=None)
@given(tree=_trees)
def test_a_suite_folder_survives_packing_and_unpacking(tree: dict[tuple[str, ...], bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, dest = Path(tmp, "src"), Path(tmp, "dest")
        src.mkdir()
        for parts, data in tree.items():
            path = src.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (src / "__pycache__").mkdir(exist_ok=True)  # the controller's bytecode stays home
        (src / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0bytecode")
        archive = pack_suite(src)
        assert archive == pack_suite(src)  # deterministic: same folder, same bytes
        unpack_suite(archive, dest)
        got = {p.relative_to(dest).parts: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
        assert got == tree


def _archive(entries: list[tuple[str, bytes]]) -> bytes:
    import struct
    import zlib

    body = b"".join(
        struct.pack("<IQ", len(n.encode()), len(d)) + n.encode() + d for n, d in entries
    )
    return MAGIC + zlib.compress(body)


@pytest.mark.parametrize("name", ["../escape.py", "/etc/passwd", "a/../../b", "a//b", "./a"])
def test_an_archive_cannot_write_outside_its_folder(name: str, tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="outside its folder"):
        unpack_suite(_archive([("ok.py", b"x"), (name, b"evil")]), tmp_path / "dest")
    assert not (tmp_path / "escape.py").exists()


def test_a_damaged_archive_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    good = pack_suite(tmp_path)
    assert read_archive(good) == {"a.py": b"x = 1\n"}
    with pytest.raises(ArchiveError, match="wrong header"):
        read_archive(b"PK\x03\x04" + good)
    with pytest.raises(ArchiveError, match="damaged"):
        read_archive(good[:-5])
    import struct
    import zlib

    short = MAGIC + zlib.compress(struct.pack("<IQ", 4, 100) + b"a.py" + b"short")
    with pytest.raises(ArchiveError, match="truncated"):
        read_archive(short)


# -- the worker's command line ----------------------------------------------------------------
def test_worker_arguments_name_no_controller_file(pytester: pytest.Pytester) -> None:
    samples = pytester.makefile(".jsonl", samples="")
    tests = pytester.mkdir("tests")
    config = pytester.parseconfig()
    args = [
        "--llm-eval", "humaneval", "--llm-samples", str(samples), "--llm-per-case", str(tests),
        "-n", "2", "-c", str(samples), "--llm-out", "not-there-yet",
    ]  # fmt: skip
    assert worker_args(config, args) == [
        "--llm-eval", "humaneval", f"--llm-samples={samples}", "--llm-per-case",
        "-n", "2", f"-c{samples}", "--llm-out", "not-there-yet",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "shared"),
    [
        ("popen", True),
        ("execmodel=main_thread_only//popen", True),
        ("popen//python=/opt/py/bin/python3", False),
        ("popen//chdir=/srv/work", False),
        ("popen//via=gw0", False),
        ("ssh=me@box1//python=python3", False),
        ("socket=127.0.0.1:8888", False),
    ],
)
def test_only_plain_local_workers_keep_the_controllers_folder(spec: str, shared: bool) -> None:
    import execnet

    assert shares_files(execnet.XSpec(spec)) is shared


def test_node_ids_follow_the_controllers_rootdir(pytester: pytest.Pytester, tmp_path: Path) -> None:
    config = pytester.parseconfig()
    assert nodeid_prefix(config, config.rootpath / "out" / "suite") == "out/suite/"
    assert nodeid_prefix(config, config.rootpath) == ""
    assert nodeid_prefix(config, tmp_path / "elsewhere" / "suite") == ""  # relative to the suite


# -- real gateways ----------------------------------------------------------------------------
HUMANEVAL_SAMPLES = [
    {"task_id": "HumanEval/0", "sample_id": "right", "completion": (
        "    return any(abs(a - b) < threshold\n"
        "               for i, a in enumerate(numbers) for b in numbers[i + 1:])\n")},
    {"task_id": "HumanEval/0", "sample_id": "wrong", "completion": "    return False\n"},
    {"task_id": "HumanEval/2", "sample_id": "right", "completion": "    return number % 1.0\n"},
    {"task_id": "HumanEval/2", "sample_id": "loops", "completion": "    while True:\n        pass\n"},
    {"task_id": "HumanEval/4", "sample_id": "raises", "completion": "    raise ValueError('no')\n"},
    {"task_id": "HumanEval/4", "sample_id": "exits", "completion": "    import os\n    os._exit(3)\n"},
    {"task_id": "HumanEval/4", "sample_id": "right", "completion": (
        "    mean = sum(numbers) / len(numbers)\n"
        "    return sum(abs(x - mean) for x in numbers) / len(numbers)\n")},
]  # fmt: skip


@pytest.fixture
def worker_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The remote side's own folder (its cwd and $TMPDIR), away from the controller's."""
    home = tmp_path_factory.mktemp("worker-home")
    (home / "tmp").mkdir()
    return home


def remote_python(home: Path, hidden: Path, name: str = "python-remote") -> Path:
    """An interpreter that cannot see ``hidden`` (an empty tmpfs covers it), as a remote
    machine would not: everything else, codeeval-rl's installation included, stays visible."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed")
    script = home / name
    script.write_text(
        "#!/bin/sh\n"
        f"exec {bwrap} --bind / / --dev /dev --proc /proc --tmpfs {hidden} --chdir {home} "
        f'--setenv TMPDIR {home / "tmp"} --die-with-parent -- {sys.executable} "$@"\n'
    )
    script.chmod(0o755)
    marker = hidden / "controller-only"
    marker.touch()
    seen = subprocess.run(
        [str(script), "-c", "import os, sys; print(os.path.exists(sys.argv[1]))", str(marker)],
        capture_output=True,
        text=True,
        check=False,
    )
    if seen.stdout.strip() != "False":
        pytest.skip(f"cannot hide folders from a worker here: {seen.stderr.strip()[-300:]}")
    return script


@pytest.fixture
def socket_worker(worker_home: Path, pytester: pytest.Pytester) -> Iterator[str]:
    """execnet's socket server, under the same hiding interpreter, in a folder of its own."""
    import execnet.script.socketserver as server

    python = remote_python(worker_home, pytester.path, "python-socket")
    log = worker_home / "socketserver.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(python), "-u", server.__file__, "127.0.0.1:0"],
            cwd=worker_home,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not (port := re.search(r"'127\.0\.0\.1', (\d+)\)", log.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the socket server did not start: {log.read_text()[-500:]}")
            time.sleep(0.1)
        yield f"socket=127.0.0.1:{port.group(1)}"
    finally:
        proc.kill()
        proc.wait()


def evaluate(
    pytester: pytest.Pytester, out: Path, *extra: str, samples: list[dict] = HUMANEVAL_SAMPLES
) -> pytest.RunResult:
    path = pytester.path / "samples.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-samples", str(path), "--llm-out", str(out),
        "--llm-timeout", "1", "-p", "no:codeeval_gate", "-p", "no:cacheprovider", "-v", *extra,
    )  # fmt: skip


def verdicts(out: Path) -> dict[tuple[str, str], dict]:
    """results.jsonl rows without what a run measures (timings, resource use)."""
    rows = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("duration_s", None)
        row.pop("execution", None)
        for case in row["cases"]:
            case.pop("duration_s", None)
        rows[row["task_id"], row["sample_id"]] = row
    return rows


def node_ids(result: pytest.RunResult) -> set[str]:
    return set(re.findall(r"(?:PASSED|FAILED|ERROR) (\S+::\S+)", result.stdout.str()))


@pytest.mark.slow
@pytest.mark.bwrap
def test_remote_workers_give_the_local_verdicts(
    pytester: pytest.Pytester, worker_home: Path, socket_worker: str
) -> None:
    # HumanEval/0 gets more samples than one worker's share (plugin.scheduler cuts the
    # module between samples): both workers judge some of them.
    many = [
        {"task_id": "HumanEval/0", "sample_id": f"right-{i}", "completion": "    return any("
         f"abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:]){' ' * i}\n"}
        for i in range(64)
    ]  # fmt: skip
    out = pytester.path / "out"
    local = evaluate(pytester, out, "-n", "2", samples=HUMANEVAL_SAMPLES + many)
    assert local.ret == pytest.ExitCode.TESTS_FAILED, local.stdout.str()[-2000:]
    expected, local_ids = verdicts(out), node_ids(local)
    assert {k: r["status"] for k, r in expected.items() if not k[1].startswith("right-")} == {
        ("HumanEval/0", "right"): "passed",
        ("HumanEval/0", "wrong"): "failed",
        ("HumanEval/2", "right"): "passed",
        ("HumanEval/2", "loops"): "timeout",
        ("HumanEval/4", "raises"): "failed",
        ("HumanEval/4", "exits"): "failed",
        ("HumanEval/4", "right"): "passed",
    }
    assert len(local_ids) == len(expected) == 71

    # A popen and a socket worker that see none of the controller's files, the same out folder.
    python = remote_python(worker_home, pytester.path)
    remote = evaluate(
        pytester, out, "--tx", f"popen//python={python}", "--tx", socket_worker, "--dist", "load",
        samples=HUMANEVAL_SAMPLES + many,
    )  # fmt: skip
    assert remote.ret == pytest.ExitCode.TESTS_FAILED, remote.stdout.str()[-3000:]
    assert verdicts(out) == expected
    assert node_ids(remote) == local_ids  # named as pytest names the controller's files
    ran_on = set(re.findall(r"\[(gw\d)\] \[", remote.stdout.str()))
    assert ran_on == {"gw0", "gw1"}, "a remote worker ran no samples"
    # The remote workers removed their copies of the suite.
    assert not [p for p in (worker_home / "tmp" / "codeeval-suites").iterdir() if p.is_dir()]


@pytest.mark.slow
@pytest.mark.bwrap
def test_remote_workers_with_an_out_folder_outside_the_rootdir(
    pytester: pytest.Pytester, worker_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Outside the rootdir pytest names suite files relative to the suite folder.
    elsewhere = tmp_path_factory.mktemp("controller-out")
    python = remote_python(worker_home, elsewhere)
    local = evaluate(pytester, elsewhere / "local", "--tx", "popen", "--dist", "load")
    remote = evaluate(
        pytester, elsewhere / "remote", "--tx", f"popen//python={python}", "--dist", "load"
    )
    assert remote.ret == pytest.ExitCode.TESTS_FAILED, remote.stdout.str()[-3000:]
    assert verdicts(elsewhere / "remote") == verdicts(elsewhere / "local")
    assert node_ids(remote) == node_ids(local)
    assert "humaneval/test_HumanEval_0.py::sample[right]" in node_ids(remote)


@pytest.mark.bwrap
def test_a_worker_with_another_codeeval_version_is_one_clear_error(
    pytester: pytest.Pytester, worker_home: Path
) -> None:
    # The worker's interpreter finds codeeval-rl 0.0.1 first on its path (a real installed
    # distribution's metadata), as on a machine that was not upgraded.
    old = worker_home / "old-install"
    (old / "codeeval_rl-0.0.1.dist-info").mkdir(parents=True)
    (old / "codeeval_rl-0.0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: codeeval-rl\nVersion: 0.0.1\n"
    )
    python = worker_home / "python-old"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={old} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-split", "test[:1]", "--llm-samples", "canonical",
        "--llm-out", str(out), "-p", "no:codeeval_gate", "--tx", f"popen//python={python}",
        "--dist", "load",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1, result.stderr.str()
    assert f"codeeval-rl 0.0.1 on xdist worker gw0 (popen//python={python}" in errors[0]
    assert f"but {installed_version()} on the controller" in errors[0]
    assert f"install codeeval-rl=={installed_version()}" in errors[0]
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not (out / "results.jsonl").exists()


def test_the_installed_version_is_the_projects() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert installed_version() == project["project"]["version"]


@pytest.mark.bwrap
def test_a_worker_that_was_not_shipped_the_suite_says_why(
    pytester: pytest.Pytester, worker_home: Path
) -> None:
    # Without shipping, a worker that cannot see the controller's files finds no tests.
    python = remote_python(worker_home, pytester.path)
    result = pytester.runpytest_subprocess(
        "--llm-eval", "humaneval", "--llm-split", "test[:1]", "--llm-samples", "canonical",
        "--llm-out", str(pytester.path / "out"), "-p", "no:codeeval_gate",
        "--tx", f"popen//python={python}", "--dist", "load", "--llm-ship", "never",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["codeeval: xdist worker gw0 found no tests in *--llm-ship auto*"])
