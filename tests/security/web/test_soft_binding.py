# ruff: noqa: F811  (the public tests' fixtures, imported by name)
"""The C2PA soft binding resolution API tried as a curious third party and a forger would.

``byContent`` is public verification underneath, and public verification promises that no
requester is shown when, or that, anyone else checked a text. A manifest recovered for one
requester's asset must not be handed to the next one who sends it, and what it says of the
asset must be what the watermark shows: that the asset holds the model's text, not that the
model created every byte of it."""

from __future__ import annotations

import io

import c2pa
import pytest

from detector.credentials.manifest import TRAINED_ALGORITHMIC_MEDIA
from detector.credentials.reading import read_store
from tests.provenance.public.conftest import (  # noqa: F401  (fixtures, found by name)
    _small_proof_of_work,
    anon,
    published,
    solve,
)
from tests.provenance.softbinding.conftest import (  # noqa: F401  (fixtures, found by name)
    dev_certificate,
    signing,
)

pytestmark = pytest.mark.django_db
BY_CONTENT = "/c2pa/v1/matches/byContent"
PREFACE = (
    "The following statement was written and signed by the board of the company, and every "
    "word of this paragraph is ours alone, typed by hand before any model was consulted.\n\n"
)


def _by_content(client, body: bytes, **extra):
    proof = solve(client.get("/api/public/v1/challenge", **extra).json())
    return client.generic(
        "POST",
        BY_CONTENT,
        body,
        content_type="text/plain",
        HTTP_X_PROVENANCE_POW=proof,
        **extra,
    )


def test_a_later_requester_is_not_handed_the_first_requesters_manifest(
    published, anon, signing, wm_text
):
    first = _by_content(anon, wm_text.encode(), REMOTE_ADDR="198.51.100.7")
    (match,) = first.json()["matches"]
    second = _by_content(anon, wm_text.encode(), REMOTE_ADDR="203.0.113.99")
    assert second.status_code == 200
    (again,) = second.json()["matches"]
    # the same manifest would tell the second requester that, and when, the first one asked
    assert again["manifestId"] != match["manifestId"]
    # the same requester asking again may be given its own manifest back
    third = _by_content(anon, wm_text.encode(), REMOTE_ADDR="198.51.100.7")
    assert third.json()["matches"][0]["manifestId"] == match["manifestId"]


def test_a_recovered_manifest_does_not_say_the_model_created_text_it_did_not(
    published, anon, signing, wm_text
):
    asset = (PREFACE + wm_text).encode()
    response = _by_content(anon, asset, REMOTE_ADDR="198.51.100.8")
    assert response.status_code == 200, response.content
    (match,) = response.json()["matches"]  # the watermark is there: a match
    store = anon.get(f"/c2pa/v1/manifests/{match['manifestId']}").content
    read = read_store(store, asset, "text/plain", signing.ca_pem.decode())
    assert read.valid and read.trusted  # the organization's signature, over every byte
    reader = c2pa.Reader("text/plain", io.BytesIO(asset), store)
    manifest = reader.get_active_manifest()
    actions = next(a for a in manifest["assertions"] if a["label"] == "c2pa.actions.v2")
    # "created by the model, trained algorithmic media" over a human preface is the
    # organization's signature on a claim the watermark cannot make
    assert read.digital_source_type != TRAINED_ALGORITHMIC_MEDIA
    assert all(
        a.get("digitalSourceType") != TRAINED_ALGORITHMIC_MEDIA for a in actions["data"]["actions"]
    )


def test_by_binding_lists_no_other_requesters_recovered_manifest(published, anon, signing, wm_text):
    import base64

    from detector.credentials.manifest import SOFT_BINDING_ALG

    (match,) = _by_content(anon, wm_text.encode(), REMOTE_ADDR="198.51.100.9").json()["matches"]
    value = base64.b64encode(published.public_id.encode()).decode()
    query = {"alg": SOFT_BINDING_ALG, "value": value}
    own = anon.get("/c2pa/v1/matches/byBinding", query, REMOTE_ADDR="198.51.100.9").json()
    assert {"manifestId": match["manifestId"]} in own["matches"]
    # a third party holding the text would read its hash in the listed manifest: that it
    # was checked, and when
    other = anon.get("/c2pa/v1/matches/byBinding", query, REMOTE_ADDR="203.0.113.50").json()
    assert {"manifestId": match["manifestId"]} not in other["matches"]


def test_recovered_manifests_leave_with_the_retention_period(
    published, anon, signing, wm_text, settings
):
    """Each watermarked ``byContent`` answer keeps a manifest (about 4 KB) holding the
    asset's hash: kept for ever, a flood at the global anonymous rate grew the database by
    gigabytes a day, and a checked essay's hash outlived every other trace of the check."""
    from datetime import timedelta

    from django.utils import timezone

    from provenance.retention.services import checks_purge
    from provenance.softbinding.models import Manifest

    (match,) = _by_content(anon, wm_text.encode(), REMOTE_ADDR="198.51.100.10").json()["matches"]
    checks_purge()
    assert Manifest.objects.filter(pk=match["manifestId"]).exists()  # within the period
    later = timezone.now() + timedelta(days=settings.PROVENANCE_RETENTION_DAYS + 1)
    checks_purge(now=later)
    assert not Manifest.objects.filter(pk=match["manifestId"]).exists()
