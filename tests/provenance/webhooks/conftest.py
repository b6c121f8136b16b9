"""Fixtures of the webhook tests: a receiver, private targets allowed, the team's secret."""

from __future__ import annotations

import pytest

from provenance.webhooks import services
from tests.provenance.webhooks.hooks import Receiver


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def allow_local(settings):
    settings.PROVENANCE_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def secret(cast):
    _, value = services.webhook_secret_rotate(team=cast["acme"])
    return value
