"""The fault suite's transactional workload: a transactional producer on a thread, beside
fault_workload.py's idempotent writers and its readers (one read_uncommitted, one
read_committed), and a final read_committed read of the whole log.

Each transaction writes RECORDS_PER_PARTITION records to every partition of the topic, then
commits, or aborts about one in ABORT_ONE_IN (a seeded random draws which). Every value names
its transaction: b"t<writer>-<txn>-p<partition>-<i>". The writer records each transaction's
values and its outcome as the client saw it:

  committed   commit_transaction returned;
  aborted     abort_transaction returned, and no commit had been asked for;
  unknown     anything else: a commit that raised (its fate was not known to the client), an
              abort that raised, a fatal error (the producer is rebuilt and re-inits, which
              fences and aborts what it left open).

librdkafka's error classes, as its transactional API documents them: a retriable error from
commit_transaction / abort_transaction may be retried by calling it again; an error that
`txn_requires_abort()` needs abort_transaction before the next transaction; a fatal one needs
a new producer. The checker (fault_txn_checker.py) needs nothing else.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from compat_tests.helpers.cluster import Cluster

RECORDS_PER_PARTITION = 3
ABORT_ONE_IN = 4
CALL_TIMEOUT_S = 20.0  # one commit / abort / init call: it outlasts a leader or coordinator move
RETRIES = 3  # calls of a retriable commit / abort / init before its outcome counts as unknown
# a transaction's longest life: its commit, abort and a new producer's init, each retried
STOP_LIMIT_S = 3 * RETRIES * CALL_TIMEOUT_S + 20.0
SOCKET_TIMEOUT_MS = 5000
TXN_TIMEOUT_MS = 15000  # the coordinator aborts a transaction its writer left open this long


@dataclass
class Txn:
    writer: int
    number: int
    values: list[tuple[int, bytes]] = field(default_factory=list)  # (partition, value)
    outcome: str = "unknown"  # committed | aborted | unknown
    ended: float | None = None  # time.monotonic() when its outcome was known to the client

    @property
    def key(self) -> tuple[int, int]:
        return (self.writer, self.number)


class TxnWriter:
    """A transactional, idempotent acks=all producer writing one transaction after another
    across every partition, from a thread."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int, seed: int, writer: int = 0) -> None:
        self.topic = topic
        self.partitions = partitions
        self.writer = writer
        self.txns: list[Txn] = []
        self.errors: list[str] = []  # what made a transaction unknown, for the report
        self._config = {"bootstrap.servers": cluster.bootstrap, "transactional.id": f"faults-{topic}-{writer}",
                        "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                        "transaction.timeout.ms": TXN_TIMEOUT_MS, "request.timeout.ms": 2000,
                        # the coordinator's requests time out on this, not on request.timeout.ms:
                        # the default 60 s outlasts a DROPped coordinator's whole fault
                        "socket.timeout.ms": SOCKET_TIMEOUT_MS,
                        "message.timeout.ms": TXN_TIMEOUT_MS, "retry.backoff.ms": 50,
                        "retry.backoff.max.ms": 200, "topic.metadata.refresh.interval.ms": 1000}
        self._random = random.Random(seed)
        self._producer: Producer | None = None
        self.died: str | None = None  # the exception that ended the writer's thread
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "TxnWriter":
        self._thread.start()
        return self

    def count(self, outcome: str) -> int:
        return sum(t.outcome == outcome for t in self.txns)

    def ends(self) -> list[float]:
        """When each transaction that did end ended."""
        return [t.ended for t in self.txns if t.ended is not None]

    def _retrying(self, call, what: str) -> None:
        """call(CALL_TIMEOUT_S), again while it raises a retriable error (librdkafka's rule for
        commit, abort and init); the last error raised."""
        for attempt in range(RETRIES):
            try:
                return call(CALL_TIMEOUT_S)
            except KafkaException as e:
                if not e.args[0].retriable() or attempt == RETRIES - 1:
                    raise
                self.errors.append(f"{what} retried: {e.args[0]}")

    def _fresh_producer(self) -> None:
        """A new producer under the same transactional id: its init fences the old one and has
        the coordinator end whatever transaction it left open."""
        self._discard()
        for attempt in itertools.count():
            if attempt and self._stop.is_set():
                return  # the coordinator's timeout ends what the last producer left open
            self._producer = Producer(self._config)
            try:
                self._retrying(self._producer.init_transactions, "init")
                return
            except KafkaException as e:
                self.errors.append(f"init: {e.args[0]}")
                self._discard()

    def _discard(self) -> None:
        """Close the producer now: left to the garbage collector (an exception's traceback holds
        it in a cycle), it outlived its cluster and dialled the next scenario's addresses."""
        if self._producer is not None:
            try:
                self._producer.purge()
                self._producer.flush(0)  # raises a fatal error the producer already had
            except KafkaException as e:
                self.errors.append(f"discarded: {e.args[0]}")
            self._producer.close()
            self._producer = None

    def _run(self) -> None:
        try:
            self._fresh_producer()
            while not self._stop.is_set():
                txn = Txn(self.writer, len(self.txns))
                self.txns.append(txn)
                self._one(txn)
        except Exception as e:  # the scenario fails on it: the rules would check nothing after it
            self.died = repr(e)
            raise

    def _one(self, txn: Txn) -> None:
        try:
            self._attempt(txn)
        finally:
            txn.ended = time.monotonic()

    def _attempt(self, txn: Txn) -> None:
        commit = self._random.randrange(ABORT_ONE_IN) != 0
        commit_asked = False
        try:
            self._producer.begin_transaction()
            for p in range(self.partitions):
                for i in range(RECORDS_PER_PARTITION):
                    value = b"t%d-%d-p%d-%d" % (self.writer, txn.number, p, i)
                    txn.values.append((p, value))
                    self._producer.produce(self.topic, value=value, partition=p)
            self._producer.poll(0)
            if commit:
                commit_asked = True
                self._retrying(self._producer.commit_transaction, "commit")
                txn.outcome = "committed"
            else:
                # the records in the log first: an abort of records never sent leaves no marker
                self._producer.flush(CALL_TIMEOUT_S)
                self._retrying(self._producer.abort_transaction, "abort")
                txn.outcome = "aborted"
        except (KafkaException, BufferError) as e:
            error = e.args[0] if isinstance(e, KafkaException) else None
            self.errors.append(f"txn {txn.number} ({'commit' if commit else 'abort'}): {e}")
            if error is not None and error.txn_requires_abort():
                try:
                    self._retrying(self._producer.abort_transaction, "abort after an error")
                    if not commit_asked:
                        txn.outcome = "aborted"
                    return
                except KafkaException as again:
                    self.errors.append(f"abort after an error: {again}")
            self._fresh_producer()

    def stop(self) -> None:
        """Finish the transaction under way; the producer's last transaction ended."""
        self._stop.set()
        self._thread.join(STOP_LIMIT_S)
        assert not self._thread.is_alive(), f"transactional writer {self.writer} did not stop"
        assert self.died is None, f"transactional writer {self.writer} died: {self.died}"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(STOP_LIMIT_S)
        self._discard()


def committed_consumer(cluster: Cluster, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                     "isolation.level": "read_committed", "topic.metadata.refresh.interval.ms": 1000, **extra})


def read_committed_to_end(cluster: Cluster, topic: str, ends: dict[int, int],
                          timeout: float = 60.0) -> list[tuple[int, int, bytes]]:
    """A fresh read_committed consumer's read of every partition from offset 0 until it reports
    the end of partition p at ends[p] (the final log's end: the last stable offset is there once
    no transaction is open)."""
    consumer = committed_consumer(cluster, f"final-{topic}", **{"enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        reads: list[tuple[int, int, bytes]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while at_end != set(ends):
            assert time.monotonic() < deadline, f"read_committed read of {topic} ended {at_end} of {set(ends)}"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is None:
                reads.append((msg.partition(), msg.offset(), msg.value()))
            elif msg.error().code() == KafkaError._PARTITION_EOF and msg.offset() >= ends[msg.partition()]:
                at_end.add(msg.partition())
        return reads
    finally:
        consumer.close()
