"""``python -m trainers.grpo --config configs/grpo_he.yaml [--override key=value ...]``.

Also under ``accelerate launch --multi_gpu --num_processes N -m trainers.grpo ...`` or
``torchrun --nproc_per_node N -m trainers.grpo ...`` (TRL's own accelerate support).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trainers.common.main import run_main


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("trainers.grpo", argv)


if __name__ == "__main__":
    sys.exit(main())
