"""``python -m trainers.dqn --config configs/dqn_he_cpu.yaml [--override a.b=c ...]``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trainers.common.config import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    from trainers.dqn.config import parse_args

    try:
        config = parse_args(argv)
    except ConfigError as exc:
        print(f"trainers.dqn: config error: {exc}", file=sys.stderr)
        return 2
    from trainers.dqn.data import DataError
    from trainers.dqn.trainer import DQNTrainer

    try:
        records = DQNTrainer(config).train()
    except DataError as exc:
        print(f"trainers.dqn: data error: {exc}", file=sys.stderr)
        return 2
    last = records[-1]
    print(
        f"done: {last['step']} steps, loss={last['loss']:.4f} (td {last['td_loss']:.4f}, "
        f"cql {last['cql_loss']:.4f}); metrics in {config.output.dir}/metrics.jsonl"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
