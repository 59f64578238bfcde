"""``python -m trainers.magrpo --config configs/magrpo_he.yaml [--override a.b=c ...]``.

Also under ``accelerate launch --multi_gpu --num_processes N -m trainers.magrpo ...`` or
``torchrun --nproc_per_node N -m trainers.magrpo ...`` (see docs/distributed.md).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trainers.common.config import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.magrpo.config import parse_args

    try:
        config = parse_args(argv)
    except ConfigError as exc:
        print(f"trainers.magrpo: config error: {exc}", file=sys.stderr)
        return 2
    from trainers.common import distributed
    from trainers.magrpo.trainer import MAGRPOTrainer

    trainer = MAGRPOTrainer(config)
    records = trainer.train()
    distributed.shutdown()
    if records and trainer.rank == 0:
        last = records[-1]
        print(f"done: {last['step']} steps, reward_mean={last['reward_mean']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
