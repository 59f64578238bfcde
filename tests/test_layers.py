"""The import structure: the layers, no circles, no reach into private names.

`.importlinter` at the repository's root holds the contracts (docs/architecture.md explains
them); import-linter checks them. A new module of the harness must be placed in a layer.
"""

from __future__ import annotations

import ast
import configparser
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "plugin", "suites", "trainers", "configs")


def test_the_import_contracts_hold() -> None:
    # In a process of its own: lint_imports configures logging with dictConfig, which disables
    # every logger that exists already, and the later tests of this worker then log nothing.
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        f"sys.exit(lint_imports(config_filename={str(ROOT / '.importlinter')!r}, "
        "no_cache=True, no_logo=True))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def test_every_harness_module_has_a_layer() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config["importlinter:contract:layers"]["layers"]
    placed = {name.strip() for line in layers.splitlines() for name in line.split("|")}
    top = {
        f"harness.{path.stem if path.suffix else path.name}"
        for path in (ROOT / "harness").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    assert top - placed == set(), "place these in a layer of .importlinter"


def private_imports(root: Path = ROOT) -> list[str]:
    """``from M import _name`` where M is another module of the project."""
    found = []
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if "inside" in path.parts:  # runs in the sandbox child, loaded by path
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                    continue
                if node.module.split(".")[0] not in PACKAGES:
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(root)}: {node.module}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    assert private_imports() == []


def test_the_checker_sees_a_private_import(tmp_path: Path) -> None:
    """The scan above would catch one (it is not vacuous)."""
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "x.py").write_text("from harness.evaluate import _secret\n")
    assert private_imports(tmp_path) == ["harness/x.py: harness.evaluate._secret"]
