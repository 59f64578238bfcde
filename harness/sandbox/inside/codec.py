"""Moved: the value channel is :mod:`harness.sandbox.channel.codec` (shared by both sides).

This name stays for ``from harness.sandbox.inside import codec`` (harness/languages/types.py):
it is that very module. Nothing loads this file inside the sandbox.
"""

import sys

from harness.sandbox.channel import codec

sys.modules[__name__] = codec
