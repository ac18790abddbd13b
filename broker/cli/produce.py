"""`twinlog produce TOPIC`: one record per line of stdin, over the Kafka protocol (Produce).

Each line (without its newline) is a record's value; with --key-separator SEP the text before
the first SEP is its key. --header NAME=VALUE adds a header to every record. Records go to
--partition when given, else keyed records to the partition Kafka's default partitioner picks
(murmur2 of the key, so a key lands where a Java or librdkafka producer would put it: librdkafka's
`murmur2_random`), keyless ones round-robin batch by batch.

Records are gathered into one uncompressed batch per partition (wire/batch_builder.py) until
--batch-bytes of lines have been read, then sent with one Produce per leader and answered
before the next lines are read: nothing is acknowledged to the operator that the broker has
not acknowledged (acks=all unless --acks 1). A progress bar counts bytes when stdin is a file
and stderr a terminal.
"""

from __future__ import annotations

import os
import stat
import time

import click

from broker.cli.options import bootstrap_option, kafka_client, parse_assignments

_TIMEOUT_MS = 30_000


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
@bootstrap_option
def produce_command(topic, key_separator, headers, partition, acks, batch_bytes, bootstrap) -> None:
    """Produce each line of stdin as a record to TOPIC."""
    from broker.cli.kafka_client import ClientError, partition_leaders

    header_pairs = tuple((k, v.encode()) for k, v in parse_assignments(headers, "--header").items())
    stream = click.get_binary_stream("stdin")
    with kafka_client(bootstrap) as client, _progress(stream) as advance:
        leaders = partition_leaders(client.metadata([topic]), [topic])
        count = len(leaders)
        if partition is not None and partition >= count:
            raise click.ClickException(f"{topic} has {count} partition(s), no partition {partition}")
        sender = _Sender(client, topic, leaders, -1 if acks == "all" else int(acks))
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


class _Sender:
    """Sends gathered records, one batch per partition and one Produce per leader, and keeps
    the offsets each partition's batches were given."""

    def __init__(self, client, topic: str, leaders: dict, acks: int) -> None:
        self.client, self.topic, self.leaders, self.acks = client, topic, leaders, acks
        self.records = 0
        self.offsets: dict[int, tuple[int, int]] = {}

    def send(self, pending: dict[int, list]) -> None:
        from wire.batch_builder import build_batch

        now = int(time.time() * 1000)
        by_leader: dict[int, list] = {}
        for partition, records in pending.items():
            by_leader.setdefault(self.leaders[(self.topic, partition)], []).append(
                {"index": partition, "records": bytes(build_batch(records, now))})
        for node, partitions in by_leader.items():
            answer = self.client.call(0, node, transactional_id=None, acks=self.acks, timeout=_TIMEOUT_MS,
                                      topic_data=[{"name": self.topic, "partition_data": partitions}])
            for t in answer.responses:
                for p in t.partition_responses:
                    if p.error_code.value != 0:
                        raise click.ClickException(
                            f"produce to {t.name}/{p.index}: {p.error_code.name.upper()}"
                            + (f": {p.error_message}" if p.error_message else ""))
                    n = len(pending[p.index])
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
