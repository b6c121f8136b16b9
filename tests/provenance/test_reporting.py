"""Django's error reports hide the key-encryption key, broker and cache URLs, nested
LOCATIONs and any URL carrying a password."""

from __future__ import annotations

from django.test import RequestFactory, override_settings

from provenance.reporting import SecretsHiddenFilter

HIDDEN = SecretsHiddenFilter.cleansed_substitute


def test_settings_named_for_secrets_are_hidden():
    report = SecretsHiddenFilter()
    for name in ["PROVENANCE_KEK", "CELERY_BROKER_URL", "REDIS_URL", "SENTRY_DSN", "SECRET_KEY"]:
        assert report.cleanse_setting(name, "s3cr3t-value") == HIDDEN, name
    assert report.cleanse_setting("CACHES", {"default": {"LOCATION": "redis://x"}}) == {
        "default": {"LOCATION": HIDDEN}
    }


def test_a_url_with_a_password_is_hidden_whatever_the_setting_is_called():
    report = SecretsHiddenFilter()
    assert report.cleanse_setting("UPSTREAM", "postgres://app:hunter2@db/x") == HIDDEN
    assert report.cleanse_setting("UPSTREAM", "redis://:hunter2@cache:6379/0") == HIDDEN
    assert (
        report.cleanse_setting("UPSTREAM", "https://example.org/a@b") == "https://example.org/a@b"
    )
    assert report.cleanse_setting("TIME_ZONE", "UTC") == "UTC"


@override_settings(PROVENANCE_KEK="kek-that-must-not-show", UPSTREAM="mysql://u:pw-xyz@h/d")
def test_the_filter_is_the_one_error_pages_use():
    from django.views.debug import ExceptionReporter

    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        reporter = ExceptionReporter(RequestFactory().get("/"), type(exc), exc, exc.__traceback__)
        page = reporter.get_traceback_text()
    assert "kek-that-must-not-show" not in page and "pw-xyz" not in page
    assert "PROVENANCE_KEK" in page and HIDDEN in page
