"""Debezium 3.6's PostgreSQL connector (pgoutput) on a Kafka Connect worker against twinlog.

A real PostgreSQL from Debian (postgres_server.py) with logical replication, a Connect 4.3
distributed worker with exactly.once.source.support=enabled (connect_worker.py), in each
storage layout. Rows present before the connector starts arrive as its snapshot ("r"); an
insert, an update and a delete made while it streams arrive as "c", "u" and "d" followed by the
delete's tombstone, in commit order, each once, read_committed.
"""

from __future__ import annotations

import json

import pytest

from compat_tests.helpers.committed_reader import committed_values
from compat_tests.helpers.connect_worker import ConnectWorker
from compat_tests.helpers.postgres_server import PostgresServer
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until


@pytest.fixture(scope="session")
def postgres():
    # One cluster for both layouts: each test uses a table, slot and publication of its own.
    pg = PostgresServer()
    try:
        yield pg.start()
    finally:
        pg.cleanup()


@pytest.fixture(scope="module")
def worker(_module_broker, tmp_path_factory):
    w = ConnectWorker(_module_broker.bootstrap, tmp_path_factory.mktemp("debezium"), unique_topic("debezium"))
    try:
        yield w.start()
    finally:
        w.kill()


def debezium_config(pg: PostgresServer, prefix: str, table: str) -> dict:
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "plugin.name": "pgoutput",
        "database.hostname": pg.host, "database.port": str(pg.port),
        "database.user": pg.user, "database.password": "unused-with-trust-auth",
        "database.dbname": pg.database,
        "topic.prefix": prefix, "table.include.list": f"public.{table}",
        "slot.name": f"{prefix}_slot", "publication.name": f"{prefix}_pub",
        "publication.autocreate.mode": "filtered",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        # The worker creates the change topic itself (CreateTopics) instead of relying on auto-creation.
        "topic.creation.default.partitions": "1", "topic.creation.default.replication.factor": "1",
        "exactly.once.support": "required",
    }


def change_events(broker, topic: str) -> list[tuple[str | None, int | None, str | None]]:
    """(op, id, name) per record: `after` for r/c/u, `before` for d; (None, None, None) is a tombstone."""
    events = []
    for raw in committed_values(broker.bootstrap, topic):
        if raw is None:
            events.append((None, None, None))
            continue
        value = json.loads(raw)
        row = value["before"] if value["op"] == "d" else value["after"]
        events.append((value["op"], row["id"], row.get("name")))
    return events


def test_debezium_postgres_inserts_updates_deletes_arrive(broker, worker, postgres, storage_mode):
    prefix = f"dbz_{storage_mode}"
    table = f"items_{storage_mode}"
    topic = f"{prefix}.public.{table}"
    # REPLICA IDENTITY FULL: a delete's event carries the whole old row, name included.
    postgres.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, name text);"
                 f"ALTER TABLE {table} REPLICA IDENTITY FULL;"
                 f"INSERT INTO {table} VALUES (1, 'one'), (2, 'two');")
    worker.put_connector(prefix, debezium_config(postgres, prefix, table))
    worker.wait_running(prefix)
    snapshot = [("r", 1, "one"), ("r", 2, "two")]
    wait_until(lambda: topic_ready(broker, topic) and change_events(broker, topic) == snapshot,
               "the two snapshot rows", timeout=90, interval=0.5)

    postgres.sql(f"INSERT INTO {table} VALUES (3, 'three');"
                 f"UPDATE {table} SET name = 'TWO' WHERE id = 2;"
                 f"DELETE FROM {table} WHERE id = 1;")
    expected = snapshot + [("c", 3, "three"), ("u", 2, "TWO"), ("d", 1, "one"), (None, None, None)]
    wait_until(lambda: len(change_events(broker, topic)) >= len(expected),
               "the insert, update and delete", timeout=90, interval=0.5)
    assert change_events(broker, topic) == expected
    worker.assert_no_failed_task(prefix)
    worker.delete_connector(prefix)
    # The connector's replication slot would hold WAL for as long as the cluster lives.
    wait_until(lambda: postgres.sql(f"SELECT active FROM pg_replication_slots WHERE slot_name = '{prefix}_slot'")
               .strip() == "f", "the replication slot released")
    postgres.sql(f"SELECT pg_drop_replication_slot('{prefix}_slot')")


def topic_ready(broker, topic: str) -> bool:
    with Client.to(broker) as c:
        (t,) = c.metadata([topic]).topics
    return t.error_code == 0
