"""The default executor: the batch is scored in this process (the sandbox's fork server and
the analyzer cache stay warm across calls because they live in this process)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.records import Problem, Sample


class LocalExecutor:
    """``evaluate(..., executor="local")``: what the harness always did."""

    def evaluate(
        self, problems: Sequence[Problem], samples: Sequence[Sample], **options: Any
    ) -> list[dict[str, Any]]:
        from harness.pipeline.run import evaluate_local

        return evaluate_local(problems, samples, **options)

    def close(self) -> None:
        """Nothing to release: the shared sandboxes belong to the process (harness.pipeline.runtime)."""
