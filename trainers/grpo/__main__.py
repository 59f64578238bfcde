"""``python -m trainers.grpo --config configs/grpo_he.yaml [--override key=value ...]``.

Also under ``accelerate launch --multi_gpu --num_processes N -m trainers.grpo ...`` or
``torchrun --nproc_per_node N -m trainers.grpo ...`` (TRL's own accelerate support).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from trainers.common.config import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.grpo.config import parse_args

    try:
        config = parse_args(argv)
    except ConfigError as exc:
        print(f"trainers.grpo: {exc}", file=sys.stderr)
        return 2
    from trainers.common import distributed
    from trainers.grpo.trainer import train

    try:
        metrics = train(config)
    except ConfigError as exc:  # found once the data and the processes are known
        if distributed.env_world().is_main:  # every process stops; one says why
            print(f"trainers.grpo: {exc}", file=sys.stderr)
        distributed.shutdown()
        return 2
    if distributed.env_world().is_main:  # one summary line, not one per process
        print(json.dumps({"output_dir": config.output.dir, **metrics}, default=str))
    distributed.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
