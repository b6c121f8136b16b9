"""The web product's tests mirror it: every module ``provenance/<app>/<sub>/<module>.py``
(``__init__``, ``apps.py`` and migrations excepted) has its tests in
``tests/provenance/<app>/<sub>/test_<module>.py``, and each such file imports its module (a
management command may be called instead, ``call_command("<name>")``, as its users run it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "provenance"
# Mirrored files that so far drive their module only from outside (HTTP, the admin's pages, a
# child process of the embedded runner) and import none of it; each leaves this set when it
# imports its module.
AWAITING_IMPORT = {
    "tests/provenance/accounts/test_oidc.py",
    "tests/provenance/reports/test_services.py",
    "tests/provenance/runner/test_embedded.py",
}


def _mirrored(module: Path) -> Path:
    relative = module.relative_to(ROOT)
    return ROOT / "tests" / relative.parent / f"test_{relative.name}"


def _modules() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        if path.stem != "__init__"
        and path.name != "apps.py"
        and "migrations" not in path.relative_to(PACKAGE).parts
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


# Modules that users reach over HTTP (pages, the admin, the API, the URL map): their mirrored
# file may drive them through the test client or ``reverse`` instead of importing them.
HTTP_FACING = {"views", "urls", "admin", "api"}


def _driven_over_http(test_file: Path) -> bool:
    return re.search(r"client\b|\bapi_for\b|\breverse\(", test_file.read_text()) is not None


def _calls_command(test_file: Path, name: str) -> bool:
    return (
        re.search(rf"call_command\(\s*[\"']{re.escape(name)}[\"']", test_file.read_text())
        is not None
    )


def test_every_product_module_has_its_mirrored_test_file():
    missing = {str(path.relative_to(ROOT)) for path in _modules() if not _mirrored(path).is_file()}
    assert not missing, f"without tests/provenance/<app>/<sub>/test_<module>.py: {sorted(missing)}"


def test_each_mirrored_test_file_imports_the_module_it_is_named_after():
    skipping = set()
    for path in _modules():
        test_file = _mirrored(path)
        if not test_file.is_file():
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        command = path.parent.name == "commands" and _calls_command(test_file, path.stem)
        http = path.stem in HTTP_FACING and _driven_over_http(test_file)
        if module not in _imported(test_file) and not command and not http:
            skipping.add(str(test_file.relative_to(ROOT)))
    assert skipping == AWAITING_IMPORT, (
        f"not importing the module they are named after: {sorted(skipping - AWAITING_IMPORT)}; "
        f"importing it now, drop from AWAITING_IMPORT: {sorted(AWAITING_IMPORT - skipping)}"
    )
