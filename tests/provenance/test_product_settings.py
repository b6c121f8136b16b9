"""The product's own settings: every one is named PROVENANCE_* and reaches Django's settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from provenance import product_settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_product_setting_is_named_so_and_is_a_django_setting():
    # What a star import takes: the public upper-case names.
    names = [n for n in vars(product_settings) if n.isupper() and not n.startswith("_")]
    assert len(names) > 20 and all(n.startswith("PROVENANCE_") for n in names)
    assert all(hasattr(settings, n) for n in names)


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
