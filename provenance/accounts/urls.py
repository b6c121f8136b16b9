from __future__ import annotations

from django.urls import path

from provenance.accounts import views

urlpatterns = [path("accounts/token/", views.api_token, name="api-token")]
