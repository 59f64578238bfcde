"""Small HTML building blocks for self-contained report pages (no external assets)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

__all__ = [
    "Raw",
    "escape",
    "grid",
    "image",
    "page",
    "paragraph",
    "preformatted",
    "section",
    "table",
]

# How a page is encoded: a candidate's text may hold lone surrogates (undecodable output, a
# "\udc80" in an exception message) that strict UTF-8 cannot encode; they are written as
# visible escapes (the six characters \udc80), so the page is always written and valid UTF-8.
PAGE_ERRORS = "backslashreplace"

CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .92em; }
th, td { border: 1px solid #ddd; padding: .3em .6em; text-align: left; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid { display: flex; flex-wrap: wrap; gap: 2px; margin: .5em 0 1em; }
.cell { width: 14px; height: 14px; border-radius: 2px; }
.ok { color: #2e7d32; font-weight: bold; } .bad { color: #c62828; font-weight: bold; }
.muted { color: #777; } img.plot { max-width: 100%; display: block; margin: .6em 0; }
code, pre { background: #f6f6f6; padding: .1em .3em; }
pre { padding: .6em; overflow-x: auto; white-space: pre-wrap; }
"""


def page(title: str, body: Iterable[str]) -> str:
    """A whole self-contained HTML document."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def section(title: str, *parts: str, anchor: str = "") -> str:
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return f"<section{ident}><h2>{escape(title)}</h2>\n" + "\n".join(parts) + "\n</section>"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], css: str = "") -> str:
    """A table; numbers are right-aligned and floats shown with 4 decimals."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for value in row:
            if isinstance(value, Raw):
                cells.append(f"<td>{value.html}</td>")
            elif isinstance(value, bool) or value is None:
                cells.append(f"<td>{escape('' if value is None else str(value))}</td>")
            elif isinstance(value, float):
                cells.append(f'<td class="num">{value:.4f}</td>')
            elif isinstance(value, int):
                cells.append(f'<td class="num">{value}</td>')
            else:
                cells.append(f"<td>{escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>" + "".join(body) + "</tbody></table>"


class Raw:
    """Markup that a table cell takes as is (already escaped by its maker)."""

    def __init__(self, html: str) -> None:
        self.html = html


def image(data_uri: str, alt: str) -> str:
    return f'<img class="plot" src="{data_uri}" alt="{escape(alt)}">'


def paragraph(text: str, css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<p{cls}>{escape(text)}</p>"


def preformatted(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def rate_colour(rate: float | None) -> str:
    """Red (0) through amber to green (1); grey when nothing was scored."""
    if rate is None:
        return "#bdbdbd"
    return f"hsl({round(120 * rate)}, 60%, 42%)"


def grid(cells: Iterable[tuple[str, float | None, str]]) -> str:
    """A per-problem grid: ``(task_id, pass rate or None, tooltip)`` per cell."""
    out = []
    for task, rate, tip in cells:
        out.append(
            f'<div class="cell" data-task="{escape(task)}" title="{escape(tip)}"'
            f' style="background:{rate_colour(rate)}"></div>'
        )
    return '<div class="grid">' + "".join(out) + "</div>"
