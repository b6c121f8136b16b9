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
# Modules of accounts, keys, playground, reports, streams and webhooks whose mirrored files
# are being written (their behaviour is covered meanwhile by the apps' other test files and
# tests/provenance/test_*.py); each leaves this set when its file lands.
AWAITING = {
    "provenance/accounts/admin.py",
    "provenance/accounts/models.py",
    "provenance/accounts/selectors.py",
    "provenance/accounts/services.py",
    "provenance/accounts/urls.py",
    "provenance/accounts/views.py",
    "provenance/keys/crypto.py",
    "provenance/keys/management/commands/kek_rotate.py",
    "provenance/keys/management/commands/keys_calibrate.py",
    "provenance/keys/models.py",
    "provenance/keys/selectors.py",
    "provenance/keys/tasks.py",
    "provenance/keys/urls.py",
    "provenance/keys/views.py",
    "provenance/playground/admin.py",
    "provenance/playground/api.py",
    "provenance/playground/client.py",
    "provenance/playground/keyfile.py",
    "provenance/playground/management/commands/playground_keyfile.py",
    "provenance/playground/models.py",
    "provenance/playground/selectors.py",
    "provenance/playground/services.py",
    "provenance/playground/tasks.py",
    "provenance/playground/urls.py",
    "provenance/reports/admin.py",
    "provenance/reports/api.py",
    "provenance/reports/management/commands/report_key_revoke.py",
    "provenance/reports/management/commands/report_key_rotate.py",
    "provenance/reports/models.py",
    "provenance/reports/selectors.py",
    "provenance/reports/urls.py",
    "provenance/reports/views.py",
    "provenance/streams/models.py",
    "provenance/streams/services.py",
    "provenance/streams/urls.py",
    "provenance/webhooks/admin.py",
    "provenance/webhooks/models.py",
    "provenance/webhooks/tasks.py",
}

# Mirrored files that so far drive their module only from outside (HTTP, the admin's pages, a
# child process of the embedded runner) and import none of it; each leaves this set when it
# imports its module.
AWAITING_IMPORT = {
    "tests/provenance/accounts/test_oidc.py",
    "tests/provenance/keys/test_admin.py",
    "tests/provenance/keys/test_api.py",
    "tests/provenance/playground/test_views.py",
    "tests/provenance/reports/test_services.py",
    "tests/provenance/runner/test_embedded.py",
    "tests/provenance/streams/test_api.py",
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


def _calls_command(test_file: Path, name: str) -> bool:
    return (
        re.search(rf"call_command\(\s*[\"']{re.escape(name)}[\"']", test_file.read_text())
        is not None
    )


def test_every_product_module_has_its_mirrored_test_file():
    missing = {str(path.relative_to(ROOT)) for path in _modules() if not _mirrored(path).is_file()}
    assert missing == AWAITING, (
        f"without tests/provenance/<app>/<sub>/test_<module>.py: {sorted(missing - AWAITING)}; "
        f"tested now, drop from AWAITING: {sorted(AWAITING - missing)}"
    )


def test_each_mirrored_test_file_imports_the_module_it_is_named_after():
    skipping = set()
    for path in _modules():
        test_file = _mirrored(path)
        if not test_file.is_file():
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        command = path.parent.name == "commands" and _calls_command(test_file, path.stem)
        if module not in _imported(test_file) and not command:
            skipping.add(str(test_file.relative_to(ROOT)))
    assert skipping == AWAITING_IMPORT, (
        f"not importing the module they are named after: {sorted(skipping - AWAITING_IMPORT)}; "
        f"importing it now, drop from AWAITING_IMPORT: {sorted(AWAITING_IMPORT - skipping)}"
    )
