"""`twinlog produce TOPIC`: one record per line of stdin, over the Kafka protocol (Produce).

Each line (without its newline) is a record's value; with --key-separator SEP the text before
the first SEP is its key. --header NAME=VALUE adds a header to every record. Records go to
--partition when given, else keyed records to the partition Kafka's default partitioner picks
(murmur2 of the key, so a key lands where a Java or librdkafka producer would put it: librdkafka's
`murmur2_random`), keyless ones round-robin batch by batch.

A topic that does not exist is created as a Kafka producer (kcat, librdkafka, the Java client)
has it created: the Metadata request allows auto-creation, so the broker creates it if its
auto.create.topics.enable says so, with its num.partitions and default.replication.factor (and
the CREATE permission checked, as for any producer). The broker's policy stays the operator's:
where it is off, the command exits 1 saying so rather than creating the topic behind its back.

Lines are gathered until --batch-bytes of them have been read, then sent as uncompressed
batches (wire/batch_builder.py), cut so that none exceeds the topic's max.message.bytes (read
with DescribeConfigs; the broker's default when that is refused): a Produce carries one batch
per partition, as Kafka requires from v3, so the batches go in rounds, one Produce per leader a
round, each answered before the next: nothing is acknowledged to the operator that the broker
has not acknowledged (acks=all unless --acks 1). A progress bar counts bytes when stdin is a
file and stderr a terminal.
"""

from __future__ import annotations

import os
import stat
import time

import click

from wire.config_codes import ConfigResourceType

from broker.cli.client_settings import client_options
from broker.cli.options import kafka_client, parse_assignments

TOPIC_RESOURCE = ConfigResourceType.TOPIC
_TIMEOUT_MS = 30_000
_METADATA_RETRY_S = 0.1  # Kafka's retry.backoff.ms


def murmur2_partition(key: bytes, partitions: int) -> int:
    """Kafka's default partition for a key: toPositive(murmur2(key)) % partitions."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def murmur2(key: bytes) -> int:
    """Kafka's Utils.murmur2 (seed 0x9747b28c) as an unsigned 32-bit value."""
    m, r = 0x5BD1E995, 24
    length = len(key)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(key[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[whole:]
    if tail:
        for i in reversed(range(len(tail))):
            h ^= tail[i] << (8 * i)
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


@click.command("produce")
@click.argument("topic")
@click.option("--key-separator", "-k", default=None, metavar="SEP",
              help="Split each line at the first SEP: key before, value after.")
@click.option("--header", "-H", "headers", multiple=True, metavar="NAME=VALUE", help="A header on every record.")
@click.option("--partition", "-p", type=click.IntRange(min=0), default=None, help="Produce to this partition only.")
@click.option("--acks", type=click.Choice(["-1", "all", "1"]), default="all", show_default=True)
@click.option("--batch-bytes", type=click.IntRange(min=1), default=512 * 1024, show_default=True,
              help="Lines read before a Produce is sent.")
@client_options
def produce_command(topic, key_separator, headers, partition, acks, batch_bytes, connection) -> None:
    """Produce each line of stdin as a record to TOPIC."""
    from broker.cli.kafka_client import ClientError

    header_pairs = tuple((k, v.encode()) for k, v in parse_assignments(headers, "--header").items())
    stream = click.get_binary_stream("stdin")
    with kafka_client(connection) as client, _progress(stream) as advance:
        leaders = _leaders_creating(client, topic, connection.timeout_ms / 1000)
        count = len(leaders)
        if partition is not None and partition >= count:
            raise click.ClickException(f"{topic} has {count} partition(s), no partition {partition}")
        sender = _Sender(client, topic, leaders, -1 if acks == "all" else int(acks), _max_batch_bytes(client, topic))
        pending: dict[int, list] = {}
        pending_bytes, keyless_turn = 0, 0
        for raw in stream:
            line = raw[:-1] if raw.endswith(b"\n") else raw
            key, value = None, line
            if key_separator is not None:
                key, sep, rest = line.partition(key_separator.encode())
                if sep:
                    value = rest
                else:
                    key = None
            target = partition if partition is not None else (
                murmur2_partition(key, count) if key is not None else keyless_turn % count)
            pending.setdefault(target, []).append((key, value, header_pairs))
            pending_bytes += len(raw)
            advance(len(raw))
            if pending_bytes >= batch_bytes:
                try:
                    sender.send(pending)
                except ClientError as exc:
                    raise click.ClickException(str(exc)) from None
                pending, pending_bytes, keyless_turn = {}, 0, keyless_turn + 1
        if pending:
            try:
                sender.send(pending)
            except ClientError as exc:
                raise click.ClickException(str(exc)) from None
    spans = "".join(f"; partition {p}: offsets {lo}-{hi}" for p, (lo, hi) in sorted(sender.offsets.items()))
    click.echo(f"produced {sender.records} record(s) to {topic}{spans}")


def _leaders_creating(client, topic: str, timeout_s: float) -> dict:
    """(topic, partition) -> leader, the topic auto-created by the broker if it allows that. A
    topic just created may have no leader for a moment (LEADER_NOT_AVAILABLE, or leader -1 in a
    cluster): asked again, as a Kafka producer retries its metadata, until the request timeout."""
    from broker.cli.kafka_client import partition_leaders

    deadline = time.monotonic() + timeout_s
    while True:
        (answer,) = client.metadata([topic], auto_create=True).topics
        code = answer.error_code.name.upper()
        if code == "UNKNOWN_TOPIC_OR_PARTITION":
            raise click.ClickException(f"topic {topic!r} does not exist and the broker does not create topics "
                                       f"on use (auto.create.topics.enable=false): twinlog topics create {topic}")
        settling = code == "LEADER_NOT_AVAILABLE" or any(p.leader_id < 0 for p in answer.partitions)
        if not settling or time.monotonic() >= deadline:
            return partition_leaders(client.metadata([topic]), [topic])
        time.sleep(_METADATA_RETRY_S)


def _max_batch_bytes(client, topic: str) -> int:
    """The topic's max.message.bytes; the broker default when DescribeConfigs is refused (a
    principal may WRITE a topic without DESCRIBE_CONFIGS on it)."""
    from broker.settings.table import BY_NAME

    answer = client.call(32, resources=[{"resource_type": TOPIC_RESOURCE, "resource_name": topic,
                                         "configuration_keys": ["max.message.bytes"]}],
                         include_synonyms=False, include_documentation=False)
    (result,) = answer.results
    values = [c.value for c in result.configs if c.name == "max.message.bytes" and c.value]
    if result.error_code.value != 0 or not values:
        return BY_NAME["message.max.bytes"].default
    return int(values[0])


class _Sender:
    """Sends gathered records, cut into batches of at most `max_batch_bytes`, in rounds of one
    batch per partition and one Produce per leader, and keeps the offsets the batches were given."""

    def __init__(self, client, topic: str, leaders: dict, acks: int, max_batch_bytes: int) -> None:
        self.client, self.topic, self.leaders, self.acks = client, topic, leaders, acks
        self.max_batch_bytes = max_batch_bytes
        self.records = 0
        self.offsets: dict[int, tuple[int, int]] = {}

    def send(self, pending: dict[int, list]) -> None:
        from wire.batch_builder import build_batches

        now = int(time.time() * 1000)
        batches = {p: build_batches(records, now, self.max_batch_bytes) for p, records in pending.items()}
        for turn in range(max(len(b) for b in batches.values())):
            by_leader: dict[int, list] = {}
            for partition, partition_batches in batches.items():
                if turn < len(partition_batches):
                    by_leader.setdefault(self.leaders[(self.topic, partition)], []).append(
                        {"index": partition, "records": bytes(partition_batches[turn][0])})
            for node, partitions in by_leader.items():
                self._produce(node, partitions, {p: batches[p][turn][1] for p in (d["index"] for d in partitions)})

    def _produce(self, node: int, partitions: list, counts: dict[int, int]) -> None:
        answer = self.client.call(0, node, transactional_id=None, acks=self.acks, timeout=_TIMEOUT_MS,
                                  topic_data=[{"name": self.topic, "partition_data": partitions}])
        for t in answer.responses:
            for p in t.partition_responses:
                if p.error_code.value != 0:
                    raise click.ClickException(
                        f"produce to {t.name}/{p.index}: {p.error_code.name.upper()}"
                        + (f": {p.error_message}" if p.error_message else ""))
                n = counts[p.index]
                first = self.offsets.get(p.index, (p.base_offset, 0))[0]
                self.offsets[p.index] = (first, p.base_offset + n - 1)
                self.records += n


class _progress:
    """A rich progress bar over stdin's bytes, shown only when stderr is a terminal."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._progress = None

    def __enter__(self):
        from rich.console import Console
        from rich.progress import Progress

        console = Console(stderr=True)
        if not console.is_terminal:
            return lambda n: None
        total = None
        try:
            st = os.fstat(self._stream.fileno())
            total = st.st_size if stat.S_ISREG(st.st_mode) else None
        except (OSError, ValueError):
            pass
        self._progress = Progress(console=console, transient=True)
        self._progress.start()
        task = self._progress.add_task("producing", total=total)
        return lambda n: self._progress.advance(task, n)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
