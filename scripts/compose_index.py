"""Writes a PEP 503 simple index (``<house>/simple/<project>/index.html``) over the
distributions in ``<house>/files``, so that a build pointed at it with ``PIP_INDEX_URL``
installs from them alone, as from an organization's package mirror
(scripts/compose-images.sh)."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path


def project(filename: str) -> str:
    """The normalized project name of a wheel or sdist file name."""
    stem = filename.removesuffix(".tar.gz").removesuffix(".zip")
    name = stem.split("-")[0] if filename.endswith(".whl") else stem.rsplit("-", 1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def write(house: Path) -> int:
    projects: dict[str, list[str]] = {}
    for path in sorted((house / "files").iterdir()):
        if path.suffix == ".whl" or path.name.endswith((".tar.gz", ".zip")):
            projects.setdefault(project(path.name), []).append(path.name)
    simple = house / "simple"
    for name, files in projects.items():
        links = "".join(
            f'<a href="../../files/{html.escape(f)}">{html.escape(f)}</a><br>\n' for f in files
        )
        (simple / name).mkdir(parents=True, exist_ok=True)
        (simple / name / "index.html").write_text(
            f"<!doctype html><html><body>\n{links}</body></html>\n"
        )
    index = "".join(f'<a href="{n}/">{n}</a><br>\n' for n in sorted(projects))
    (simple / "index.html").write_text(f"<!doctype html><html><body>\n{index}</body></html>\n")
    return len(projects)


if __name__ == "__main__":
    print(f"images: index of {write(Path(sys.argv[1]))} projects")
