"""What a caller sends to the sandbox and what comes back (the contract of ``harness.sandbox``).

The trusted pytest worker builds a :class:`SampleRequest` per sample; :class:`Sandbox.run`
executes it in a forked child of a fork server and returns a :class:`SampleExecution` whose
values are already decoded into plain Python data (never objects the candidate made).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

CaseStatus = Literal["ok", "assertion", "raised", "timeout", "crashed", "error"]


@dataclass(frozen=True)
class CaseRequest:
    """One check case for the child.

    ``compare``: the child runs ``prelude``, then evaluates each expression of ``calls`` and
    sends back the values. ``sandbox``: a judge process that never runs candidate code runs
    ``prelude`` and then ``statement`` (an assert or a loop), operating on the program's
    objects through a bridge to the child; an ``AssertionError`` is a failed case. In both,
    the name ``candidate`` is bound to the program's entry point, and ``__plain__`` to the
    function that turns a value into plain data.
    """

    case_id: str
    mode: Literal["compare", "sandbox"]
    prelude: str = ""
    calls: tuple[str, ...] = ()
    statement: str = ""
    timeout_s: float = 1.0


@dataclass(frozen=True)
class SampleRequest:
    """One sample: the program, the trusted test setup, and its cases, run in order."""

    program: str
    entry_point: str
    cases: tuple[CaseRequest, ...]
    test_setup: str = ""
    budget_s: float = 30.0
    coverage: bool = False
    # The child seeds ``random`` with it: same seed, same verdict. Judged checks' ``random`` gets
    # a seed keyed with a secret of this process instead (check_seed.py), one per seed and program.
    seed: int = 0
    # A fetched dependency overlay's ``site`` folder (harness.deps), put on the child's
    # sys.path before the program runs; "" for none.
    deps_path: str = ""
    # Trusted helper code of the problem (the prompt's definitions besides the entry point's
    # stub): sandbox-mode checks use these, never the program's copies of them.
    helpers: str = ""
    # After this many cases in a row timed out, the rest are not run (1 or 2; 1 when only
    # the sample's verdict counts: harness.pipeline.sample_parts).
    timeouts_in_a_row: int = 2
    # The cases where each next part of the sample starts (:meth:`Sandbox.parts`): the child
    # waits before each until the caller has judged the part before, and runs no more once
    # it stops. Empty: every case at once. Not with coverage or sandbox-mode cases.
    pauses: tuple[int, ...] = ()
    # The caller's own: never sent to the fork server. Values of cases already decoded and
    # judged in this process, by case id and exact encoding (:class:`KnownValues`): a case
    # whose child sends the same bytes gets them without being decoded again.
    known: Mapping[str, Mapping[bytes, KnownValues]] | None = field(
        default=None, compare=False, repr=False
    )


@dataclass(frozen=True)
class KnownValues:
    """A case's values as decoded from one exact encoding (:attr:`CaseExecution.encoding`),
    and the decoding bounds' units they charged (``codec.decode_value``'s ``left``)."""

    values: tuple[Any, ...]
    units: int


@dataclass
class CaseExecution:
    """What happened to one case inside the sandbox.

    ``status``: ``ok`` (compare values sent back, or a sandbox statement that ran through),
    ``assertion`` (a sandbox-mode assert failed), ``raised`` (the candidate raised),
    ``timeout``, ``crashed`` (the child died: exit, signal, memory), ``error`` (the harness
    could not run it: an infrastructure fault, never the sample's fault).
    """

    case_id: str
    status: CaseStatus
    values: list[Any] | None = None
    exception: dict[str, str] | None = None
    duration_s: float = 0.0
    message: str = ""
    # For compare values sent in the child's own layout: the key of their exact encoding
    # (harness.sandbox.decode.encoding_key) and the units decoding them charged; ``known``:
    # they came from the request's ``known`` values, not decoded again.
    encoding: bytes | None = None
    units: int = 0
    known: bool = False


@dataclass
class SampleExecution:
    """Everything the sandbox observed for one sample."""

    cases: dict[str, CaseExecution]
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    max_rss_kb: int = 0
    coverage: dict[str, Any] | None = None
    infra_error: str | None = None
    notes: list[str] = field(default_factory=list)
    # CPU, peak memory and I/O of the sample's processes, measured by the fork server from
    # kernel counters (the candidate cannot forge them): the keys of RESOURCE_KEYS.
    resources: dict[str, float | int] = field(default_factory=lambda: empty_resources())


# The accounting of one sample (docs/formats.md): CPU seconds, peak resident memory in KiB,
# bytes asked to read/write (``/proc/<pid>/io`` rchar/wchar), bytes that reached the disk.
RESOURCE_KEYS: dict[str, type] = {
    "cpu_user_s": float,
    "cpu_system_s": float,
    "max_rss_kib": int,
    "rchar": int,
    "wchar": int,
    "read_bytes": int,
    "write_bytes": int,
}


def empty_resources() -> dict[str, float | int]:
    """Zero accounting: a sample that never ran (infrastructure error, data defect)."""
    return {key: kind() for key, kind in RESOURCE_KEYS.items()}


@dataclass(frozen=True)
class SandboxSettings:
    """Limits and isolation for every child of one sandbox."""

    memory_mb: int = 1024
    max_processes: int = 64
    max_file_mb: int = 16
    max_open_files: int = 256
    max_output_bytes: int = 64 * 1024
    use_bwrap: bool | None = None  # None: use it when it works here
    hide_paths: tuple[str, ...] = ()  # extra paths the candidate must not see (data, suites)
