"""Where the product keeps its caches and generated files."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """``$PROVENANCE_DATA_DIR`` or ``<repo>/var``; created on first use, private (0700):
    it holds submitted texts, the key-encryption key and the demo password."""
    path = Path(os.environ.get("PROVENANCE_DATA_DIR") or REPO_ROOT / "var")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
