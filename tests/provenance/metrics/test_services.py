from __future__ import annotations

import pytest

from provenance.metrics import services
from provenance.metrics.models import Tally

pytestmark = pytest.mark.django_db


def test_a_tally_is_created_then_added_to():
    services.tally_add(services.SWEEPER_DEAD_WORKERS, 2)
    services.tally_add(services.SWEEPER_DEAD_WORKERS, 0)  # nothing to add: no write
    services.tally_add(services.SWEEPER_DEAD_WORKERS, 5)
    assert Tally.objects.get(name=services.SWEEPER_DEAD_WORKERS).value == 7


def test_only_named_tallies_exist():
    with pytest.raises(ValueError, match="unknown tally"):
        services.tally_add("anything a caller makes up", 1)


def test_an_unknown_verdict_or_surface_keeps_the_labels_bounded():
    before = services.process_finished.labels(surface="public", verdict="unknown")._value.get()
    services.sync_finished_count("public", "<script>", 0, None)
    services.sync_finished_count("somewhere-else", "watermarked", 5, 0.1)
    after = services.process_finished.labels(surface="public", verdict="unknown")._value.get()
    assert after == before + 1
    surfaces = {s.labels["surface"] for m in services.process_finished.collect() for s in m.samples}
    assert surfaces <= set(services.SYNC_SURFACES)
