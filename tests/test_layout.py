"""The suite mirrors the library packages: every module ``<package>/<sub>/<module>.py`` of
detector/, generator/ and kernels/ has its tests in ``tests/<package>/<sub>/test_<module>.py``
(``__init__`` and ``__main__`` excepted), and every test file there imports its module (a
command-line module may be run instead, ``python -m <package>``, as its users run it)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("detector", "generator", "kernels")


def _mirrored(module: Path) -> Path:
    relative = module.relative_to(ROOT)
    return ROOT / "tests" / relative.parent / f"test_{relative.name}"


def _modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.stem not in ("__init__", "__main__")
    )


def _imported(test_file: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(test_file.read_text(), str(test_file))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_every_library_module_has_its_mirrored_test_file():
    missing = {str(path.relative_to(ROOT)) for path in _modules() if not _mirrored(path).is_file()}
    assert not missing, f"without tests/<package>/<sub>/test_<module>.py: {sorted(missing)}"


def test_each_mirrored_test_file_imports_the_module_it_is_named_after():
    for path in _modules():
        test_file = _mirrored(path)
        if not test_file.is_file():
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        source = test_file.read_text()
        run = path.stem == "cli" and f'"-m", "{module.split(".")[0]}"' in source
        assert module in _imported(test_file) or run, f"{test_file} skips {module}"


def test_every_test_package_folder_has_its_init():
    """Same-named test files in two folders (tests/detector/x/test_a.py, tests/kernels/
    test_a.py) import apart only as packages."""
    for folder in (ROOT / "tests").rglob("test_*.py"):
        for parent in folder.relative_to(ROOT / "tests").parents:
            if parent != Path("."):
                assert (ROOT / "tests" / parent / "__init__.py").is_file(), parent


MAX_MODULE_LINES = 500
# Allowlist, each with its own bound: the settings module is the one flat list of every
# Django and product setting read from the environment (no logic), kept whole so that no
# setting comes from a star import.
LONGER_MODULES = {"provenance/settings.py": 600}


def test_no_product_module_is_over_500_lines():
    modules = [
        path
        for package in (*PACKAGES, "provenance")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    ]
    assert len(modules) > 100
    long = {
        str(path.relative_to(ROOT)): n
        for path in modules
        if (n := len(path.read_text().splitlines()))
        > LONGER_MODULES.get(str(path.relative_to(ROOT)), MAX_MODULE_LINES)
    }
    assert not long, long
