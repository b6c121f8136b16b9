"""C2PA's soft binding resolution API: a stripped text's watermark recovers a manifest that
the C2PA SDK reads and validates, found again by its soft binding; human text matches
nothing; every route behind public verification's doors."""

from __future__ import annotations

import base64
import io

import c2pa
import pytest

from detector.credentials.manifest import SOFT_BINDING_ALG, Generation
from detector.credentials.reading import read_store, strip_wrapper
from detector.credentials.signing import sign_text
from tests.provenance.public.conftest import solve

BASE = "/c2pa/v1"
BY_CONTENT = f"{BASE}/matches/byContent"
BY_BINDING = f"{BASE}/matches/byBinding"


def _by_content(client, body: bytes, media="text/plain", query="", proof=True):
    extra = {}
    if proof:
        extra["HTTP_X_PROVENANCE_POW"] = solve(client.get("/api/public/v1/challenge").json())
    return client.generic("POST", f"{BY_CONTENT}{query}", body, content_type=media, **extra)


def test_the_supported_algorithm_is_the_watermarks(anon, db):
    body = anon.get(f"{BASE}/services/supportedAlgorithms").json()
    assert body == {"watermarks": [{"alg": SOFT_BINDING_ALG}], "fingerprints": []}
    assert anon.get(f"{BASE}/services/supportedAlgorithms?x=1").status_code == 400


def test_a_stripped_reply_recovers_a_manifest_the_sdk_validates(published, anon, signing, wm_text):
    signed = sign_text(
        wm_text, signing.credential, Generation("SmolLM2", "Provenance", published.public_id)
    )
    stripped = strip_wrapper(signed)
    assert stripped != signed and "\ufeff" not in stripped
    response = _by_content(anon, stripped.encode())
    assert response.status_code == 200, response.content
    (match,) = response.json()["matches"]
    assert match["manifestId"].startswith("urn:c2pa:")
    assert match["similarityScore"] in {25, 50, 75, 90, 100}
    fetched = anon.get(f"{BASE}/manifests/{match['manifestId']}")
    assert fetched.status_code == 200 and fetched["Content-Type"] == "application/c2pa"
    store = fetched.content
    # The C2PA SDK reads the store and validates it against the text it came back for.
    reader = c2pa.Reader("text/plain", io.BytesIO(stripped.encode()), store)
    manifest = reader.get_active_manifest()
    assert manifest["label"] == match["manifestId"]
    binding = next(a for a in manifest["assertions"] if a["label"] == "c2pa.soft-binding")
    assert binding["data"]["alg"] == SOFT_BINDING_ALG
    value = binding["data"]["blocks"][0]["value"]
    assert base64.b64decode(value).decode() == published.public_id
    read = read_store(store, stripped.encode(), "text/plain", signing.ca_pem.decode())
    assert read.valid and read.trusted and read.reasons == []
    assert read_store(store, (stripped + "!").encode(), "text/plain").valid is False
    # Found again by its soft binding, by GET and by POST.
    found = anon.get(BY_BINDING, {"alg": SOFT_BINDING_ALG, "value": value}).json()
    assert {"manifestId": match["manifestId"]} in found["matches"]
    posted = anon.post(BY_BINDING, {"alg": SOFT_BINDING_ALG, "value": value}, format="json")
    assert posted.json() == found
    # The same text again: the same manifest, not a second one.
    assert _by_content(anon, stripped.encode()).json()["matches"][0] == match


def test_a_text_with_its_wrapper_is_scored_without_it(published, anon, signing, wm_text):
    signed = sign_text(
        wm_text, signing.credential, Generation("SmolLM2", "Provenance", published.public_id)
    )
    response = _by_content(anon, signed.encode())
    assert response.status_code == 200 and len(response.json()["matches"]) == 1


def test_human_text_and_short_text_match_nothing(published, anon, signing, human_text):
    assert _by_content(anon, human_text.encode()).json() == {"matches": []}
    assert _by_content(anon, b"Too short.").json() == {"matches": []}


def test_the_doors_of_by_content(published, anon, signing, wm_text):
    no_proof = _by_content(anon, wm_text.encode(), proof=False)
    assert no_proof.status_code == 403 and "challenge" in no_proof.json()
    assert "matches" not in no_proof.json()
    assert _by_content(anon, wm_text.encode(), media="image/png").status_code == 415
    assert _by_content(anon, wm_text.encode(), query="?alg=com.other.1").status_code == 400
    assert _by_content(anon, wm_text.encode(), query="?maxResults=0").status_code == 400
    assert _by_content(anon, wm_text.encode(), query="?color=red").status_code == 400
    assert _by_content(anon, b"\xff\xfe bad", proof=True).status_code == 400


def test_the_doors_of_by_binding_and_manifests(published, anon, signing):
    assert anon.get(BY_BINDING, {"value": "eA=="}).status_code == 400  # no alg
    assert anon.get(BY_BINDING, {"alg": SOFT_BINDING_ALG, "value": "***"}).status_code == 400
    unknown = base64.b64encode(b"pk-nobody").decode()
    assert anon.get(BY_BINDING, {"alg": SOFT_BINDING_ALG, "value": unknown}).json() == {
        "matches": []
    }
    extra = {"alg": SOFT_BINDING_ALG, "value": unknown, "colour": "x"}
    assert anon.post(BY_BINDING, extra, format="json").status_code == 400
    assert anon.get(f"{BASE}/manifests/not-an-id").status_code == 400
    assert (
        anon.get(f"{BASE}/manifests/urn:c2pa:00000000-0000-0000-0000-000000000000").status_code
        == 404
    )


@pytest.mark.parametrize("route", ["byBinding", "manifests"])
def test_lookups_spend_the_callers_budget(published, anon, signing, settings, route):
    settings.PROVENANCE_PUBLIC_ADDRESS_PER_MIN = 2
    value = base64.b64encode(published.public_id.encode()).decode()
    url = (
        f"{BY_BINDING}?alg={SOFT_BINDING_ALG}&value={value}"
        if route == "byBinding"
        else f"{BASE}/manifests/urn:c2pa:00000000-0000-0000-0000-000000000000"
    )
    statuses = [anon.get(url).status_code for _ in range(3)]
    assert statuses[-1] == 429 and 429 not in statuses[:2]


def test_without_a_signing_certificate_a_match_is_a_clear_503(published, anon, wm_text, settings):
    settings.PROVENANCE_C2PA_CERT = settings.PROVENANCE_C2PA_KEY = ""
    response = _by_content(anon, wm_text.encode())
    assert response.status_code == 503 and response.json()["code"] == "c2pa_unconfigured"
