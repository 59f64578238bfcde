"""``python -m trainers.ppo --config configs/ppo_he.yaml [--override key=value ...]``.

Also under ``torchrun --nproc_per_node N -m trainers.ppo ...`` or ``accelerate launch
--multi_gpu --num_processes N -m trainers.ppo ...`` (see docs/distributed.md).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from trainers.common.config import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.ppo.config import parse_args

    try:
        config = parse_args(argv)
    except ConfigError as exc:
        print(f"trainers.ppo: {exc}", file=sys.stderr)
        return 2
    from trainers.common import distributed
    from trainers.ppo.trainer import PPOTrainer

    trainer = PPOTrainer(config)
    history = trainer.train()
    distributed.shutdown()
    if trainer.place.is_main:  # one summary line, not one per process
        print(json.dumps({"output_dir": config.output.dir, "steps": len(history)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
