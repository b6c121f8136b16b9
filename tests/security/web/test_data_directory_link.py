"""A data directory reached through a symbolic link that another user may replace.

The checks of the data directory (ours, nobody else may write it) ran on the path as given,
and every later open went through it again. Given a path whose link another user owns (a
link that user made in a shared sticky directory such as /tmp, pointing at a directory of
ours), the checks passed at start; the link's owner then pointed it at a directory of its own
and the running product opened the database planted there (the users, the sign-ins, the
encrypted keys: theirs). Now the data directory is resolved once, checked, and only the
resolved directory is used: a link changed after the start changes nothing.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from tests.security.web.test_data_directory import THEIR_UID, _product

REDIRECT = """
import os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")
django.setup()
from django.conf import settings
from django.db import connection
connection.ensure_connection()
connection.close()
link = {link!r}
os.symlink({theirs!r}, link + ".new")
os.replace(link + ".new", link)  # what the link's owner does, after the start
with connection.cursor() as cursor:
    cursor.execute("select name from sqlite_master where name = 'planted'")
    print("planted database used:", bool(cursor.fetchall()))
print("data directory:", settings.DATA_DIR)
"""


def test_a_data_directory_link_changed_after_the_start_changes_nothing(tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp
    ours, theirs = tmp_path / "ours", shared / "theirs"
    ours.mkdir(mode=0o700)
    theirs.mkdir()
    theirs.chmod(0o777)
    planted = theirs / "provenance.sqlite3"
    with sqlite3.connect(planted) as db:
        db.execute("create table planted (x)")
    planted.chmod(0o666)
    link = shared / "provenance"
    link.symlink_to(ours)
    if os.geteuid() == 0:
        for path in (theirs, planted):
            os.chown(path, THEIR_UID, THEIR_UID)
        os.chown(link, THEIR_UID, THEIR_UID, follow_symlinks=False)
    result = _product(link, REDIRECT.format(link=str(link), theirs=str(theirs)))
    assert result.returncode == 0, result.stderr
    assert "planted database used: False" in result.stdout, result.stdout
    assert f"data directory: {ours.resolve()}" in result.stdout
