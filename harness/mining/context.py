"""The prompt of a mined problem: the target's header and docstring, after the context a
developer would look at, within a token budget, and never the target's own body.

The prompt is Python: context lines are comments, then the (class header and) ``def`` header
with its docstring as written, so ``prompt + body`` is the original definition. Context, in
order of priority: the module's docstring and imports, the headers and docstrings of the
repository names the function uses, and documentation paragraphs (README, Sphinx or MkDocs
sources) that name it. A context piece that quotes a line of the body is left out.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from harness.mining.model import Target
from harness.mining.source import DOC_DIRS, ModuleInfo, header_end, walk_files

CHARS_PER_TOKEN = 4  # a rough, tokenizer-free estimate: the budget is a guide, not a contract
DOC_SUFFIXES = (".rst", ".md", ".txt")
MAX_DOC_PARAGRAPHS = 3
MAX_PARAGRAPH_CHARS = 700


@dataclass(frozen=True)
class DocParagraph:
    path: str
    text: str


def read_docs(root: Path) -> list[DocParagraph]:
    """Paragraphs of the repository's documentation sources and top-level READMEs."""
    paragraphs: list[DocParagraph] = []
    for path in walk_files(root):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        top_readme = len(parts) == 1 and parts[0].lower().startswith("readme")
        if not (top_readme or (parts[0] in DOC_DIRS and rel.endswith(DOC_SUFFIXES))):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for block in re.split(r"\n\s*\n", text):
            if block.strip():
                paragraphs.append(DocParagraph(rel, block.strip("\n")))
    return paragraphs


def significant_lines(body: str) -> set[str]:
    """The body's lines that would give it away if quoted (long, not comments)."""
    lines = {line.strip() for line in body.splitlines()}
    return {line for line in lines if len(line) >= 16 and not line.startswith("#")}


def quotes_body(text: str, body: str) -> bool:
    squashed = {" ".join(line.split()) for line in text.splitlines()}
    inline = " ".join(text.split())
    return any(
        line in squashed or " ".join(line.split()) in inline for line in significant_lines(body)
    )


def stub(module_text: str, target: Target) -> str:
    """The target's definition without its body: decorators as comments, header, docstring."""
    lines = module_text.splitlines()
    def_line = lines[target.def_line - 1]
    indent = def_line[: len(def_line) - len(def_line.lstrip())]
    out = [f"{indent}# decorated with @{d}" for d in target.decorators]
    out += lines[target.def_line - 1 : target.hole_start - 1]
    if target.class_name:
        note = (
            f"bases: {target.bases}; other members not shown"
            if target.bases
            else ("other members not shown")
        )
        out.insert(0, f"class {target.class_name}:  # {note}")
    return "\n".join(out) + "\n"


def build_prompt(
    target: Target,
    module: ModuleInfo,
    modules: dict[str, ModuleInfo],
    docs: list[DocParagraph],
    reference: str,
    repo_name: str,
    budget_tokens: int = 1024,
) -> str:
    """The prompt of ``target`` (see the module docstring)."""
    by_name = {m.module: m for m in modules.values()}
    pieces: list[list[str]] = []
    if module.docstring:
        pieces.append(["The module's docstring:", *_cap(module.docstring, 12)])
    if module.imports:
        pieces.append(
            ["The module's imports:", *[ln for i in module.imports[:30] for ln in i.splitlines()]]
        )
    for name in target.uses:
        found = _describe(name, module, by_name)
        if found:
            pieces.append(found)
    for paragraph in _doc_paragraphs(target, docs):
        pieces.append([f"From the documentation ({paragraph.path}):", *_cap(paragraph.text, 14)])

    head = [
        f"Repository {repo_name}, module {module.module} ({module.path}).",
        f"Complete the body of {target.qualname}; the context below comes from the repository.",
    ]
    budget = budget_tokens * CHARS_PER_TOKEN - len(stub(module.text, target))
    chosen: list[str] = _comment(head)
    used = sum(len(line) + 1 for line in chosen)
    for piece in pieces:
        if quotes_body("\n".join(piece), reference):
            continue  # never show the body, even where the docs quote it
        lines = ["#"] + _comment(piece)
        size = sum(len(line) + 1 for line in lines)
        if used + size > budget:
            continue
        chosen += lines
        used += size
    return "\n".join(chosen) + "\n\n" + stub(module.text, target)


def _describe(name: str, module: ModuleInfo, by_name: dict[str, ModuleInfo]) -> list[str] | None:
    if "." in name:  # Class.method of the target's own class
        cls, _, method = name.partition(".")
        header, doc = _method(module, cls, method)
        if header is None:
            return None
        return [f"{name} (a method of the same class):", *header.splitlines(), *_doc(doc)]
    owner, definition = module, module.definitions.get(name)
    if definition is None and name in module.imported:
        source, original = module.imported[name]
        owner = by_name.get(source)  # type: ignore[assignment]
        definition = owner.definitions.get(original) if owner else None
    if definition is None or owner is None:
        return None
    where = "this module" if owner is module else owner.path
    return [
        f"{name} ({definition.kind} in {where}):",
        *definition.header.splitlines(),
        *_doc(definition.docstring),
    ]


def _method(module: ModuleInfo, cls: str, method: str) -> tuple[str | None, str | None]:
    for node in module.tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if (
                    isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and item.name == method
                ):
                    lines = module.text.splitlines()
                    span = lines[item.lineno - 1 : header_end(lines, item.lineno)]
                    header = "\n".join(line.strip() for line in span)
                    return header, ast.get_docstring(item)
    return None, None


def _doc(docstring: str | None) -> list[str]:
    lines = _cap(docstring, 8)
    if not lines:
        return []
    if len(lines) == 1:
        return [f'    """{lines[0]}"""']
    return [f'    """{lines[0]}', *(f"    {line}" for line in lines[1:]), '    """']


def _doc_paragraphs(target: Target, docs: list[DocParagraph]) -> list[DocParagraph]:
    """Paragraphs naming the target: its dotted name first, then its bare name as a call."""
    dotted = re.compile(rf"\b{re.escape(target.module)}\.{re.escape(target.qualname)}\b")
    qual = re.compile(rf"\b{re.escape(target.qualname)}\b")
    called = re.compile(rf"\b{re.escape(target.name)}\(")
    ranked = []
    for index, paragraph in enumerate(docs):
        if dotted.search(paragraph.text):
            rank = 0
        elif target.class_name and qual.search(paragraph.text):
            rank = 1
        elif called.search(paragraph.text):
            rank = 2
        else:
            continue
        ranked.append((rank, index, paragraph))
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [
        DocParagraph(p.path, p.text[:MAX_PARAGRAPH_CHARS])
        for _, _, p in ranked[:MAX_DOC_PARAGRAPHS]
    ]


def _cap(text: str | None, max_lines: int) -> list[str]:
    if not text:
        return []
    lines = text.strip("\n").splitlines()
    return lines[:max_lines] + (["..."] if len(lines) > max_lines else [])


def _comment(lines: list[str]) -> list[str]:
    return [f"# {line}".rstrip() for line in lines]
