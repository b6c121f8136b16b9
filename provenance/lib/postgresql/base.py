"""Django's PostgreSQL backend; a kept connection is checked, without a round trip, before
a request or task reuses it.

Every web thread and worker keeps its connection (``DATABASE_CONN_MAX_AGE``). A database
restart, or an operator's ``pg_terminate_backend``, breaks them all; reused unchecked, each
fails its next request with a 503 long after the database is back. Django's own check
(``CONN_HEALTH_CHECKS``) sends ``SELECT 1`` before the first statement of every request, a
round trip that cost 1.0-2.4 ms of server CPU an inline check under load
(docs/benchmarks-load.md). A server that ends a connection says so first (an error message,
then the socket's end of file), and an idle connection of ours expects nothing (no LISTEN, no
COPY): so a socket with something to read before the request has sent anything marks the
connection to drop and open again, found with one ``poll`` of the socket (microseconds).
Anything else found there costs only a new connection. A server that vanished without a
word (its host gone, no end of file) is found by the first statement, as before.

The check after an error (``close_if_unusable_or_obsolete``) keeps Django's ``SELECT 1``."""

from __future__ import annotations

import select
from typing import Any

import psycopg
from django.db.backends.postgresql import base
from psycopg.pq import TransactionStatus


class DatabaseWrapper(base.DatabaseWrapper):
    # Django's own attributes (BaseDatabaseWrapper.connect sets them), absent from its stubs.
    health_check_enabled: bool
    health_check_done: bool

    def close_if_health_check_failed(self) -> None:
        """Django's hook before the first statement of a request or task on a kept
        connection; a connection inside an atomic block is left to its statements."""
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        if not self.in_atomic_block and hung_up(self.connection):
            self.close()
        self.health_check_done = True


def hung_up(connection: psycopg.Connection[Any]) -> bool:
    """The server ended ``connection``, or sent something on it while it was idle."""
    if connection.closed or connection.broken:
        return True
    status = connection.info.transaction_status
    if status == TransactionStatus.UNKNOWN:
        return True
    if status != TransactionStatus.IDLE:  # a transaction is open: its statements will tell
        return False
    poller = select.poll()  # not select(): any descriptor number
    poller.register(connection.fileno(), select.POLLIN)
    return bool(poller.poll(0))  # data, an end of file, a hang-up or an error
