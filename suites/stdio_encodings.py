"""Test encodings the stdio data sets use: LiveCodeBench's compressed private tests and
APPS/TACO's ``input_output`` JSON."""

from __future__ import annotations

import base64
import io
import json
import pickle
import zlib
from typing import Any

from suites.stdio_data import IoTest, StdioDataError

# -- LiveCodeBench's compressed tests ---------------------------------------------------------


class _StringsOnly(pickle.Unpickler):
    """Unpickles plain data only: hub data never gets to import or call anything."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


# The largest decompressed tests of one problem read (LiveCodeBench's are tens of MiB).
MAX_DECOMPRESSED = 1 << 30


def decode_compressed_json(text: str) -> Any:
    """LiveCodeBench's ``private_test_cases`` when compressed: base64 of zlib of a pickled
    JSON string. Raises ``ValueError`` saying which layer is broken."""
    try:
        packed = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise ValueError(f"not base64: {exc}") from None
    inflate = zlib.decompressobj()
    try:
        pickled = inflate.decompress(packed, MAX_DECOMPRESSED)
    except zlib.error as exc:
        raise ValueError(f"not zlib data: {exc}") from None
    if inflate.unconsumed_tail:  # a few bytes that inflate to gigabytes must not sink us
        raise ValueError(f"inflates past {MAX_DECOMPRESSED >> 20} MiB")
    try:
        inner = _StringsOnly(io.BytesIO(pickled)).load()
    except Exception as exc:  # a broken or hostile pickle: any error means "not our data"
        raise ValueError(f"not a pickled string: {exc}") from None
    if not isinstance(inner, str):
        raise ValueError(f"the pickle holds a {type(inner).__name__}, not a JSON string")
    try:
        return json.loads(inner)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the decoded text is not JSON: {exc.msg}") from None


def encode_compressed_json(value: Any) -> str:
    """The inverse of :func:`decode_compressed_json` (for fixtures and round-trip tests)."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(value)))).decode("ascii")


# -- APPS / TACO ``input_output`` -----------------------------------------------------------


def _as_text(value: Any) -> str | None:
    """APPS writes some stdio inputs and outputs as lists of lines; join them as it does."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + ("\n" if value else "")
    return None


def parse_input_output(
    value: Any, where: str, field_name: str = "input_output"
) -> tuple[list[IoTest], str | None, list[str]]:
    """APPS/TACO ``input_output``: ``{"inputs": [...], "outputs": [...], "fn_name"?}``.

    Returns (tests, fn_name, defects). For stdio problems each input and output is text (or a
    list of lines); for call-based ones each input is the argument list and each output the
    return value, written here as one JSON value a line and a JSON value. A test that cannot be
    read is left out and named in ``defects``, never silently dropped.
    """
    if not isinstance(value, dict):
        raise StdioDataError(
            where, field_name, f"expected a JSON object, got {type(value).__name__}"
        )
    inputs, outputs = value.get("inputs"), value.get("outputs")
    for key, items in (("inputs", inputs), ("outputs", outputs)):
        if not isinstance(items, list):
            raise StdioDataError(where, f"{field_name}.{key}", "missing or not a list")
    assert isinstance(inputs, list) and isinstance(outputs, list)
    fn_name = value.get("fn_name")
    if fn_name is not None and (not isinstance(fn_name, str) or not fn_name.isidentifier()):
        raise StdioDataError(where, f"{field_name}.fn_name", f"{fn_name!r} is not a Python name")
    defects: list[str] = []
    if len(inputs) != len(outputs):
        defects.append(
            f"{field_name}: {len(inputs)} inputs but {len(outputs)} outputs; "
            f"only the first {min(len(inputs), len(outputs))} pairs are tests"
        )
    tests: list[IoTest] = []
    for index, (given, expected) in enumerate(zip(inputs, outputs, strict=False)):
        if fn_name:
            if not isinstance(given, list):
                defects.append(f"{field_name}.inputs[{index}]: call arguments are not a list")
                continue
            args = "\n".join(json.dumps(a) for a in given)
            tests.append(IoTest(args, json.dumps(expected), "private", "functional"))
            continue
        stdin, stdout = _as_text(given), _as_text(expected)
        if stdin is None or stdout is None:
            bad = "inputs" if stdin is None else "outputs"
            defects.append(f"{field_name}.{bad}[{index}]: not text or a list of lines")
            continue
        tests.append(IoTest(stdin, stdout, "private"))
    if not tests:
        defects.append(f"{field_name}: no usable test")
    return tests, fn_name or None, defects
