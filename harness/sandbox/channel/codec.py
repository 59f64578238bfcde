"""The value channel's one entry: plain data out of the child, checked strictly on the way in.

Stdlib only: the fork server loads this file by path (inside bubblewrap the harness package is
not there, and a candidate must not import it by name), and it then loads its parts by path
beside it; the trusted side imports it, and them, as the ``harness.sandbox.channel`` package.

- :mod:`wire`: the tags, frames, shared bounds, errors and the bridge's hooks;
- :mod:`encoder`: values of the candidate's process as tagged plain data (runs in the child);
- :mod:`canonical`: the digest by equality of a value over the bounds (both sides);
- :mod:`decoder` (with :mod:`leaves`, :mod:`bounds`, :mod:`standins`): the bounded rebuild on
  the trusted side, which parses what the candidate wrote.
"""

from __future__ import annotations

import importlib.util
import json
import os
from types import ModuleType
from typing import Any


def _load_part(name: str, **needs: ModuleType) -> ModuleType:
    """A part of the channel, by path beside this file, with the parts it needs put in its
    globals before it runs (by-path modules have no package to import them from)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_codeeval_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(needs)
    spec.loader.exec_module(module)
    return module


if __name__.startswith("harness."):  # imported by the trusted side, as the package
    from harness.sandbox.channel import (
        bounds,
        canonical,
        decoder,
        encoder,
        leaves,
        standins,
        wire,
    )
else:  # loaded by path (the fork server, a fresh interpreter): the parts in dependency order
    wire = _load_part("wire")
    canonical = _load_part("canonical", wire=wire)
    encoder = _load_part("encoder", wire=wire, canonical=canonical)
    bounds = _load_part("bounds", wire=wire, encoder=encoder)
    standins = _load_part("standins", wire=wire, canonical=canonical, encoder=encoder)
    leaves = _load_part("leaves", wire=wire, bounds=bounds, standins=standins)
    decoder = _load_part("decoder", wire=wire, bounds=bounds, standins=standins, leaves=leaves)

# Frames and the shared vocabulary.
MAGIC, HEADER_SIZE, MAX_FRAME = wire.MAGIC, wire.HEADER_SIZE, wire.MAX_FRAME
MAX_REPLY = wire.MAX_REPLY
KIND_READY, KIND_CASE, KIND_END = wire.KIND_READY, wire.KIND_CASE, wire.KIND_END
MAX_DEPTH, MAX_NODES, MAX_TEXT = wire.MAX_DEPTH, wire.MAX_NODES, wire.MAX_TEXT
MAX_REPR, MAX_MESSAGE, MAX_ITER_ITEMS = wire.MAX_REPR, wire.MAX_MESSAGE, wire.MAX_ITER_ITEMS
ChannelError, TooLarge = wire.ChannelError, wire.TooLarge
CandidateError, TransferLimit = wire.CandidateError, wire.TransferLimit
frame, parse_header, parse_payload = wire.frame, wire.parse_header, wire.parse_payload
values_frame = wire.values_frame
FRAME_NEEDS_BUILTINS = wire.FRAME_NEEDS_BUILTINS
hooks = wire.hooks  # the object bridge's (bridge.py): handles instead of opaque values
# Encoding (the child's side).
encode_value, type_name, raised = encoder.encode_value, encoder.type_name, encoder.raised
ENCODERS = encoder.ENCODERS  # type id -> encoder; the judge adds its proxies' (bridge.py)
# Decoding (the trusted side's) and its bounds.
decode_value, end_of_iterator = decoder.decode_value, standins.end_of_iterator
Opaque, ReplayIterator, Digest = standins.Opaque, standins.ReplayIterator, standins.Digest
digest = canonical.digest
check_hash_flood = bounds.check_hash_flood
MAX_INT_BITS, MAX_TOTAL_INT_BITS = bounds.MAX_INT_BITS, bounds.MAX_TOTAL_INT_BITS
MAX_UNITS, MAX_SAMPLE_UNITS = bounds.MAX_UNITS, bounds.MAX_SAMPLE_UNITS
MAX_DECIMAL_TEXT, MAX_DECIMAL_EXPONENT = bounds.MAX_DECIMAL_TEXT, bounds.MAX_DECIMAL_EXPONENT
MAX_ARRAY_NDIM, MAX_FLOOD_COST = bounds.MAX_ARRAY_NDIM, bounds.MAX_FLOOD_COST

_json_dumps = json.dumps
_json_loads = json.loads


def plain(value: Any) -> Any:
    """Encode then decode in-process: strips custom objects (``__plain__`` in checks)."""
    return decode_value(_json_loads(_json_dumps(encode_value(value))))
