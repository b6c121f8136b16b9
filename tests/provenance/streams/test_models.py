"""Streams: named by id and length, newest first, gone with their team."""

from __future__ import annotations

import pytest

from provenance.streams.models import Stream
from provenance.streams.services import stream_create

pytestmark = pytest.mark.django_db


def test_a_stream_names_its_length_and_starts_open(cast, alice_key):
    stream, _ = stream_create(user=cast["alice"])
    assert str(stream) == f"stream {stream.pk} (0 tokens)"
    assert not stream.closed and stream.decision is None and bytes(stream.token_ids) == b""


def test_streams_come_newest_first_and_go_with_their_team(cast, alice_key):
    first, _ = stream_create(user=cast["alice"])
    second, _ = stream_create(user=cast["bob"])
    assert list(Stream.objects.all()) == [second, first]
    Stream.objects.filter(team=cast["acme"]).delete()
    assert not Stream.objects.exists()
