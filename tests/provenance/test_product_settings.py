"""The product's own settings (PROVENANCE_*): made in provenance/settings.py itself, each
under its variable's name, and a value from the environment reaches Django's settings."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_product_setting_is_made_in_the_settings_module_under_its_variables_name():
    tree = ast.parse((ROOT / "provenance" / "settings.py").read_text())
    assert not [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
    ]
    same = []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
            continue
        args = value.args
        if args and isinstance(args[0], ast.Constant) and args[0].value == target.id:
            same.append(target.id)
    assert len(same) > 50 and sum(name.startswith("PROVENANCE_") for name in same) > 50
    assert all(hasattr(settings, name) for name in same)


def test_a_value_from_the_environment_reaches_the_settings_django_reads():
    code = "from django.conf import settings; print(settings.PROVENANCE_MAX_KEY_IDS)"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "provenance.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "PROVENANCE_MAX_KEY_IDS": "7"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.split() == ["7"], done.stderr[-2000:]
