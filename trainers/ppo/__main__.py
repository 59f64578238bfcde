"""``python -m trainers.ppo --config configs/ppo_he.yaml [--override key=value ...]``.

Also under ``torchrun --nproc_per_node N -m trainers.ppo ...`` or ``accelerate launch
--multi_gpu --num_processes N -m trainers.ppo ...`` (see docs/distributed.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trainers.common.main import run_main


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("trainers.ppo", argv)


if __name__ == "__main__":
    sys.exit(main())
