"""HTML reports (harness/report): built from results files written here, opened in Chromium."""

from __future__ import annotations

import base64
import html
import json
import math
import re
import shutil
import struct
import subprocess
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.history import History
from harness.report import (
    compare_page,
    compare_verdicts,
    load_out_dir,
    plotarea,
    plots,
    report_page,
    scales,
    write_report,
)
from harness.report.rundata import RunFileError, check_suites, load_run

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)


def write_run(
    out: Path, outcomes: dict[str, list[str]], suite: str = "humaneval", rewards: bool = True
) -> Path:
    """An out dir with results.jsonl and summary.json: task -> statuses of its samples."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for task, statuses in outcomes.items():
        for i, status in enumerate(statuses):
            ok = status == "passed"
            row: dict[str, Any] = {
                "suite": suite,
                "task_id": task,
                "sample_id": str(i),
                "status": status,
                "passed": ok,
                "error_kind": "infra" if status == "error" else None,
                "cases": [
                    {
                        "case_id": "c0",
                        "status": "passed" if ok else status,
                        "message": "" if ok else "AssertionError: assert candidate(1) == 2\nmore",
                        "weaker": i % 2 == 1,
                        "duration_s": 0.01,
                    }
                ],
            }
            if rewards:
                row["reward"] = 1.0 if ok else 0.2
                row["reward_parts"] = {"tests": float(ok), "style": 0.25 * (i % 5)}
            rows.append(row)
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    scored = [r for r in rows if r["status"] != "error"]
    summary = {
        "suites": {
            suite: {
                "problems": len(outcomes),
                "samples": len(rows),
                "passed": sum(r["passed"] for r in rows),
                "failed": sum(r["status"] == "failed" for r in rows),
                "timeout": sum(r["status"] == "timeout" for r in rows),
                "errors": sum(r["status"] == "error" for r in rows),
                "data_errors": 0,
                "pass@1": sum(r["passed"] for r in scored) / max(1, len(scored)),
            }
        },
        "settings": {"suites": [suite], "k": [1], "model": "tiny", "split": None},
    }
    (out / "summary.json").write_text(json.dumps(summary))
    return out


RUN_A = {
    f"HumanEval/{i}": ["passed", "passed"] if i % 3 else ["failed", "timeout"] for i in range(12)
}
RUN_B = {**RUN_A, "HumanEval/1": ["failed", "failed"], "HumanEval/3": ["passed", "error"]}


SVG = "{http://www.w3.org/2000/svg}"


def svg_uris(page: str) -> list[str]:
    return re.findall(r'<img class="plot" src="(data:image/svg\+xml;base64,[^"]+)"', page)


def svg_images(page: str) -> list[ET.Element]:
    """The embedded SVG plots of a page, decoded and parsed (each must be well-formed XML)."""
    images = []
    for uri in svg_uris(page):
        root = ET.fromstring(base64.b64decode(uri.split(",", 1)[1]).decode("utf-8"))
        assert root.tag == f"{SVG}svg"
        assert float(root.get("width", 0)) > 100 and float(root.get("height", 0)) > 50
        images.append(root)
    return images


def chart_title(root: ET.Element) -> str:
    return root.findtext(f"{SVG}title") or ""


def groups(root: ET.Element, kind: str) -> list[ET.Element]:
    """The ``<g class=kind>`` mark groups of a chart (one per series)."""
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == kind]


def plot_box(root: ET.Element, index: int = 0) -> tuple[float, float, float, float]:
    """``(left, top, width, height)`` of a plot area, from its clip path."""
    return rect_box(root.findall(f"{SVG}defs/{SVG}clipPath/{SVG}rect")[index])


def rect_box(rect: ET.Element) -> tuple[float, float, float, float]:
    x, y, width, height = (float(rect.get(k, 0)) for k in ("x", "y", "width", "height"))
    return x, y, width, height


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_report_page_has_every_section(tmp_path: Path) -> None:
    run = load_out_dir(write_run(tmp_path / "a", RUN_A))
    page = report_page(run)
    for needle in ("pass@k", "Failure kinds", "Reward parts", "Problems", "AssertionError"):
        assert needle in page
    assert page.count('class="cell"') == 12
    assert 'data-task="HumanEval/0"' in page and "0/2 passed" in page
    assert "4 problem(s) with failing samples" in page  # HumanEval/0, 3, 6, 9
    assert "<script" not in page and "http" not in page  # self-contained, nothing to fetch
    bars, rewards, histogram = svg_images(page)  # in the page's order
    assert chart_title(bars) == "Sample verdicts"
    # One bar per suite, one segment per non-zero status, widths in proportion to the counts
    # (16 passed, 4 failed, 4 timeout, no error), laid end to end from the plot's left edge.
    (suite,) = groups(bars, "hbar")
    assert suite.get("aria-label") == "humaneval"
    rects = suite.findall(f"{SVG}rect")
    colours = plots.STATUS_COLOURS
    assert [r.get("fill") for r in rects] == [
        colours["passed"],
        colours["failed"],
        colours["timeout"],
    ]
    widths = [rect_box(r)[2] for r in rects]
    # (coordinates are written with 2 decimals)
    assert widths[0] == pytest.approx(4 * widths[1], abs=0.05)
    assert widths[1] == pytest.approx(widths[2], abs=0.02)
    left, _, width, _ = plot_box(bars)
    assert rect_box(rects[0])[0] == pytest.approx(left, abs=0.01)
    assert rect_box(rects[0])[0] + sum(widths) == pytest.approx(
        left + width * 24 / 25, abs=0.05
    )  # axis 0..25
    assert {"passed", "failed", "timeout", "error"} <= set(texts(bars))  # the legend
    # The histogram: 4 problems at pass@1 0 (first bin) and 8 at 1 (last bin, closed).
    assert chart_title(histogram) == "Distribution of per-problem pass rates"
    (series,) = groups(histogram, "histogram")
    left, top, width, height = plot_box(histogram)
    first, last = (rect_box(r) for r in series.findall(f"{SVG}rect"))
    assert first[0] == pytest.approx(left, abs=0.01) and first[2] == pytest.approx(
        width / 10, abs=0.02
    )
    assert last[0] + last[2] == pytest.approx(left + width, abs=0.02)
    assert last[3] == pytest.approx(height, abs=0.02)  # 8 is the axis' top tick (0, 2, ... 8)
    assert first[3] == pytest.approx(height / 2, abs=0.02)
    assert first[1] + first[3] == pytest.approx(top + height, abs=0.02)  # bars stand on 0
    # Reward parts: one box per series, the total reward first.
    boxes = groups(rewards, "box")
    assert [b.get("aria-label") for b in boxes] == ["reward", "tests", "style"]
    assert all(len([e for e in b if e.get("class") == "median"]) == 1 for b in boxes)
    assert report_page(run) == page  # deterministic: the same run, the same bytes


def test_report_without_rewards_and_with_history(tmp_path: Path) -> None:
    out = write_run(tmp_path / "a", RUN_A, rewards=False)
    summary = json.loads((out / "summary.json").read_text())
    summary["data_errors"] = [{"task_id": "HumanEval/99", "reason": "the reference fails"}]
    summary["input_errors"] = ["samples.jsonl:3: task_id: unknown problem 'X'"]
    (out / "summary.json").write_text(json.dumps(summary))
    db = History(tmp_path / "h.sqlite")
    run = load_out_dir(out)
    for day in (1, 2):
        db.record(
            summary=run.summary, rows=run.rows, model="tiny", created_at=f"2026-01-0{day}T00:00:00"
        )
    page = report_page(run, db)
    assert "Reward parts" not in page and "History" in page
    assert "the reference fails" in page and "unknown problem &#x27;X&#x27;" in page
    bars, histogram, history = svg_images(page)
    assert chart_title(history) == "pass@1 over time (run history)"
    (line,) = groups(history, "series")  # one polyline per suite
    assert line.get("aria-label") == "humaneval"
    (polyline,) = line.findall(f"{SVG}polyline")
    points = [tuple(map(float, p.split(","))) for p in (polyline.get("points") or "").split()]
    assert len(points) == 2 and points[0][0] < points[1][0]  # oldest first, left to right
    assert len(line.findall(f"{SVG}circle")) == 2
    assert {"01-01 00:00", "01-02 00:00"} <= set(texts(history))  # a day apart: hours shown
    assert "History" not in report_page(run, History(tmp_path / "absent.sqlite"))
    assert not (tmp_path / "absent.sqlite").exists()  # reporting never creates a database


def test_compare_page(tmp_path: Path) -> None:
    a = load_out_dir(write_run(tmp_path / "a", RUN_A))
    b = load_out_dir(write_run(tmp_path / "b", RUN_B))
    verdicts = compare_verdicts(a, b)
    assert [v.suite for v in verdicts] == ["humaneval"]
    assert [c.task_id for c in verdicts[0].regressed] == ["HumanEval/1"]
    assert [c.task_id for c in verdicts[0].improved] == ["HumanEval/3"]
    page = compare_page(a, b, verdicts)
    assert "HumanEval/1" in page and "paired bootstrap" in page
    (chart,) = svg_images(page)
    (scatter,) = groups(chart, "scatter")
    dots = scatter.findall(f"{SVG}circle")
    assert len(dots) == 12  # one per common problem
    fills = [d.get("fill") for d in dots]
    assert fills.count("#c62828") == 1 and fills.count("#2e7d32") == 1  # HumanEval/1 and /3
    (bars,) = groups(chart, "bars")
    assert [r.get("fill") for r in bars.findall(f"{SVG}rect")] == ["#1565c0", "#6a1b9a"]
    assert f"{verdicts[0].current_pass1:.3f}" in texts(chart)
    other = load_out_dir(write_run(tmp_path / "c", RUN_A, suite="mbpp"))
    assert "no suite in common" in compare_page(a, other, compare_verdicts(a, other))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"summary\.json: no such file"),
        ("{not json", r"summary\.json:1: column 2: not valid JSON"),
        ("[1, 2]", "expected a JSON object at the top"),
        ('{"settings": {}}', "field 'suites' is missing"),
        (
            '{"suites": {"humaneval": {"problems": 3}}}',
            r"field 'suites\.humaneval\.pass@1' is missing, and so are the counts",
        ),
        ('{"suites": {"humaneval": {"pass@1": 7}}}', r"must be a number in \[0, 1\]"),
        ('{"suites": {"humaneval": {"pass@one": 0.5}}}', r"pass@one': k must be an integer"),
        ('{"suites": {"h": {"samples": -1}}}', r"'suites\.h\.samples' must be an integer >= 0"),
    ],
)
def test_bad_summary_files_name_file_and_field(
    tmp_path: Path, content: str | None, message: str
) -> None:
    if content is not None:
        (tmp_path / "summary.json").write_text(content)
    with pytest.raises(RunFileError, match=message) as info:
        load_out_dir(tmp_path)
    assert str(tmp_path / "summary.json") in str(info.value)


def test_bad_results_files_name_the_line(tmp_path: Path) -> None:
    out = write_run(tmp_path / "a", RUN_A)
    (out / "results.jsonl").write_text('{"task_id": "x", "status": "passed"}\n{"task_id": "y"}\n')
    with pytest.raises(RunFileError, match=r"results\.jsonl:2: field 'status' is missing"):
        load_out_dir(out)
    (out / "results.jsonl").unlink()
    with pytest.raises(RunFileError, match="must lie beside summary.json"):
        load_out_dir(out / "summary.json")
    run = load_out_dir(write_run(tmp_path / "b", RUN_A, suite="mbpp"))
    with pytest.raises(RunFileError, match="has no 'humaneval' .*the baseline has: mbpp"):
        check_suites(run, ["humaneval"])


def test_load_run_from_history_id(tmp_path: Path) -> None:
    db = History(tmp_path / "h.sqlite")
    run = load_out_dir(write_run(tmp_path / "a", RUN_A))
    run_id = db.record(summary=run.summary, rows=run.rows, model="tiny")
    again = load_run(str(run_id), db)
    assert again.run_id == run_id and again.model == "tiny" and len(again.rows) == len(run.rows)
    assert load_run(f"history:{run_id}", db).label == f"run {run_id}"
    with pytest.raises(RunFileError, match="no run with id 99"):
        load_run("99", db)


def test_suite_names_are_escaped_in_the_plots(tmp_path: Path) -> None:
    """Suite names are user data: markup, quotes and characters XML forbids stay text."""
    name = "<b>x</b> & \"quotes\" 'too'\x01"
    run = load_out_dir(write_run(tmp_path / "a", RUN_A, suite=name))
    page = report_page(run)
    bars, _, histogram = svg_images(page)  # parsing them is the first check
    (suite,) = groups(bars, "hbar")
    shown = name.replace("\x01", "\ufffd")
    assert suite.get("aria-label") == shown and shown in texts(bars)
    assert groups(histogram, "histogram")[0].get("aria-label") == shown
    for uri in svg_uris(page):
        assert "<b>" not in base64.b64decode(uri.split(",", 1)[1]).decode()


def test_every_plot_is_well_formed_for_odd_data() -> None:
    """Empty, single-valued and non-finite inputs still give well-formed, finite charts."""
    uris = [
        plots.status_bars({"s": {"error": 0}}),
        plots.rate_histogram({"s": [], "t": [0.3, 0.3, 2.0]}),
        plots.reward_parts({"tests": [], "style": [0.5]}, []),
        plots.reward_parts({"tests": [math.nan, 1.0]}, [1.0, 1.0, 1.0]),
        plots.history_lines({"s": [("not a time", 1, 0.5)], "t": []}),
        plots.history_lines({"s": [("2026-01-01T00:00:00+05:00", 1, 0.5), ("2026-01-01", 2, 1)]}),
        plots.compare_scatter([(1.0, 1.0)], "a" * 300, "b", 1.0, 0.0),
    ]
    for uri in uris:
        text = base64.b64decode(uri.removeprefix("data:image/svg+xml;base64,")).decode()
        root = ET.fromstring(text)
        assert "nan" not in text and "inf" not in text, text
        assert root.get("viewBox")
    assert plots.rate_histogram({"s": [0.5]}) == plots.rate_histogram({"s": [0.5]})


def test_status_bar_segments_per_suite() -> None:
    counts = {"a": {"passed": 3, "failed": 1}, "b": {"timeout": 2}, "c": {"error": 5, "passed": 0}}
    root = ET.fromstring(base64.b64decode(plots.status_bars(counts).split(",", 1)[1]))
    bars = groups(root, "hbar")
    assert [g.get("aria-label") for g in bars] == ["a", "b", "c"]
    assert [len(g.findall(f"{SVG}rect")) for g in bars] == [2, 1, 1]
    unit = rect_box(bars[0].findall(f"{SVG}rect")[1])[2]  # one failed sample
    for g, c in zip(bars, counts.values(), strict=True):
        widths = [rect_box(r)[2] for r in g.findall(f"{SVG}rect")]
        assert widths == pytest.approx([unit * n for n in c.values() if n], abs=0.02)
    tops = [rect_box(g.findall(f"{SVG}rect")[0])[1] for g in bars]
    assert tops == sorted(tops)  # the first suite on top


@given(
    st.floats(-1e9, 1e9, allow_nan=False),
    st.floats(-1e9, 1e9, allow_nan=False),
    st.integers(3, 10),
    st.booleans(),
)
def test_nice_ticks_cover_the_range(lo: float, hi: float, most: int, integer: bool) -> None:
    ticks = scales.nice_ticks(lo, hi, max_ticks=most, integer=integer)
    assert 2 <= len(ticks) <= most
    assert all(a < b for a, b in zip(ticks, ticks[1:], strict=False))
    assert ticks[0] <= min(lo, hi) and ticks[-1] >= max(lo, hi)
    steps = {
        round((b - a) / (ticks[1] - ticks[0]), 6) for a, b in zip(ticks, ticks[1:], strict=False)
    }
    assert steps == {1.0}  # evenly spaced
    if integer:
        assert all(t == int(t) for t in ticks)
    labels = [scales.tick_label(t, ticks[1] - ticks[0]) for t in ticks]
    assert len(set(labels)) == len(labels)  # no two ticks read the same


def test_nice_ticks_examples() -> None:
    assert scales.nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert scales.nice_ticks(0, 3, integer=True) == [0, 1, 2, 3]
    assert scales.nice_ticks(0, 24, integer=True) == [0, 5, 10, 15, 20, 25]
    assert scales.nice_ticks(-0.5, 3.0) == [-0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3]
    assert [scales.tick_label(t, 0.25) for t in (0, 0.25, -0.5)] == ["0", "0.25", "-0.50"]
    assert scales.nice_ticks(2, 2) == [1.8, 1.9, 2.0, 2.1, 2.2]


@given(
    st.datetimes(datetime(1980, 1, 1), datetime(2100, 1, 1)),
    st.integers(0, 10**10),
)
def test_time_ticks_are_readable_dates_in_range(start: datetime, seconds: int) -> None:
    lo = start.replace(tzinfo=timezone.utc).timestamp()
    lo, hi = scales.time_range(lo, lo + seconds)
    ticks = scales.time_ticks(lo, hi)
    assert 1 <= len(ticks) <= 7
    values = [t for t, _ in ticks]
    assert (
        all(a < b for a, b in zip(values, values[1:], strict=False))
        and lo <= values[0]
        and values[-1] <= hi
    )
    labels = [label for _, label in ticks]
    assert len(set(labels)) == len(labels)
    assert all(re.fullmatch(r"\d{4}(-\d\d(-\d\d)?)?|\d\d-\d\d \d\d:\d\d", x) for x in labels)


@given(st.lists(st.floats(-0.5, 1.5, allow_nan=False), max_size=30))
def test_histogram_counts_match_numpy(values: list[float]) -> None:
    expected, _ = np.histogram(values, bins=plots.HIST_BINS)
    assert plots.histogram_counts(values) == expected.tolist()


@given(st.lists(st.floats(-100, 100, allow_nan=False), min_size=1, max_size=40))
def test_box_stats_quartiles_and_whiskers(values: list[float]) -> None:
    b = plotarea.box_stats(values)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    assert (b.q1, b.median, b.q3) == pytest.approx((q1, median, q3), abs=1e-9)
    assert b.mean == pytest.approx(float(np.mean(values)), abs=1e-9)
    reach = 1.5 * (q3 - q1)
    assert sorted(b.outliers) == sorted(v for v in values if not q1 - reach <= v <= q3 + reach)
    assert b.low <= b.q1 <= b.median <= b.q3 <= b.high
    assert all(q1 - reach - 1e-9 <= w <= q3 + reach + 1e-9 for w in (b.low, b.high))


# -- in a real browser -------------------------------------------------------------------------

CHECKER = """<script>
window.__errors = [];
window.addEventListener("error", (e) => window.__errors.push(String(e.message || e.type)), true);
window.addEventListener("load", () => {
  const imgs = Array.from(document.images).map((i) => ({
    alt: i.alt, ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth, h: i.naturalHeight}));
  const out = document.createElement("pre");
  out.id = "__check";
  out.textContent = JSON.stringify({errors: window.__errors, imgs: imgs,
    h2: Array.from(document.querySelectorAll("h2")).map((h) => h.textContent)});
  document.body.appendChild(out);
});
</script>"""


def render(page: Path, tmp_path: Path) -> dict[str, Any]:
    """Open ``page`` in headless Chromium and insist that no script failed."""
    seen, console = _open(page, tmp_path)
    assert not console, console
    return seen


def render_unchecked(page: Path, tmp_path: Path) -> dict[str, Any]:
    return _open(page, tmp_path)[0]


def _open(page: Path, tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    """What ``page`` reported about itself after load, and the console's uncaught errors."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (CI installs it: apt-get install chromium)")
    probe = tmp_path / f"probe-{page.name}"
    text = page.read_text()
    # The checker goes first in <head>, so it sees errors from everything after it.
    probe.write_text(text.replace("<head>", "<head>" + CHECKER, 1))
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="__check">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the page did not finish loading:\n{done.stdout[:500]}\n{done.stderr[-2000:]}"
    console = [line for line in done.stderr.splitlines() if "Uncaught" in line]
    return dict(json.loads(html.unescape(found.group(1)))), console


def test_report_and_compare_render_in_chromium(tmp_path: Path) -> None:
    a_dir = write_run(tmp_path / "a", RUN_A)
    b_dir = write_run(tmp_path / "b", RUN_B)
    db = History(tmp_path / "h.sqlite")
    a, b = load_out_dir(a_dir), load_out_dir(b_dir)
    db.record(summary=a.summary, rows=a.rows, model="tiny", created_at="2026-01-01T00:00:00")
    db.record(summary=b.summary, rows=b.rows, model="tiny", created_at="2026-01-02T00:00:00")
    report = write_report(b, b_dir / "report.html", db)
    comparison = tmp_path / "compare.html"
    comparison.write_text(compare_page(a, b, compare_verdicts(a, b)))
    seen = render(report, tmp_path)
    assert seen["errors"] == []
    assert len(seen["imgs"]) == 4 and all(i["ok"] and i["w"] > 100 for i in seen["imgs"]), seen
    assert {"pass@k", "Failure kinds", "Reward parts", "Problems", "History"} <= set(seen["h2"])
    seen = render(comparison, tmp_path)
    assert seen["errors"] == [] and seen["h2"] == ["Runs", "humaneval"]
    assert len(seen["imgs"]) == 1 and seen["imgs"][0]["ok"], seen


def read_png(data: bytes) -> tuple[int, int, list[list[tuple[int, int, int]]]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced RGB(A) PNG (Chromium's
    screenshots): a few lines of zlib instead of an imaging library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    chunks: dict[bytes, bytes] = {}
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + size]
        idat += body if kind == b"IDAT" else b""
        chunks.setdefault(kind, body)
        pos += size + 12
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride, prev = zlib.decompress(idat), width * bpp, bytearray(width * bpp)
    rows: list[list[tuple[int, int, int]]] = []
    for y in range(height):
        # Each row is a filter type byte, then bytes relative to their left/upper neighbours.
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([(line[x], line[x + 1], line[x + 2]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def screenshot(
    uri: str, width: int, height: int, tmp_path: Path
) -> list[list[tuple[int, int, int]]]:
    """The pixels of an ``<img src=uri>`` alone at the top left of a white page, as Chromium
    draws it (the region of the image only)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (CI installs it: apt-get install chromium)")
    page, shot = tmp_path / "plot.html", tmp_path / "plot.png"
    page.write_text(
        f'<!DOCTYPE html><html><body style="margin:0;background:#fff"><img src="{uri}"></body></html>'
    )
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            f"--window-size={width + 40},{height + 40}",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    w, h, rows = read_png(shot.read_bytes())
    assert w >= width and h >= height, (w, h)
    return [row[:width] for row in rows[:height]]


def near(pixel: tuple[int, int, int], hex_colour: str) -> bool:
    """``pixel`` is about ``hex_colour`` ("#rrggbb")."""
    rgb = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return all(abs(a - b) <= 6 for a, b in zip(pixel, rgb, strict=True))


def test_svg_plots_render_visibly_in_chromium(tmp_path: Path) -> None:
    """The status bars as Chromium paints them: not blank, and the bars in their colours."""
    page = report_page(load_out_dir(write_run(tmp_path / "a", RUN_A)))
    uri, root = svg_uris(page)[0], svg_images(page)[0]
    width, height = int(float(root.get("width", 0))), int(float(root.get("height", 0)))
    rows = screenshot(uri, width, height, tmp_path)
    pixels = [p for row in rows for p in row]
    inked = [p for p in pixels if min(p) < 230]
    assert len(inked) > 0.1 * len(pixels), f"only {len(inked)} of {len(pixels)} pixels drawn"
    colours = plots.STATUS_COLOURS
    passed = sum(near(p, colours["passed"]) for p in pixels)
    failed = sum(near(p, colours["failed"]) for p in pixels)
    # 16 passed, 4 failed samples; legend swatches and anti-aliased edges blur the exact 4.
    assert failed > 0.01 * len(pixels) and 2.5 < passed / failed < 5.5
    # Across the middle of the plot, the passed segment starts at the plot's left edge.
    left, top, _, plot_height = plot_box(root)
    middle = rows[int(top + plot_height / 2)]
    greens = [x for x, p in enumerate(middle) if near(p, colours["passed"])]
    assert greens and abs(greens[0] - left) <= 2 and len(greens) > 100


def test_the_browser_check_catches_broken_pages(tmp_path: Path) -> None:
    """The checker is not vacuous: a script error and an undecodable image are seen."""
    broken = tmp_path / "broken.html"
    # An unescaped "&" makes an SVG ill-formed: the browser then shows no image at all.
    bad_svg = base64.b64encode(
        b'<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><text>A & B</text></svg>'
    ).decode()
    broken.write_text(
        "<!DOCTYPE html><html><head><title>x</title></head><body><h2>x</h2>"
        '<img class="plot" src="data:image/png;base64,AAAA" alt="bad">'
        f'<img class="plot" src="data:image/svg+xml;base64,{bad_svg}" alt="ill-formed">'
        "<script>undefinedFunction();</script></body></html>"
    )
    seen = render_unchecked(broken, tmp_path)
    assert any("undefinedFunction" in e for e in seen["errors"])
    assert [i["ok"] for i in seen["imgs"]] == [False, False]


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ({"status": "timeout", "message": "took 3 s"}, "timeout"),
        ({"status": "failed", "message": "assert None == 5"}, "wrong answer"),
        ({"status": "failed", "message": "AssertionError: assert 1 == 2"}, "wrong answer"),
        ({"status": "failed", "message": "TypeError: unsupported operand"}, "TypeError"),
        ({"status": "failed", "message": "json.decoder.JSONDecodeError: x"}, "JSONDecodeError"),
        ({"status": "failed", "message": "the child exited with status 3"}, "other failure"),
        ({"status": "failed", "message": "Failed: expected True, got False"}, "wrong answer"),
        (
            {"status": "failed", "message": "Failed: not within atol=1e-06: expected 0.5, got 6"},
            "wrong answer",
        ),
        (
            {"status": "failed", "message": "Failed: candidate raised IndexError: list index"},
            "IndexError",
        ),
        ({"status": "failed", "message": "candidate raised numpy.AxisError: 2"}, "AxisError"),
        (
            {"status": "failed", "message": "Failed: check failed inside the sandbox"},
            "other failure",
        ),
        ({"status": "error", "message": "sandbox could not start"}, "error"),
    ],
)
def test_failure_kinds(case: dict[str, str], kind: str) -> None:
    from harness.report.pages import failure_kind

    assert failure_kind(case) == kind


def test_cases_not_run_are_counted_apart_from_failures(tmp_path: Path) -> None:
    """A sample stopped at its first failure (EvalPlus's default) leaves its later cases not
    run: the report counts them as such, not as hundreds of thousands of failures, and the
    failure kinds hold the judged failures alone."""
    from harness.pipeline.sample_parts import NOT_RUN
    from harness.report.pages import failure_kinds

    out = write_run(tmp_path / "a", {"HumanEval/0": ["failed", "passed"]})
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    rows[0]["cases"] = [  # parts judged out of order: the unrun cases may come first
        *({"case_id": f"c{i}", "status": "failed", "message": NOT_RUN} for i in range(2, 40)),
        {"case_id": "c40", "status": "timeout", "message": "not run: the case before it timed out"},
        {"case_id": "c0", "status": "failed", "message": "Failed: expected 3, got 4"},
        {"case_id": "c1", "status": "failed", "message": "Failed: candidate raised KeyError: 'x'"},
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = load_out_dir(out)
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", failure_kinds(run))).split())
    assert "not run 39" in words and "failed 2" in words
    assert "39 case(s) were not run" in words
    assert "wrong answer 1" in words and "KeyError 1" in words
    assert "other failure" not in words and "not run: an earlier" not in words
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", report_page(run))).split())
    assert "HumanEval/0 1/2 failed: Failed: expected 3, got 4" in page  # its first failure
