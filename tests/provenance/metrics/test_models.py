from __future__ import annotations

import pytest

from provenance.metrics.models import Tally

pytestmark = pytest.mark.django_db


def test_a_tally_names_itself():
    assert str(Tally.objects.create(name="sweeper_requeued", value=3)) == "sweeper_requeued = 3"
