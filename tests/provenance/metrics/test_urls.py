from __future__ import annotations

from django.urls import resolve, reverse

from provenance.metrics import urls, views


def test_metrics_is_served_at_the_root():
    assert reverse("metrics") == "/metrics"
    assert resolve("/metrics").func is views.metrics_view
    assert [p.name for p in urls.urlpatterns] == ["metrics"]
