"""Repository → mined suite (``codeeval mine``); the suite adapter is :mod:`suites.mined`."""

from harness.mining.model import Drop, MineReport, MiningError
from harness.mining.pipeline import MineOptions, mine

__all__ = ["Drop", "MineOptions", "MineReport", "MiningError", "mine"]
