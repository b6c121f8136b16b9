"""Where the product keeps its caches and generated files."""

from __future__ import annotations

from pathlib import Path

from detector import defaults

REPO_ROOT = defaults.REPO_ROOT


def data_dir(root: str | Path | None = None) -> Path:
    """``root``, else ``$PROVENANCE_DATA_DIR`` or ``<repo>/var`` (``detector.defaults``);
    created on first use, private (0700): it holds submitted texts, the key-encryption key and
    the demo password."""
    path = Path(root) if root is not None else defaults.data_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
