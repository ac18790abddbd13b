"""`twinlog lookup --topic T --key K`: the records of a commitlog topic with key K, from its key index.

It is a Kafka client like any other: it reads the key-lookup topic `__key.<T>.<key>`
(key_topic.py) from a running broker with the CLI's own client (kafka_client.py: Metadata,
ListOffsets, Fetch), from the log start to the end each partition had when it started, so what
it prints is exactly what any client assigning that topic would receive. One line per record,
in (partition, offset) order:

    partition  offset  timestamp (ms, ISO time)  value

A topic that does not exist, or does not use the commitlog layout (no key index, so no key
topic), is a one-line error.
"""

from __future__ import annotations

import base64
import datetime

import click

from broker.cli.client_settings import client_options
from broker.cli.options import kafka_client


def _decode_key(key: str, encoding: str) -> bytes:
    if encoding == "hex":
        return bytes.fromhex(key)
    if encoding == "base64":
        return base64.b64decode(key)
    return key.encode()


def read_key_topic(client, topic: str, key: bytes) -> list[tuple]:
    """Every record of the key-lookup topic of (topic, key), as (partition, offset, timestamp,
    key, value, headers) in (partition, offset) order."""
    from broker.cli.consume import fetch_records
    from broker.cli.kafka_client import EARLIEST, LATEST, list_offsets, partition_leaders
    from broker.key_topic import name_for
    from broker.topic_names import MAX_NAME_LENGTH

    name = name_for(topic, key)
    if len(name) > MAX_NAME_LENGTH:
        raise click.ClickException(
            f"the key-lookup topic for this key would have {len(name)} characters, more than a topic "
            f"name may have ({MAX_NAME_LENGTH}): the key is too long to look up")
    partition_leaders(client.metadata([topic]), [topic])  # a missing topic is an error naming it
    (answer,) = client.metadata([name]).topics
    if answer.error_code.value != 0:
        raise click.ClickException(f"no key lookup for topic {topic!r}: it does not use storage.mode=commitlog")
    leaders = {(name, p.partition_index): p.leader_id for p in answer.partitions}
    positions = list_offsets(client, leaders, dict.fromkeys(leaders, EARLIEST))
    ends = list_offsets(client, leaders, dict.fromkeys(leaders, LATEST))
    out = []
    while any(positions[tp] < ends[tp] for tp in leaders):
        before = dict(positions)
        out.extend(fetch_records(client, leaders, positions, ends))
        if positions == before:
            break  # no batch covers the rest: nothing more matches the key
    return sorted(out)


@click.command("lookup")
@click.option("--topic", required=True, help="A topic created with storage.mode=commitlog.")
@click.option("--key", required=True)
@click.option("--key-encoding", type=click.Choice(["utf8", "hex", "base64"]), default="utf8", show_default=True)
@client_options(key_flags=("--tls-key",))
def lookup_command(topic, key, key_encoding, connection) -> None:
    """Print the records of TOPIC whose key is KEY, found through the commitlog's key index."""
    from broker.key_topic import name_for

    raw = _decode_key(key, key_encoding)
    with kafka_client(connection) as client:
        records = read_key_topic(client, topic, raw)
    for partition, offset, timestamp, _key, value, _headers in records:
        when = datetime.datetime.fromtimestamp(timestamp / 1000, datetime.timezone.utc)
        text = "<null>" if value is None else value.decode("utf-8", "backslashreplace")
        click.echo(f"{partition}\t{offset}\t{timestamp} ({when.isoformat(timespec='milliseconds')})\t{text}")
    click.echo(f"{len(records)} record(s) with key {key!r} in {topic} (via {name_for(topic, raw)})", err=True)
