"""Purging a check's text: the text and per-token data go, the verdict and the digest stay; only
the submitter or a team admin deletes a check; a check purged while a task scored it does not
get its per-token data back."""

from __future__ import annotations

import pytest
from django.utils import timezone

from provenance.accounts.models import Membership
from provenance.checks.models import Check
from provenance.checks.services import check_create, check_score
from provenance.checks.services.deletion import check_delete, purged_cleanup, texts_purge
from provenance.errors import ProblemError


def test_a_purge_keeps_the_verdict_and_the_digest(cast, alice_key, human_text):
    check = check_create(user=cast["alice"], text=human_text)
    check_score(check.id)
    assert texts_purge(Check.objects.filter(id=check.id), timezone.now()) == 1
    purged = Check.objects.get(id=check.id)
    assert (purged.text, purged.token_data, purged.heatmap_compact) == ("", None, None)
    assert purged.verdict and purged.text_sha256 and purged.status == "done"
    assert texts_purge(Check.objects.filter(id=check.id), timezone.now()) == 0  # once


def test_only_the_submitter_or_a_team_admin_deletes_a_check(cast, alice_key, human_text):
    check = check_create(user=cast["alice"], text=human_text)
    with pytest.raises(ProblemError) as refused:
        check_delete(user=cast["bob"], check_id=check.id)
    assert refused.value.status_code == 403
    assert Check.objects.get(id=check.id).deleted_at is None
    Membership.objects.filter(user=cast["bob"]).update(is_admin=True)
    check_delete(user=cast["bob"], check_id=check.id)
    gone = Check.objects.get(id=check.id)
    assert gone.deleted_at is not None and gone.text == ""


def test_a_check_purged_while_it_was_scored_loses_its_token_data_again(cast, alice_key, human_text):
    check = check_create(user=cast["alice"], text=human_text)
    check_score(check.id)
    assert Check.objects.get(id=check.id).heatmap_compact is not None
    Check.objects.filter(id=check.id).update(purged_at=timezone.now())  # purged meanwhile
    purged_cleanup([check.id])
    cleaned = Check.objects.get(id=check.id)
    assert (cleaned.token_data, cleaned.heatmap_compact) == (None, None)
