"""Run untrusted, LLM-written code: one forked child per sample of a pre-loaded fork server.

See :mod:`harness.sandbox.api` for the contract and docs/security.md for what it guarantees.
"""

from harness.sandbox.api import (
    CaseExecution,
    CaseRequest,
    KnownValues,
    SampleExecution,
    SampleRequest,
    SandboxSettings,
)
from harness.sandbox.bwrap import bwrap_available
from harness.sandbox.sandbox import Sandbox

__all__ = [
    "CaseExecution",
    "CaseRequest",
    "KnownValues",
    "SampleExecution",
    "SampleRequest",
    "Sandbox",
    "SandboxSettings",
    "bwrap_available",
]
