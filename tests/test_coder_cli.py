"""``codeeval coder``: configs with clear errors, and evaluate/metrics/export/report end to end
against a real local OpenAI-compatible server that answers each pair with its ground truth."""

from __future__ import annotations

import csv
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.coder.eval_config import ConfigError, load_config
from harness.coder.pairs import build_pairs, load_pairs


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("coder: {max_iter: 0}\n", "field coder.max_iter"),
        ("coder: {max_iter: five}\n", "field coder.max_iter: expected int"),
        ("coder: {backtracking: 1}\n", "field coder.backtracking: expected bool"),
        ("coder: {analyzers: [mypy, pylint]}\n", "field coder.analyzers"),
        ("coder: {max_iters: 3}\n", "field coder.max_iters: unknown setting"),
        ("coder: {feedback_variant: team}\n", "field coder.feedback_variant"),
        ("scores: [bleu_score, rouge]\n", "field 'scores': unknown metric 'rouge'"),
        ("limit: -1\n", "field 'limit'"),
        ("levels: two\n", "field 'levels'"),
        ("model: x\n", "unknown field 'model'"),
        ("coder: [1]\n", "field 'coder'"),
        ("coder: {max_iter: [\n", "not valid YAML"),
    ],
)
def test_a_bad_config_names_its_file_and_field(tmp_path, text, field):
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ")
    assert field in str(info.value)


def test_the_command_reports_a_bad_config_in_one_line(tmp_path, capsys):
    path = write(tmp_path / "bad.yaml", "coder: {n: 0}\n")
    assert main(["coder", "evaluate", "-c", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("codeeval coder evaluate: error: ") and "field coder.n" in err


class TruthServer:
    """Answers each request with the ground truth of the pair whose input it was sent."""

    def __init__(self, pairs: dict[str, str]) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                code = next(m["content"] for m in body["messages"] if m["role"] == "user")
                text = f"```python\n{pairs.get(code, 'pass')}```"
                data = json.dumps(
                    {
                        "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                        "usage": {"completion_tokens": 7},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.model = f"openai:http://127.0.0.1:{self.server.server_address[1]}/v1#truth"


@pytest.fixture
def dataset(tmp_path, monkeypatch) -> Iterator[tuple[Path, TruthServer]]:
    monkeypatch.setenv("CODEEVAL_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "pairs"
    build_pairs(root, ["humaneval"], limit=1)
    truths = {p.input: p.output for level in (2, 3) for p in load_pairs(root / f"level_{level}")}
    server = TruthServer(truths)
    yield root, server
    server.server.shutdown()
    server.server.server_close()


def test_evaluate_metrics_export_and_report_end_to_end(dataset, tmp_path, capsys):
    root, server = dataset
    config = write(
        tmp_path / "truth.yaml",
        f"dataset: {root}\nlevels: [2, 3]\nlimit: 1\n"
        f"coder: {{analyzers: [mypy, hallucination, tests], model_first: '{server.model}', max_iter: 3}}\n"
        "scores: [levenshtein_distance_score, sequence_matcher_score, tests_passed_score,"
        " loops_required_score, all_analyzers_passed_score, trf_similarity_score]\n",
    )
    assert main(["coder", "evaluate", "-c", str(config)]) == 0
    run_dirs = [Path(line) for line in capsys.readouterr().out.split()]
    assert [d.parent.parent.parent.name for d in run_dirs] == ["level_2", "level_3"]
    results = json.loads((run_dirs[0] / "results.json").read_text())["results"]
    record = results["pair0"]
    assert record["passed"] and len(record["iterations"]) == 1  # the truth passes at once
    assert record["iterations"][0]["results"][0]["tests"]["details"]["status"] == "passed"
    assert record["messages"][1]["role"] == "user" and record["tokens_generated"] == 7
    assert "== completion ==" in (run_dirs[0] / "readable_logs" / "0.txt").read_text()

    assert main(["coder", "metrics", "-c", str(config)]) == 0
    rows = {}
    for level in (2, 3):
        with open(root / f"level_{level}" / "eval" / "truth" / "metrics.csv") as fh:
            rows[level] = list(csv.DictReader(fh))
    assert float(rows[2][0]["levenshtein_distance_score"]) == 0.0
    assert float(rows[2][0]["sequence_matcher_score"]) == 1.0
    assert rows[2][0]["tests_passed_score"] == "1.0"
    assert rows[3][0]["tests_passed_score"] == ""  # a snippet has no tests: unavailable
    assert rows[3][0]["all_analyzers_passed_score"] == "1.0"

    conversations = tmp_path / "conv.jsonl"
    assert main(["coder", "export", str(root / "level_2"), "-o", str(conversations)]) == 0
    (line,) = conversations.read_text().splitlines()
    roles = [m["role"] for m in json.loads(line)["messages"]]
    assert roles == ["system", "user", "assistant"]

    page = tmp_path / "report.html"
    assert main(["coder", "report", "-c", str(config), "-o", str(page)]) == 0
    html = page.read_text()
    assert "levenshtein_distance_score" in html and "<svg" not in html  # charts are data URIs
    assert "data:image/svg+xml;base64," in html


def test_complete_prints_the_completion(dataset, tmp_path, capsys):
    root, server = dataset
    pair = load_pairs(root / "level_3")[0]
    source = write(tmp_path / "snippet.py", pair.input)
    args = ["coder", "complete", "-i", str(source), "--model-first", server.model]
    assert main([*args, "--analyzers", "hallucination,signature", "--max-iter", "2"]) == 0
    assert capsys.readouterr().out == pair.output
