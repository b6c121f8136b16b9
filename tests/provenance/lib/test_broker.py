"""kombu's Redis transport with one client per connection pool (``provenance.lib.broker``),
named by the settings for a redis:// broker."""

from __future__ import annotations

from kombu import Queue

from provenance.celery import app
from provenance.lib.broker import Channel
from tests.provenance.conftest import point_celery_at


def test_the_broker_channel_makes_one_redis_client_per_pool_and_messages_still_flow(
    redis_server,
):
    point_celery_at(redis_server.url)
    queue = Queue("client-reuse-test")
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        assert isinstance(channel, Channel)
        first = channel._create_client()
        assert channel._create_client() is first
        with connection.Producer() as producer:
            for n in range(3):
                producer.publish({"n": n}, routing_key=queue.name, declare=[queue])
        got = [queue(channel).get(no_ack=False) for _ in range(3)]
        for message in got:
            message.ack()
        assert [message.payload["n"] for message in got] == [0, 1, 2]
        assert channel._create_client() is first
        channel._pool = None  # a new pool (kombu replaces it after a lost connection)
        assert channel._create_client() is not first
