"""The report page of a training run (``codeeval report RUN_DIR`` on a trainer's output folder).

A trainer writes one JSON object per step to ``<output.dir>/metrics.jsonl`` (see
``trainers.common.logger``). The trainers nest their metrics differently: MAGRPO per turn
(``turn_k``) and per agent (a mapping named after the agent), PPO under ``agents`` and
``critic``, TRL's GRPO as flat names with slashes, evaluation under ``eval`` (or TRL's
``eval_`` prefix). :func:`series_of` reads every numeric leaf of a record into a
:class:`Key` (scope, agent, turn, metric) so that one page serves them all; :func:`topic`
sorts a metric into the page's sections (reward, reward parts, losses, KL, clip fraction,
completion length, pass@k, other). Every problem with a file is a :class:`RunFileError` that
names the file, the line and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import harness.report.html as h
import harness.report.plots as plots
from harness.jsonlines import read_objects
from harness.report.rundata import RunFileError

METRICS_FILE = "metrics.jsonl"
CONFIG_FILE = "config.yaml"
TRAINERS = ("magrpo", "ppo", "grpo", "dqn")
# Nested mappings that are groups of metrics, not agents (MAGRPO's turn blocks hold
# "reward_parts"; PPO's "critic" is shared by the agents and gets a column of its own).
GROUPS = frozenset({"reward_parts", "rewards", "completions", "clip_ratio"})
TURN = re.compile(r"turn_(\d+)")
# Records that are no step of training: TRL's closing line (its run totals).
SUMMARY_KEYS = frozenset({"train_runtime", "train_loss"})
TOPICS = (
    "reward",
    "reward parts",
    "losses",
    "KL",
    "clip fraction",
    "completion length",
    "pass@k",
    "other",
)
MAX_LINES = 10  # lines per chart; more go to a second chart


@dataclass(frozen=True, order=True)
class Key:
    """Where a logged number belongs: ``scope`` "train" or "eval", ``agent`` ("" for the whole
    team, "critic" for a shared critic), ``turn`` (0 when not per turn) and the metric name."""

    scope: str
    agent: str
    turn: int
    metric: str


@dataclass
class TrainingRun:
    """A trainer's output folder: its per-step metrics and the config it ran with."""

    folder: Path
    records: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    totals: dict[str, Any] = field(default_factory=dict)  # TRL's closing record, if any

    @property
    def series(self) -> dict[Key, list[tuple[int, float]]]:
        out: dict[Key, list[tuple[int, float]]] = {}
        for record in self.records:
            step = int(record["step"])
            for key, value in series_of(record):
                out.setdefault(key, []).append((step, value))
        return out

    @property
    def trainer(self) -> str:
        for name in TRAINERS:
            if isinstance(self.config.get(name), Mapping):
                return name
        first = self.records[0] if self.records else {}
        if "agents" in first:
            return "ppo"
        if any(TURN.fullmatch(k) for k in first):
            return "magrpo"
        if any(str(k).startswith("completions/") for k in first):
            return "grpo"
        return "unknown"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def series_of(record: Mapping[str, Any]) -> Iterator[tuple[Key, float]]:
    """Every finite number of one step's record with its :class:`Key` (``step`` left out;
    ``null``, the logger's spelling of a non-finite value, and non-numbers too)."""
    yield from _walk(record, "train", "", 0, ())


def _walk(
    value: Mapping[str, Any], scope: str, agent: str, turn: int, path: tuple[str, ...]
) -> Iterator[tuple[Key, float]]:
    # The step's own record (not a group inside it) holds the keys with a meaning of their own.
    record = not path and scope == "train" and agent == "" and turn == 0
    for raw, item in value.items():
        name = str(raw)
        if record and _is_record_key(name, item):
            yield from _record_key(name, item)
        else:
            yield from _walk_item(name, item, scope, agent, turn, path)


def _is_record_key(name: str, item: Any) -> bool:
    return (
        name == "step"
        or name in SUMMARY_KEYS
        or name.startswith("eval_")
        or (name in ("eval", "agents") and isinstance(item, Mapping))
    )


def _record_key(name: str, item: Any) -> Iterator[tuple[Key, float]]:
    """A top-level key of a step's record: skipped (the step, TRL's totals), an evaluation, or
    per-agent groups."""
    if name == "step" or name in SUMMARY_KEYS:
        return
    if name == "eval":
        yield from _walk(item, "eval", "", 0, ())
    elif name.startswith("eval_"):  # TRL's evaluation metrics: eval_loss, eval_reward
        number = _number(item)
        if number is not None:
            yield Key("eval", "", 0, name.removeprefix("eval_")), number
    else:  # agents
        for who, sub in item.items():
            if isinstance(sub, Mapping):
                yield from _walk(sub, "train", str(who), 0, ())


def _walk_item(
    name: str, item: Any, scope: str, agent: str, turn: int, path: tuple[str, ...]
) -> Iterator[tuple[Key, float]]:
    """One key of any level: a turn's group, an agent's group, a nested group or a number."""
    top = not path
    found = TURN.fullmatch(name)
    if top and turn == 0 and found and isinstance(item, Mapping):
        yield from _walk(item, scope, agent, int(found.group(1)), ())
    elif isinstance(item, Mapping):
        if top and agent == "" and turn == 0 and scope == "train" and name not in GROUPS:
            yield from _walk(item, scope, name, turn, ())
        else:
            yield from _walk(item, scope, agent, turn, (*path, name))
    else:
        number = _number(item)
        if number is not None:
            yield Key(scope, agent, turn, "/".join((*path, name))), number


_KL = re.compile(r"(^|[_/])kl($|[_/])")


def topic(metric: str) -> str:
    """The page section of a metric name (one of :data:`TOPICS`)."""
    name = metric.lower()
    if "pass@" in name:
        return "pass@k"
    if name.startswith(("reward_parts/", "rewards/")):
        return "reward parts"
    if _KL.search(name):
        return "KL"
    if name.startswith("completions/") or "length" in name or "completion_tokens" in name:
        return "completion length"
    if "clip" in name:
        return "clip fraction"
    if "loss" in name:
        return "losses"
    if "reward" in name or "return" in name or "passed_rate" in name:
        return "reward"
    return "other"


# -- loading ------------------------------------------------------------------------------------


def metrics_path(path: Path | str) -> Path:
    """``metrics.jsonl`` of an output folder, or the path itself when it names the file."""
    path = Path(path)
    return path / METRICS_FILE if path.is_dir() else path


def is_training_run(ref: str | Path) -> bool:
    """Whether ``ref`` is a trainer's output folder (or its ``metrics.jsonl``) rather than an
    evaluation's out dir; raises when a folder is neither, so the message can say so."""
    path = Path(ref)
    if path.is_file():
        return path.name == METRICS_FILE
    if not path.is_dir():
        return False  # a history run id, or a missing path that the evaluation loader reports
    if (path / "summary.json").exists():
        return False
    if (path / METRICS_FILE).exists():
        return True
    raise RunFileError(
        f"{path}: neither summary.json (an evaluation's out dir) nor {METRICS_FILE} (a "
        "trainer's output folder) is there; give the folder that a run wrote"
    )


def load_metrics(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The step records of a ``metrics.jsonl`` and its closing totals (TRL writes one)."""
    if not path.exists():
        raise RunFileError(f"{path}: no such file")
    records: list[dict[str, Any]] = []
    totals: dict[str, Any] = {}
    for lineno, record in read_objects(path, RunFileError):
        step = record.get("step")
        if step is None:
            raise RunFileError(f"{path}:{lineno}: field 'step' is missing")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise RunFileError(
                f"{path}:{lineno}: field 'step' must be a whole number >= 0, got {step!r}"
            )
        if SUMMARY_KEYS & record.keys():
            totals = record
        else:
            records.append(record)
    if not records:
        raise RunFileError(f"{path}: no step was logged (the run stopped before its first step)")
    return records, totals


def load_training_run(ref: str | Path) -> TrainingRun:
    """A trainer's output folder (or its ``metrics.jsonl``), with ``config.yaml`` if there."""
    mpath = metrics_path(ref)
    records, totals = load_metrics(mpath)
    config: dict[str, Any] = {}
    cpath = mpath.parent / CONFIG_FILE
    if cpath.exists():
        try:
            loaded = yaml.safe_load(cpath.read_text(encoding="utf-8"))
        except yaml.MarkedYAMLError as exc:
            line = exc.problem_mark.line + 1 if exc.problem_mark else 0
            raise RunFileError(f"{cpath}:{line}: not valid YAML: {exc.problem}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise RunFileError(f"{cpath}: expected a mapping of config sections at the top")
        config = loaded or {}
    return TrainingRun(mpath.parent, records, config, totals)


# -- the page -------------------------------------------------------------------------------------


def _stats_rows(
    series: Mapping[Key, Sequence[tuple[int, float]]], keys: Sequence[Key]
) -> list[list[Any]]:
    rows = []
    for key in keys:
        values = [v for _, v in series[key]]
        rows.append(
            [
                key.metric,
                key.agent or "(all)",
                key.turn or "",
                len(values),
                values[0],
                values[-1],
                min(values),
                max(values),
                math.fsum(values) / len(values),
            ]
        )
    return rows


STATS_HEADERS = ["metric", "agent", "turn", "steps", "first", "last", "min", "max", "mean"]


def _where(key: Key) -> str:
    """Whose line a series is: its agent and turn, or "overall" (the team, every turn)."""
    return ", ".join(w for w in (key.agent, f"turn {key.turn}" if key.turn else "") if w) or (
        "overall"
    )


def _charts(
    series: Mapping[Key, Sequence[tuple[int, float]]], keys: Sequence[Key], per_metric: bool = True
) -> list[str]:
    """Line charts of ``keys``: one per metric with a line per agent and turn (numbers of one
    scale share an axis), or, with ``per_metric`` off (reward parts), one per agent and turn
    with a line per metric. At most :data:`MAX_LINES` lines each, so a legend stays readable."""
    groups: dict[str, list[Key]] = {}
    for key in keys:
        groups.setdefault(key.metric if per_metric else _where(key), []).append(key)
    out = []
    for name, members in groups.items():
        for first in range(0, len(members), MAX_LINES):
            chunk = members[first : first + MAX_LINES]
            if per_metric:
                heading = f"{'evaluation ' if chunk[0].scope == 'eval' else ''}{name} per step"
                lines = {_where(k): list(series[k]) for k in chunk}
            else:
                heading = f"reward parts per step ({name})"
                lines = {k.metric.split("/", 1)[-1]: list(series[k]) for k in chunk}
            if len(members) > MAX_LINES:
                heading += f" {first // MAX_LINES + 1}"
            out.append(h.image(plots.step_lines(heading, lines), heading))
    return out


def _topic_section(
    name: str,
    series: Mapping[Key, Sequence[tuple[int, float]]],
    keys: Sequence[Key],
    missing: str,
) -> str:
    anchor = name.lower().replace(" ", "-").replace("@", "at")
    title = name[0].upper() + name[1:]
    if not keys:
        return h.section(title, h.paragraph(missing, "muted"), anchor=anchor)
    return h.section(
        title,
        *_charts(series, keys, per_metric=name != "reward parts"),
        h.table(STATS_HEADERS, _stats_rows(series, keys)),
        anchor=anchor,
    )


def _flat_config(config: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in config.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out += _flat_config(value, name)
        else:
            out.append((name, json.dumps(value, default=str)[:200]))
    return out


def overview(run: TrainingRun, keys: Sequence[Key]) -> str:
    steps = [int(r["step"]) for r in run.records]
    agents = sorted({k.agent for k in keys if k.agent})
    turns = sorted({k.turn for k in keys if k.turn})
    evals = sorted({int(r["step"]) for r in run.records if "eval" in r})
    model = run.config.get("model", {})
    facts: list[tuple[str, Any]] = [
        ("folder", str(run.folder)),
        ("trainer", run.trainer),
        ("model", model.get("name", "") if isinstance(model, Mapping) else ""),
        ("steps logged", len(run.records)),
        ("steps", f"{min(steps)} to {max(steps)}"),
        ("agents", ", ".join(agents) or "(one policy)"),
        ("turns", ", ".join(map(str, turns)) or "1"),
        ("evaluated at steps", ", ".join(map(str, evals)) or "(none)"),
    ]
    facts += [(f"totals.{k}", json.dumps(v)) for k, v in run.totals.items() if k != "step"]
    parts = [h.table(["", ""], [(k, v) for k, v in facts if v != ""])]
    if run.config:
        parts.append(
            "<details><summary>config.yaml</summary>"
            + h.table(["setting", "value"], _flat_config(run.config))
            + "</details>"
        )
    return h.section("Run", *parts, anchor="run")


def evaluation_section(
    series: Mapping[Key, Sequence[tuple[int, float]]], keys: Sequence[Key]
) -> str:
    if not keys:
        return h.section(
            "Evaluation",
            h.paragraph(
                "This run logged no evaluation (set the trainer's eval interval).", "muted"
            ),
            anchor="evaluation",
        )
    # The top level repeats the last turn's numbers (the team's final answer); per-turn
    # lines are drawn when there are turns, the top level otherwise.
    turns = any(k.turn for k in keys)
    drawn = [k for k in keys if k.turn or not turns]
    # pass@k first, then the rewards and returns, then anything else an evaluation logs
    order = {"pass@k": 0, "reward": 1}
    drawn.sort(key=lambda k: (order.get(topic(k.metric), 2), k.metric, k.agent, k.turn))
    parts = _charts(series, [k for k in drawn if k.metric != "problems"])
    parts.append(h.table(STATS_HEADERS, _stats_rows(series, keys)))
    return h.section("Evaluation", *parts, anchor="evaluation")


MISSING = {
    "reward": "No reward was logged.",
    "reward parts": "No named reward parts were logged (the reward preset has none, or the "
    "trainer logs the total only).",
    "losses": "No loss was logged.",
    "KL": "No KL divergence was logged (MAGRPO logs it with a KL penalty, beta > 0; a "
    "value-based run has none).",
    "clip fraction": "No clip fraction was logged (only ratio-clipping trainers, PPO and TRL's "
    "GRPO, have one).",
    "completion length": "No completion length was logged.",
}


def training_page(run: TrainingRun) -> str:
    """The HTML page of one training run."""
    series = run.series
    keys = sorted(series)
    train = [k for k in keys if k.scope == "train"]
    by_topic: dict[str, list[Key]] = {t: [] for t in TOPICS}
    for key in train:
        by_topic[topic(key.metric)].append(key)
    # pass@k logged during training itself (rare) is shown with the other metrics.
    by_topic["other"] += by_topic.pop("pass@k")
    sections = [overview(run, keys)]
    for name, missing in MISSING.items():
        sections.append(_topic_section(name, series, by_topic[name], missing))
    sections.append(evaluation_section(series, [k for k in keys if k.scope == "eval"]))
    if by_topic["other"]:
        sections.append(
            h.section(
                "Other metrics",
                h.table(STATS_HEADERS, _stats_rows(series, by_topic["other"])),
                anchor="other",
            )
        )
    return h.page(f"codeeval training report: {run.folder}", sections)


def write_training_report(run: TrainingRun, path: Path) -> Path:
    """Write the training page of ``run`` to ``path`` and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(training_page(run), encoding="utf-8", errors=h.PAGE_ERRORS)
    return path
