"""Compile the web UI's message catalogs (``locale/*/LC_MESSAGES/django.po`` -> ``.mo``).

The ``.po`` files are committed; the ``.mo`` files are build output. ``make setup`` and the
test suite compile them with Babel (pure Python, so no gettext binaries are needed); a
catalog is rebuilt only when its ``.po`` is newer. ``manage.py makemessages`` (GNU gettext,
installed by scripts/install-system-deps.sh) extracts new strings.
"""

from __future__ import annotations

from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"


def compile_catalogs(locale_dir: Path = LOCALE_DIR) -> list[Path]:
    """Write every stale ``.mo``; returns the files written."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    written = []
    for po in sorted(locale_dir.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as source:
            catalog = read_po(source, locale=po.parts[-3])
        tmp = mo.with_suffix(".mo.tmp")
        with tmp.open("wb") as out:
            write_mo(out, catalog, use_fuzzy=False)
        tmp.replace(mo)
        written.append(mo)
    return written


if __name__ == "__main__":
    for path in compile_catalogs():
        print(f"compiled {path}")
