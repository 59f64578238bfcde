"""System prompts: the bundled ones by name (``harness/coder/prompts/NAME.txt``) or a file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_PROMPT = "default"


def bundled_prompts() -> list[str]:
    folder = resources.files("harness.coder") / "prompts"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


def load_prompt(name_or_path: str) -> str:
    """The text of a bundled prompt (by name) or of a prompt file (by path)."""
    bundled = resources.files("harness.coder") / "prompts" / f"{name_or_path}.txt"
    if "/" not in name_or_path and bundled.is_file():
        return bundled.read_text().strip()
    path = Path(name_or_path)
    if path.is_file():
        return path.read_text().strip()
    raise ValueError(
        f"system prompt {name_or_path!r}: neither a bundled prompt "
        f"({', '.join(bundled_prompts())}) nor a file"
    )
