"""``python -m trainers.dqn --config configs/dqn_he_cpu.yaml [--override a.b=c ...]``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trainers.common.main import run_main


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("trainers.dqn", argv)


if __name__ == "__main__":
    sys.exit(main())
