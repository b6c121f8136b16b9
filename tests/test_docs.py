"""The docs name only what exists: every repository path (``detector/core/prf.py``), every
dotted module name down to a class's attribute (``detector.evidence.scan.best_windows``), every
qualified name in a code span (``scoring.cuda_available``, ``KeyStore.refreshed``), every
pytest node id and every link between the pages, anchors included. Read statically: nothing
is imported."""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
TOP = ("benchmarks", "detector", "docs", "generator", "kernels", "provenance", "scripts", "tests")
TOP_RE = "|".join(TOP)
# A path inside the repository: a top-level folder, then names; a trailing "/" for a folder.
PATH = re.compile(rf"(?<![\w/.<>$-])((?:{TOP_RE})/(?:[\w.-]+/)*[\w.-]*)(?:::([\w\[\]-]+))?")
# A dotted name under a project package: a module, then at most attributes of it.
DOTTED = re.compile(rf"(?<![\w/.-])((?:{TOP_RE})(?:\.[A-Za-z_]\w*)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A dotted name ending so is a file name (``detector.md``, ``benchmarks.py``), not a module.
FILE_SUFFIXES = tuple(".md .py .json .npz .txt .toml .yml .sh .png .log .sqlite3".split())


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def _anchors(page: Path) -> frozenset[str]:
    return frozenset(
        _slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", page.read_text(), re.MULTILINE)
    )


@cache
def _bound_names(path: Path) -> frozenset[str]:
    """Names a module binds at its top level (definitions, assignments, imports)."""
    names: set[str] = set()
    for node in _top_level(ast.parse(path.read_text(), str(path)).body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a module's top level, those inside ``if`` and ``try`` included."""
    out = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If | ast.Try):
            inner = node.body + node.orelse + getattr(node, "finalbody", [])
            inner += [s for h in getattr(node, "handlers", []) for s in h.body]
            out.extend(_top_level(inner))
    return out


@cache
def _string_names() -> frozenset[str]:
    """Dotted names the code spells as strings: Celery task and logger names."""
    found: set[str] = set()
    for top in ("detector", "generator", "kernels", "provenance"):
        for path in (ROOT / top).rglob("*.py"):
            found.update(re.findall(rf"[\"']((?:{TOP_RE})(?:\.\w+)+)[\"']", path.read_text()))
    return frozenset(found)


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return base if base.is_dir() else None


def _dotted_ok(name: str) -> bool:
    """The longest prefix of ``name`` that is a module or package exists, and the next part,
    if any, is a submodule or a name that module binds."""
    if name in _string_names():
        return True
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        found = _module_file(parts[:cut])
        if found is None:
            continue
        if cut == len(parts):
            return True
        return found.suffix == ".py" and _resolves(parts[cut:], found)
    return False


def _node_ok(path: Path, node: str) -> bool:
    test = node.split("[")[0]
    return path.suffix == ".py" and test in _bound_names(path)


def _problems(page: Path) -> list[str]:
    text = page.read_text()
    out = []
    for m in PATH.finditer(text):
        rel, node = m.group(1).rstrip("."), m.group(2)
        path = ROOT / rel
        if text[m.end() : m.end() + 1] == "*":  # a glob: it matches something
            rest = re.match(r"[\w.*/-]*", text[m.end() + 1 :])
            if not any(ROOT.glob(rel + "*" + (rest.group(0) if rest else ""))):
                out.append(f"glob {rel}* matches nothing")
        elif not path.exists():
            out.append(f"path {rel} does not exist")
        elif node and not _node_ok(path, node):
            out.append(f"test {rel}::{node} does not exist")
    for m in DOTTED.finditer(text):
        name = m.group(1)
        end = text[m.end() : m.end() + 1]
        if name.endswith(FILE_SUFFIXES) or end in ("/", "-"):
            continue  # a file name or part of a path
        if not _dotted_ok(name):
            out.append(f"name {name} does not exist")
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        if not linked.exists():
            out.append(f"link {target} points to no file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            out.append(f"link {target} points to no heading")
    return out


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_the_page_names_only_what_exists(page):
    assert _problems(page) == []


# --- Qualified names in backticks that are not rooted at a package ---------------------------
# `scoring.cuda_available`, `KeyStore.refreshed`, `settings.PROVENANCE_MAX_WAIT`,
# `keys.selectors.key_family`, `floors.py`: the first part names a project module (by its
# file's or package's name) or a class, and the rest must be bound there. Names whose first
# part is neither (`os.environ`, `np.float64`) are another library's and are not read.
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
QUALIFIED = re.compile(r"(?<![\w./$-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-]|\.\w)")
PACKAGES = ("detector", "generator", "kernels", "provenance")
# Not code: fields of JSON documents the pages describe (a receipt's `text.sha256`, a
# combined answer's `combined.verdict`).
NOT_CODE = frozenset({"text.sha256", "combined.verdict"})
# File names: `.py` ones must exist in the repository; others name files outside it
# (a model's `config.json`, `model.safetensors`) or are checked as paths above.
OTHER_SUFFIXES = frozenset("md json npz txt toml yml yaml sh png log sqlite3 js html css".split())
OTHER_SUFFIXES |= frozenset({"safetensors", "gguf", "csv", "pdf", "docx", "zip", "po", "mo"})


@cache
def _project_files() -> dict[str, list[Path]]:
    """Project modules by the name a page may call them (``scoring`` for both scorings)."""
    found: dict[str, list[Path]] = {}
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            stem = path.parent.name if path.name == "__init__.py" else path.stem
            found.setdefault(stem, []).append(path)
    return found


@cache
def _file_names() -> frozenset[str]:
    inside = [path for top in TOP for path in (ROOT / top).rglob("*.py")]
    return frozenset(path.name for path in [*inside, *ROOT.glob("*.py")])


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@cache
def _classes() -> dict[str, list[ast.ClassDef]]:
    found: dict[str, list[ast.ClassDef]] = {}
    for paths in _project_files().values():
        for path in paths:
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.ClassDef):
                    found.setdefault(node.name, []).append(node)
    return found


def _class_names(node: ast.ClassDef) -> set[str]:
    """What a class binds: methods, properties, nested classes, fields, enum members."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    return names


def _in_class(name: str, attribute: str, seen: frozenset[str] = frozenset()) -> bool:
    """``attribute`` is bound by a project class ``name`` or by a project class it derives
    from (a base from another library may bind anything: then it is not read)."""
    for node in _classes().get(name, []):
        if attribute in _class_names(node):
            return True
        for base in node.bases:
            base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
            if base_name not in _classes():
                return True  # a library's base class: not read
            if base_name not in seen and _in_class(base_name, attribute, seen | {name}):
                return True
    return False


@cache
def _quoted_in_code() -> frozenset[str]:
    """Dotted strings the code spells in quotes (permissions, task names, settings)."""
    found: set[str] = set()
    for paths in _project_files().values():
        for path in paths:
            found.update(re.findall(r"[\"']([A-Za-z_]\w*(?:\.\w+)+)[\"']", path.read_text()))
    return frozenset(found)


def _resolves(parts: list[str], path: Path) -> bool:
    """``parts`` are a submodule path and then attributes, from module or package ``path``."""
    if not parts:
        return True
    head, rest = parts[0], parts[1:]
    if path.name == "__init__.py":
        for sub in (path.parent / f"{head}.py", path.parent / head / "__init__.py"):
            if sub.is_file():
                return _resolves(rest, sub)
    if head not in _bound_names(path):
        return False
    if rest and head in _classes():
        return _in_class(head, rest[0])
    return True


def _qualified_ok(name: str) -> bool | None:
    """True or False for a project name; None when the name is not the project's."""
    parts = name.split(".")
    if name in NOT_CODE or parts[0] in PACKAGES or parts[-1] in OTHER_SUFFIXES:
        return None  # rooted names and paths are checked above; other files are not code
    if parts[-1] == "py" and len(parts) == 2:
        return f"{parts[0]}.py" in _file_names()
    if name in _quoted_in_code():
        return True
    default = re.fullmatch(r"(?:add|change|delete|view)_(\w+)", parts[-1])
    if default and len(parts) == 2 and (ROOT / "provenance" / parts[0]).is_dir():
        # A Django permission of a model of that app: `keys.add_watermarkkey`.
        models = (ROOT / "provenance" / parts[0]).glob("models*.py")
        defined = {
            c.name.lower()
            for m in models
            for c in ast.walk(_tree(m))
            if isinstance(c, ast.ClassDef)
        }
        return default.group(1) in defined
    if parts[0] in _project_files():
        return any(_resolves(parts[1:], path) for path in _project_files()[parts[0]])
    if parts[0] in _classes():
        return _in_class(parts[0], parts[1])
    return None


def _qualified_problems(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    out = []
    for span in SPAN.finditer(text):
        for m in QUALIFIED.finditer(span.group(1)):
            if _qualified_ok(m.group(1)) is False:
                out.append(f"name {m.group(1)} does not exist")
    return out


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_the_qualified_names_in_code_spans_exist(page):
    assert _qualified_problems(page) == []


def test_the_qualified_names_check_catches_what_does_not_exist(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "`scoring.cuda_available`, `scoring._tokens_needed`, `SamplingFloors.from_env`, "
        "`SamplingFloors.no_such_method`, `keys.add_watermarkkey`, `keys.add_nothing`, "
        "`settings.PROVENANCE_MAX_WAIT`, `settings.NO_SUCH`, "
        "`keys.selectors.key_family`, `keys.selectors.nothing`, `floors.py`, `nothing.py`, "
        "`os.environ`, `config.json`, `keys.share_watermarkkey`, `Check.text_sha256`\n"
        "```\n`scoring.in_a_fence`\n```\n"
    )
    assert sorted(_qualified_problems(page)) == [
        "name SamplingFloors.no_such_method does not exist",
        "name keys.add_nothing does not exist",
        "name keys.selectors.nothing does not exist",
        "name nothing.py does not exist",
        "name scoring._tokens_needed does not exist",
        "name settings.NO_SUCH does not exist",
    ]


# Reference, not a diary: no work-item numbers, no commit hashes.
DIARY = re.compile(
    r"\b(?:issue|item|ticket)s? #?\d+|(?<![&\w])#\d+\b"
    r"|(?-i:\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b)",
    re.IGNORECASE,
)


PAGE_LIMIT = 25_000  # bytes: a page a reader finds their way in; longer ones are split


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_the_page_is_short_enough_to_read(page):
    assert len(page.read_bytes()) <= PAGE_LIMIT


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_the_page_holds_no_merge_conflict(page):
    assert not re.search(r"^(<{7}|={7}|>{7})( |$)", page.read_text(), re.MULTILINE)


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_the_page_is_no_diary(page):
    assert DIARY.findall(page.read_text()) == []


WORK_ITEM = re.compile(r"\b(?:issue|item|ticket)s? #?\d+", re.IGNORECASE)
CODE = sorted(
    path
    for top in (
        "benchmarks",
        "detector",
        "generator",
        "kernels",
        "provenance",
        "scripts",
        "templates",
    )
    for path in (ROOT / top).rglob("*")
    if path.suffix in {".py", ".html", ".sh", ".js", ".txt"} and "ngram_tables" not in path.parts
)


def test_the_code_names_no_work_item():
    found = {
        str(path.relative_to(ROOT)): hits
        for path in CODE
        if (hits := WORK_ITEM.findall(path.read_text(errors="replace")))
    }
    assert found == {}


def test_a_diary_is_caught():
    found = DIARY.findall("as issue 14 said, fixed in 2f73d78 (#12); &#13; and Ed25519 are not")
    assert found == ["issue 14", "2f73d78", "#12"]


def test_the_checks_catch_what_does_not_exist(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "`detector/core/prf.py` and `detector/core/nothing.py`; `detector.core.prf.uint32` and "
        "`detector.core.prf.no_such_name`; `tests/test_docs.py::test_no_such_test`; "
        "`detector.core.config.KeyConfig.from_vllm`, `detector.core.config.KeyConfig.nothing`; "
        "[a](architecture.md) [b](#missing-heading)\n\n# A heading\n"
    )
    assert sorted(_problems(page)) == [
        "link #missing-heading points to no heading",
        "link architecture.md points to no file",
        "name detector.core.config.KeyConfig.nothing does not exist",
        "name detector.core.prf.no_such_name does not exist",
        "path detector/core/nothing.py does not exist",
        "test tests/test_docs.py::test_no_such_test does not exist",
    ]


def test_slugs_follow_github():
    assert _slug("Many texts, many keys: `detect_batch` and `combine`") == (
        "many-texts-many-keys-detect_batch-and-combine"
    )
    assert _slug("Ceiling at 10/20/30% substitutions: tests told where the edits are") == (
        "ceiling-at-102030-substitutions-tests-told-where-the-edits-are"
    )


def _import_diagram():
    spec = importlib.util.spec_from_file_location(
        "import_diagram", ROOT / "scripts" / "import_diagram.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_architecture_page_shows_the_imports_of_the_code():
    """The graphs pasted in architecture.md are those ``scripts/import_diagram.py`` derives
    from the code now (refresh: ``python scripts/import_diagram.py --write``)."""
    diagram = _import_diagram()
    assert diagram.pasted((ROOT / "docs" / "architecture.md").read_text()) == diagram.diagrams()


def test_the_diagram_draws_the_imports_inside_functions_and_relative_ones(tmp_path, monkeypatch):
    diagram = _import_diagram()
    files = {
        "kernels/__init__.py": "",
        "kernels/a.py": "import numpy\n",
        "detector/__init__.py": "",
        "detector/core/__init__.py": "",
        "detector/core/x.py": "def f():\n    from kernels import a\n",
        "detector/cli/__init__.py": "",
        "detector/cli/m.py": "from ..core import x\nfrom . import m\n",
        "generator/__init__.py": "",
        "provenance/__init__.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    monkeypatch.setattr(diagram, "ROOT", tmp_path)
    assert diagram._edges(diagram._packages) == [("detector", "kernels")]
    inside = diagram._edges(diagram._within("detector"), "detector")
    assert inside == [("cli", "core"), ("core", "kernels")]
