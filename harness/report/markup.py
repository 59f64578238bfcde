"""SVG markup primitives for the report charts: escaping, compact numbers, elements, labels.

Every text is escaped (suite names and labels come from user data). Numbers are rounded to 2
decimals so that the same input gives the same bytes. There are no font metrics: text widths are
estimated from character counts, which is good enough for laying out axis labels and legends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
TITLE_SIZE = 15
LABEL_SIZE = 13
TICK_SIZE = 11
CHAR_WIDTH = 0.6  # average glyph width per unit of font size (an estimate for layout only)
INK = "#333"
GRID = "#e8e8e8"

# Characters that XML 1.0 does not allow, even escaped (control characters, lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def escape(text: object) -> str:
    """``text`` as SVG character data or a quoted attribute value."""
    clean = _NOT_XML.sub("\ufffd", str(text))
    return (
        clean.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def num(value: float) -> str:
    """A coordinate with at most 2 decimals and no trailing zeros (compact and deterministic)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def text_width(text: str, size: float) -> float:
    """Estimated width in px of ``text`` at font ``size``."""
    return len(text) * size * CHAR_WIDTH


def shorten(text: str, width: float, size: float) -> str:
    """``text`` cut (with an ellipsis) to fit about ``width`` px at font ``size``."""
    fits = max(1, int(width / (size * CHAR_WIDTH)))
    return text if len(text) <= fits else text[: max(0, fits - 1)] + "…"


def attributes(**attrs: object) -> str:
    # Keyword names use "_" for "-" (stroke_width -> stroke-width); None leaves one out.
    return "".join(
        f' {k.rstrip("_").replace("_", "-")}="{num(v) if isinstance(v, float) else escape(v)}"'
        for k, v in attrs.items()
        if v is not None
    )


def element(tag: str, text: str | None = None, /, **attrs: object) -> str:
    """One SVG element; ``text`` (escaped here) becomes its content."""
    if text is None:
        return f"<{tag}{attributes(**attrs)}/>"
    return f"<{tag}{attributes(**attrs)}>{escape(text)}</{tag}>"


def label(
    x: float,
    y: float,
    text: str,
    *,
    size: float = TICK_SIZE,
    anchor: str = "middle",
    angle: float = 0.0,
    colour: str | None = None,
    bold: bool = False,
) -> str:
    """A text at ``(x, y)`` px (its baseline), optionally turned ``angle`` degrees about that point."""
    return element(
        "text",
        text,
        x=float(x),
        y=float(y),
        font_size=None if size == TICK_SIZE else float(size),
        text_anchor=None if anchor == "start" else anchor,
        transform=f"rotate({num(angle)} {num(x)} {num(y)})" if angle else None,
        fill=colour,
        font_weight="bold" if bold else None,
    )


def group(kind: str, parts: Iterable[str], name: str | None = None) -> str:
    """Elements of one kind (``class``), for one named series (``aria-label``) if given."""
    return f"<g{attributes(class_=kind, aria_label=name)}>" + "".join(parts) + "</g>"
