"""``python -m trainers.magrpo --config configs/magrpo_he.yaml [--override a.b=c ...]``.

Also under ``accelerate launch --multi_gpu --num_processes N -m trainers.magrpo ...`` or
``torchrun --nproc_per_node N -m trainers.magrpo ...`` (see docs/distributed.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trainers.common.main import run_main


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("trainers.magrpo", argv)


if __name__ == "__main__":
    sys.exit(main())
