from __future__ import annotations

from django.urls import path

from provenance.metrics import views

urlpatterns = [path("metrics", views.metrics_view, name="metrics")]
