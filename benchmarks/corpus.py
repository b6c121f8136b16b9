"""About 1 MB of English prose that every machine here has, with no network and no data package:
the docstrings of the Python standard library (read with ``ast``, nothing imported) and the
licence texts Debian ships, each distinct text once, in a fixed order."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from detector.text.corpora import docstrings

LICENSES = Path("/usr/share/common-licenses")


def english_prose(size: int = 1_000_000) -> str:
    """``size`` characters of distinct prose (stdlib docstrings, then licences)."""
    texts = docstrings(Path(sysconfig.get_paths()["stdlib"]))
    texts += [p.read_text(errors="replace") for p in sorted(LICENSES.glob("*")) if p.is_file()]
    seen: set[str] = set()
    parts = [t for t in texts if not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]
    text = "\n\n".join(parts)
    if len(text) < size:
        raise RuntimeError(f"only {len(text):,} characters of prose found")
    return text[:size]
