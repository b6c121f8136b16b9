from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularSwaggerOauthRedirectView,
    SpectacularSwaggerSplitView,
)

from provenance.accounts import views as account_views

urlpatterns = [
    # The admin's pages of the audits and the detection log, from before their models left
    # the checks app for their own (provenance.audits, provenance.usage).
    re_path(
        r"^admin/checks/audit/(?P<rest>.*)$",
        RedirectView.as_view(url="/admin/audits/audit/%(rest)s", query_string=True),
    ),
    re_path(
        r"^admin/checks/detectionlog/(?P<rest>.*)$",
        RedirectView.as_view(url="/admin/usage/detectionlog/%(rest)s", query_string=True),
    ),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the switcher's POST
    path("accounts/login/", account_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its init code as a file: no inline script, no CDN (sidecar).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^api/docs/oauth2-redirect", SpectacularSwaggerOauthRedirectView.as_view()),
    path("", include("provenance.accounts.urls")),
    path("", include("provenance.keys.urls")),
    path("", include("provenance.checks.urls")),
    path("", include("provenance.audits.urls")),
    path("", include("provenance.playground.urls")),
    path("", include("provenance.reports.urls")),
    path("", include("provenance.streams.urls")),
    path("", include("provenance.public.urls")),
    path("", include("provenance.softbinding.urls")),
    path("", include("provenance.metrics.urls")),
]
