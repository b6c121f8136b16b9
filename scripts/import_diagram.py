"""Mermaid graphs of the project's imports, read from the source.

Every import statement counts, those inside functions included (as in
``tests/test_import_graph.py``). Three graphs: the product packages, the subpackages of
``detector/``, and the apps of ``provenance/`` (with the modules at its root). An edge
``a --> b`` says that some module of ``a`` imports some module of ``b``; imports inside one
node are not drawn, nor, in a package's graph, imports between the other packages.

    python scripts/import_diagram.py            # print the three graphs
    python scripts/import_diagram.py --write    # refresh them in docs/architecture.md

``docs/architecture.md`` holds each graph between ``<!-- import-diagram:NAME -->`` and
``<!-- /import-diagram -->``; ``tests/test_docs.py`` checks that they equal this output.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("provenance", "generator", "detector", "kernels")
DOC = ROOT / "docs" / "architecture.md"
BLOCK = re.compile(
    r"(<!-- import-diagram:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /import-diagram -->)",
    re.DOTALL,
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    }


def _imports(module: str, path: Path) -> set[str]:
    """Absolute names of everything ``module`` imports (``from a import b``: a and a.b)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _edges(
    node_of: Callable[[str], str | None], inside: str | None = None
) -> list[tuple[str, str]]:
    """Edges between the nodes that ``node_of`` maps module names to (None: not drawn), from
    the modules of the package ``inside`` only when one is given."""
    modules = _modules()
    edges: set[tuple[str, str]] = set()
    for module, path in modules.items():
        if inside is not None and module.split(".")[0] != inside:
            continue
        source = node_of(module)
        if source is None:
            continue
        for name in _imports(module, path):
            if name.split(".")[0] not in PACKAGES:
                continue
            target = node_of(name)
            if target is not None and target != source:
                edges.add((source, target))
    return sorted(edges)


def _packages(name: str) -> str | None:
    top = name.split(".")[0]
    return top if top in PACKAGES else None


def _within(package: str) -> Callable[[str], str | None]:
    """Nodes of one package: its subpackages, each module at its root, and the other
    product packages as a whole."""
    subpackages = {p.name for p in (ROOT / package).iterdir() if (p / "__init__.py").is_file()}

    def node_of(name: str) -> str | None:
        parts = name.split(".")
        if parts[0] != package:
            return parts[0] if parts[0] in PACKAGES else None
        if len(parts) == 1:
            return None  # the package itself (its __init__)
        if parts[1] in subpackages:
            return parts[1]
        if (ROOT / package / f"{parts[1]}.py").is_file():
            return f"{parts[1]}.py"
        return None

    return node_of


def _mermaid(edges: list[tuple[str, str]]) -> str:
    def ident(node: str) -> str:
        return re.sub(r"\W", "_", node)

    nodes = sorted({n for edge in edges for n in edge})
    lines = ["```mermaid", "graph TD"]
    lines += [f'  {ident(n)}["{n}"]' for n in nodes]
    lines += [f"  {ident(a)} --> {ident(b)}" for a, b in edges]
    return "\n".join(lines + ["```"]) + "\n"


def diagrams() -> dict[str, str]:
    """Each graph's name and its Mermaid text."""
    return {
        "packages": _mermaid(_edges(_packages)),
        "detector": _mermaid(_edges(_within("detector"), "detector")),
        "provenance": _mermaid(_edges(_within("provenance"), "provenance")),
    }


def pasted(text: str) -> dict[str, str]:
    """The graphs as ``docs/architecture.md`` holds them."""
    return {m.group("name"): m.group("body") for m in BLOCK.finditer(text)}


def write(path: Path = DOC) -> None:
    graphs = diagrams()

    def refresh(m: re.Match[str]) -> str:
        return m.group(1) + graphs[m.group("name")] + m.group(4)

    path.write_text(BLOCK.sub(refresh, path.read_text()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"refresh the graphs in {DOC.name}")
    args = parser.parse_args(argv)
    if args.write:
        write()
        return
    for name, text in diagrams().items():
        sys.stdout.write(f"{name}:\n{text}\n")


if __name__ == "__main__":
    main()
