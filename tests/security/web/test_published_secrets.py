"""Nothing ships a usable secret: the embedded default (``make run``, this suite) generates its
SECRET_KEY once into the data directory (0600, beside the KEK) instead of using a constant
published in the repository, so a proof of work minted offline with the old constant, with no
work at all, is refused; a published placeholder is refused at start everywhere."""

from __future__ import annotations

import datetime
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import altcha
import pytest

from tests.provenance.conftest import REPO
from tests.provenance.public.conftest import VERIFY, published  # noqa: F401  (fixture)

OLD_CONSTANT = "embedded-development-only-not-secret"


def _minted_offline(secret: str) -> str:
    """A solved challenge signed with the HMAC key derived from ``secret``: max_number=1,
    so the "work" is one hash."""
    hmac_key = hashlib.sha256(b"provenance.public.pow:" + secret.encode()).hexdigest()
    made = altcha.create_challenge_v1(
        altcha.ChallengeOptionsV1(
            algorithm="SHA-256",
            max_number=1,
            hmac_key=hmac_key,
            expires=datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=300),
        )
    )
    found = altcha.solve_challenge_v1(made)
    assert found is not None
    return altcha.PayloadV1(
        made.algorithm, made.challenge, found.number, made.salt, made.signature
    ).to_base64()


def test_a_proof_of_work_minted_with_the_old_constant_is_refused(published, wm_text):  # noqa: F811
    from django.conf import settings
    from rest_framework.test import APIClient

    assert "DJANGO_SECRET_KEY" not in os.environ  # configured like the embedded default
    forged_proof = _minted_offline(OLD_CONSTANT)
    forged = APIClient().post(
        VERIFY, {"text": wm_text}, format="json", HTTP_X_PROVENANCE_POW=forged_proof
    )
    assert forged.status_code == 403, forged.content
    assert forged.json()["code"] == "proof_of_work_required" and "verdict" not in forged.json()
    # The same minting with the instance's own secret (which only the server knows) holds.
    genuine = APIClient().post(
        VERIFY,
        {"text": wm_text},
        format="json",
        HTTP_X_PROVENANCE_POW=_minted_offline(settings.SECRET_KEY),
    )
    assert genuine.status_code == 200 and genuine.json()["verdict"] == "watermarked"


def _embedded(data_dir: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PROVENANCE_"))}
    clean.update(PYTHONPATH=str(REPO), PROVENANCE_DATA_DIR=str(data_dir), **env)
    clean["DJANGO_SETTINGS_MODULE"] = "provenance.settings"
    return subprocess.run(
        [sys.executable, "-c", code],
        env=clean,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


ACCEPTS_OLD_PROOF = """
import django; django.setup()
from django.conf import settings
from provenance.public.proof_of_work import ProofOfWorkRequired, solution_accept
try:
    solution_accept({proof!r})
    print("ACCEPTED")
except ProofOfWorkRequired:
    print("REFUSED")
import hashlib; print(hashlib.sha256(settings.SECRET_KEY.encode()).hexdigest())
"""


def test_a_fresh_embedded_instance_generates_its_own_private_secret(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    code = ACCEPTS_OLD_PROOF.format(proof=_minted_offline(OLD_CONSTANT))
    runs = [_embedded(first, code), _embedded(first, code), _embedded(second, code)]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert run.stdout.split()[0] == "REFUSED"
    digests = [run.stdout.split()[1] for run in runs]
    assert digests[0] == digests[1] != digests[2]  # kept across restarts, one per instance
    secret_file = first / "secret.key"
    assert oct(secret_file.stat().st_mode)[-3:] == "600"
    secret = secret_file.read_text().strip()
    assert len(secret) >= 50 and hashlib.sha256(secret.encode()).hexdigest() == digests[0]
    assert secret not in (runs[0].stdout + runs[0].stderr)


@pytest.mark.parametrize(
    "env",
    [
        {"DJANGO_SECRET_KEY": OLD_CONSTANT},
        {"DJANGO_SECRET_KEY": "change-me-to-a-long-random-string"},
        {"DATABASE_URL": "postgres://provenance:CHANGE-ME@postgres:5432/provenance"},
        {"REDIS_URL": "redis://:CHANGE-ME@redis:6379/0"},
    ],
)
def test_the_embedded_default_refuses_published_placeholders_too(tmp_path, env):
    run = _embedded(tmp_path, "import provenance.settings", **env)
    assert run.returncode != 0 and "placeholder" in run.stderr


def test_no_secret_key_literal_is_left_in_the_product():
    for path in (REPO / "provenance").rglob("*.py"):
        for line in path.read_text().splitlines():
            assigned = line.split("#", 1)[0].replace(" ", "")
            assert not assigned.startswith(('SECRET_KEY="', "SECRET_KEY='")), f"{path}: {line}"
