from __future__ import annotations

import pytest

from provenance.metrics.models import Snapshot, Tally

pytestmark = pytest.mark.django_db


def test_a_tally_names_itself():
    assert str(Tally.objects.create(name="sweeper_requeued", value=3)) == "sweeper_requeued = 3"


def test_a_snapshot_names_its_watermarks():
    assert str(Snapshot.objects.create()) == "metrics up to None / None"
