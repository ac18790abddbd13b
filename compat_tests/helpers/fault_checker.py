"""The fault suite's checker, after Jepsen's Kafka checker: what a history of acknowledged
writes and served reads must satisfy against the log the cluster holds once the faults heal.

The final log of a partition is read from every replica (Fetch with Kafka's debugging replica
id, which followers answer too, up to their high watermark): the replicas must be the same
bytes, and once the brokers have stopped, so must every replica's own files, read with its
storage engine up to its log end (opening it runs its recovery, as the broker's next start
would, so a torn tail is cut first). Those bytes, parsed batch by batch, are the
truth the history is checked against:

  - lost:       an acknowledged value missing from the final log;
  - duplicate:  a value twice in the log from one producer id and epoch (the idempotent
                producer's promise; a new epoch may rewrite what the old one had unacknowledged);
  - order:      one writer's values out of sequence order in the log, or an acknowledged
                offset that holds another value;
  - phantom:    a read, during the faults, of a value the final log does not hold at that offset.

The transactional writer's values are checked for duplicates here and for the rest by
fault_txn_checker.py, which reads the transaction markers parse_log keeps in the entries.
`violations()` lists each as a line; an empty list is a clean history
(test_fault_checker.py shows each kind caught).
"""

from __future__ import annotations

import os
import struct
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from broker.settings.config_from_settings import config_with
from broker.storage.modes import StorageModes
from compat_tests.helpers.cluster import Cluster
from compat_tests.helpers.fault_workload import Ack, parse_value
from compat_tests.helpers.raw_kafka import batch_header, read_records, split_batches
from segment.log import FileRegion

SHOWN = 5  # examples per violation kind
READ_BYTES = 1 << 20


TRANSACTIONAL, CONTROL = 0x10, 0x20  # batch attribute bits
MARKER = struct.Struct(">hh")  # a control record's key: version, type (ABORT 0, COMMIT 1)


@dataclass(frozen=True)
class Entry:
    offset: int
    value: bytes
    producer_id: int
    producer_epoch: int
    transactional: bool = False
    marker: int | None = None  # a transaction marker's type; None for a data record


def replicas_alike(cluster: Cluster, topic: str, partition: int, timeout: float = 30.0) -> bytes:
    """The one log every replica holds up to its high watermark (a follower's HW trails the
    leader's by a fetch: wait for them to meet)."""
    return cluster.wait_replicas_identical(topic, partition, timeout=timeout)


def parse_log(log: bytes) -> list[Entry]:
    batches, rest = split_batches(log)
    assert not rest, f"{len(rest)} bytes of a torn batch at the log's end"
    out = []
    for batch in batches:
        header = batch_header(batch)
        control = bool(header["attributes"] & CONTROL)
        out.extend(Entry(offset, value, header["producer_id"], header["producer_epoch"],
                         bool(header["attributes"] & TRANSACTIONAL), MARKER.unpack(key)[1] if control else None)
                   for offset, _, key, value in read_records(batch))
    return out


def final_logs(cluster: Cluster, topic: str, partitions: int) -> dict[int, list[Entry]]:
    return {p: parse_log(replicas_alike(cluster, topic, p)) for p in range(partitions)}


def _bytes(region: FileRegion | bytes) -> bytes:
    return region if isinstance(region, bytes) else os.pread(region.fd, region.size, region.position)


def replica_file_bytes(data_dir: Path, storage_mode: str, topic: str, partition: int) -> bytes:
    """Every batch of the partition's log on disk, log start to log end."""
    modes = StorageModes(data_dir, storage_mode)
    try:
        plog = modes.store(storage_mode).open_partition(topic, partition, config_with(data_dir=data_dir).log_defaults)
        out, offset, end = bytearray(), plog.log_start_offset, plog.log_end_offset
        while offset < end:
            batches, _ = split_batches(b"".join(_bytes(r) for r in plog.read(offset, READ_BYTES, end)))
            assert batches, f"{data_dir}: no batch at offset {offset} of {topic}-{partition} (log end {end})"
            out += b"".join(batches)
            last = batch_header(batches[-1])
            offset = last["base_offset"] + last["last_offset_delta"] + 1
        return bytes(out)
    finally:
        modes.close()


def files_unlike(cluster: Cluster, topic: str, fetched: dict[int, bytes]) -> list[str]:
    """For stopped brokers: each replica whose files hold other bytes than the log every
    replica served (`fetched`, from replicas_alike)."""
    out = []
    for p, log in fetched.items():
        for node, proc in cluster.brokers.items():
            on_disk = replica_file_bytes(proc.data_dir, proc.storage_mode, topic, p)
            if on_disk != log:
                out.append(f"partition {p}: broker {node}'s files hold {len(on_disk)} bytes unlike the "
                           f"{len(log)} every replica served")
    return out


def _examples(kind: str, found: list) -> list[str]:
    return [f"{kind}: {len(found)}, e.g. {found[:SHOWN]}"] if found else []


def violations(acks: dict[int, list[Ack]], reads: list[tuple[int, int, bytes]],
               logs: dict[int, list[Entry]]) -> list[str]:
    """`acks`: every writer's acknowledgements per partition; `reads`: (partition, offset, value)
    served during the run."""
    out: list[str] = []
    logs = {p: [e for e in log if e.marker is None] for p, log in logs.items()}
    at = {p: {e.offset: e.value for e in log} for p, log in logs.items()}
    for p, log in logs.items():
        held = set(at[p].values())
        out += _examples(f"partition {p} lost", [a.value for a in acks.get(p, []) if a.value not in held])
        out += _examples(f"partition {p} acknowledged at another offset",
                         [(a.offset, a.value, at[p].get(a.offset)) for a in acks.get(p, [])
                          if a.value in held and a.offset is not None and at[p].get(a.offset) != a.value])

        first: dict[tuple[int, int, bytes], int] = {}
        duplicates, disorder = [], []
        written: set[bytes] = set()
        last_seq: dict[int, int] = defaultdict(lambda: -1)
        for e in log:
            key = (e.producer_id, e.producer_epoch, e.value)
            if key in first:
                duplicates.append((e.value, first[key], e.offset))
            first.setdefault(key, e.offset)
            if e.transactional:  # a transaction's order is its own: fault_txn_checker.py
                continue
            if e.value in written:  # rewritten by a later epoch: a duplicate it may write
                continue
            written.add(e.value)
            writer, partition, seq = parse_value(e.value)
            if partition != p or seq <= last_seq[writer]:
                disorder.append((e.offset, e.value, f"partition {partition}, after seq {last_seq[writer]}"))
            last_seq[writer] = max(last_seq[writer], seq)
        out += _examples(f"partition {p} duplicate within one producer epoch", duplicates)
        out += _examples(f"partition {p} out of order", disorder)

    out += _examples("phantom read (not in the final log at its offset)",
                     [(p, o, v, at[p].get(o)) for p, o, v in reads if at[p].get(o) != v])
    return out
