"""The embedded Redis (provenance.runner.redis_server): started on a free loopback port, it
answers PING and Redis clients; stopped, it answers nothing and its port is free again."""

from __future__ import annotations

import socket

import pytest
import redis

from provenance.runner.redis_server import RedisServer, RedisStartError, free_port


def test_a_free_port_can_be_bound_on_loopback():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_the_server_answers_until_it_is_stopped(tmp_path):
    with RedisServer(tmp_path / "redis") as server:
        assert server.url == f"redis://127.0.0.1:{server.port}/0" and server.ping()
        client = redis.Redis.from_url(server.url)
        client.set("k", "v")
        assert client.get("k") == b"v"
        assert (tmp_path / "redis" / "redis.log").exists()
    assert not server.ping() and server.process is not None
    assert server.process.poll() is not None


def test_a_server_that_exits_at_start_says_so(tmp_path):
    failing = RedisServer(tmp_path / "redis", binary="/bin/false")
    with pytest.raises(RedisStartError, match="exited early"):
        failing.start(timeout=5)


def test_a_bounded_server_evicts_the_least_recently_used_keys(tmp_path):
    with RedisServer(tmp_path / "cache", maxmemory="2mb") as server:
        client = redis.Redis.from_url(server.url)
        assert client.config_get("maxmemory")["maxmemory"] == str(2 * 1024 * 1024)
        assert client.config_get("maxmemory-policy")["maxmemory-policy"] == "allkeys-lru"
        for i in range(200):  # 20 MB into 2 MB: written, the oldest evicted
            client.set(f"k{i}", b"x" * 100_000)
        assert client.dbsize() < 200 and client.get("k199") is not None
