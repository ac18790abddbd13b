"""`twinlog lookup --topic T --key K`: the records of a commitlog topic with key K, from its key index.

It is a Kafka client like any other: it reads the key-lookup topic `__key.<T>.<key>`
(key_topic.py) from a running broker with kafka-python, so what it prints is exactly what any
client assigning that topic would receive. One line per record, in (partition, offset) order:

    partition  offset  timestamp (ms, ISO time)  value
"""

from __future__ import annotations

import base64
import datetime
import time

import click


def _decode_key(key: str, encoding: str) -> bytes:
    if encoding == "hex":
        return bytes.fromhex(key)
    if encoding == "base64":
        return base64.b64decode(key)
    return key.encode()


def read_key_topic(bootstrap: str, topic: str, key: bytes, timeout_s: float = 30.0) -> list:
    """Every record of the key-lookup topic, as kafka-python ConsumerRecords."""
    from kafka import KafkaConsumer, TopicPartition

    from .key_topic import name_for
    from .topics import MAX_NAME_LENGTH

    name = name_for(topic, key)
    if len(name) > MAX_NAME_LENGTH:
        raise click.ClickException(
            f"the key-lookup topic for this key would have {len(name)} characters, more than a topic "
            f"name may have ({MAX_NAME_LENGTH}): the key is too long to look up")
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             client_id="twinlog-lookup", request_timeout_ms=int(timeout_s * 1000))
    try:
        # The key topic has its source's partitions. kafka-python looks topics up in an
        # all-topics Metadata answer, which does not list key topics, so ask for the source.
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise click.ClickException(
                f"no key lookup for topic {topic!r}: it does not exist or does not use storage.mode=commitlog")
        tps = [TopicPartition(name, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out, deadline = [], time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise click.ClickException(f"lookup did not reach the end of {name} in {timeout_s:.0f} s")
            for records in consumer.poll(timeout_ms=200).values():
                out.extend(r for r in records if r.offset < ends[TopicPartition(name, r.partition)])
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


@click.command("lookup")
@click.option("--bootstrap", default="127.0.0.1:9092", show_default=True, help="A running twinlog broker.")
@click.option("--topic", required=True, help="A topic created with storage.mode=commitlog.")
@click.option("--key", required=True)
@click.option("--key-encoding", type=click.Choice(["utf8", "hex", "base64"]), default="utf8", show_default=True)
def lookup_command(bootstrap, topic, key, key_encoding) -> None:
    """Print the records of TOPIC whose key is KEY, found through the commitlog's key index."""
    from .key_topic import name_for  # the broker's modules load only when the command runs

    from kafka.errors import InvalidTopicError, KafkaError

    raw = _decode_key(key, key_encoding)
    try:
        records = read_key_topic(bootstrap, topic, raw)
    except InvalidTopicError:  # the broker serves key topics of commitlog topics only
        raise click.ClickException(f"no key lookup for topic {topic!r}: it does not use storage.mode=commitlog") from None
    except KafkaError as exc:
        raise click.ClickException(f"lookup against {bootstrap} failed: {exc}") from None
    for r in records:
        when = datetime.datetime.fromtimestamp(r.timestamp / 1000, datetime.timezone.utc)
        value = "<null>" if r.value is None else r.value.decode("utf-8", "backslashreplace")
        click.echo(f"{r.partition}\t{r.offset}\t{r.timestamp} ({when.isoformat(timespec='milliseconds')})\t{value}")
    click.echo(f"{len(records)} record(s) with key {key!r} in {topic} (via {name_for(topic, raw)})", err=True)
