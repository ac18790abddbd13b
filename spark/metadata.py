"""The driver's view of Kafka: which partitions the options select, and their offsets.

Like the connector's KafkaOffsetReaderAdmin, the driver talks to the cluster through an admin
client only: Metadata to find partitions (describeTopics / listTopics), ListOffsets for
earliest, latest and by-timestamp offsets with the query's kafka.isolation.level (so under
read_committed "latest" is the last stable offset, below any open transaction). No consumer
runs on the driver, so nothing joins a group or holds a fetch session there.

On a cluster a leader can move under a query. A call that fails with a retriable error (no
leader elected yet, the broker's connection refused, a leader epoch the leader has moved past)
is tried again fetchOffset.numRetries times, fetchOffset.retryIntervalMs apart, as the
connector's KafkaOffsetReader does, each time with a new admin client: librdkafka's admin
ListOffsets takes the leader and its epoch from the client's metadata cache, and one CI run saw
ten retries over 40 s all answered FENCED_LEADER_EPOCH from that stale cache while a fresh
client (the restarted query) succeeded at once.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Iterable, Mapping, TypeVar

from confluent_kafka import IsolationLevel, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec as KafkaOffsetSpec

from spark.client_config import admin_config, isolation_level
from spark.offsets import PartitionOffsets, TopicPartition
from spark.options import EARLIEST, LATEST, OffsetSpec, OptionError, TopicSelection

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
T = TypeVar("T")


class NoOffsetYet(RuntimeError):
    """ListOffsets answered without an offset (-1001) for earliest/latest: a leader in transition."""


def retriable(exc: Exception) -> bool:
    """Whether a failed driver call may succeed once the cluster has elected a leader again.

    librdkafka's admin ListOffsets reports a partition whose metadata shows no leader (the old
    one was killed, the new one not yet elected) as a local _NOENT, "No leaders found", not as
    LEADER_NOT_AVAILABLE, and does not mark it retriable.
    """
    if isinstance(exc, NoOffsetYet):
        return True
    err = exc.args[0] if exc.args else None
    return not hasattr(err, "retriable") or err.retriable() or err.code() in (
        KafkaError._NOENT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT, KafkaError._DESTROY_BROKER,
        KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH)


class KafkaMetadata:
    """One admin client; open on the driver, never shipped to executors (it is not picklable)."""

    def __init__(self, bootstrap: str, params: Mapping[str, str], timeout_s: float = DEFAULT_TIMEOUT_S,
                 retries: int = 3, retry_interval_ms: int = 1000):
        self._config = admin_config(bootstrap, params)
        self._isolation = (IsolationLevel.READ_COMMITTED if isolation_level(params) == "read_committed"
                           else IsolationLevel.READ_UNCOMMITTED)
        self._admin = AdminClient(self._config)
        self._timeout = timeout_s
        self._retries = retries
        self._retry_interval_s = retry_interval_ms / 1000

    def _with_retries(self, call: Callable[[], T], what: str) -> T:
        for attempt in range(1, self._retries + 1):
            try:
                return call()
            except (KafkaException, NoOffsetYet) as e:
                if not retriable(e):
                    raise
                log.info("twinlog source: %s failed (%s); retry %d of %d in %.1fs", what, e, attempt,
                         self._retries, self._retry_interval_s)
                time.sleep(self._retry_interval_s)
                self._admin = AdminClient(self._config)  # metadata asked anew, not from the old cache
        return call()

    def partitions(self, selection: TopicSelection) -> list[TopicPartition]:
        """Partitions the options select that exist now, sorted. `assign` is taken as given."""
        if selection.assign:
            return sorted(selection.assign)
        topics = self._with_retries(lambda: self._admin.list_topics(timeout=self._timeout), "Metadata").topics
        out = []
        for name, topic in topics.items():
            if not selection.matches(name):
                continue
            if topic.error is not None:
                continue  # e.g. a subscribed topic that does not exist (yet): nothing to read
            out += [(name, p) for p in topic.partitions]
        return sorted(out)

    def _list_offsets(self, requests: Mapping[TopicPartition, KafkaOffsetSpec],
                      by_timestamp: bool = False) -> dict[TopicPartition, int]:
        if not requests:
            return {}
        wanted = {KafkaTopicPartition(t, p): spec for (t, p), spec in requests.items()}

        def list_offsets() -> dict[TopicPartition, int]:
            futures = self._admin.list_offsets(
                wanted, isolation_level=self._isolation, request_timeout=self._timeout)
            found = {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
            missing = sorted(tp for tp, off in found.items() if off < 0)
            if missing and not by_timestamp:  # -1 is a real answer only for a timestamp
                raise NoOffsetYet(f"ListOffsets gave no offset for {missing}")
            return found

        # A just-created topic, or one whose leader just died, has no leader for a moment.
        return self._with_retries(list_offsets, "ListOffsets")

    def earliest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: KafkaOffsetSpec.earliest() for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: KafkaOffsetSpec.latest() for tp in tps})

    def for_timestamps(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Offset of the first record with timestamp >= ts per partition; -1 where there is none."""
        return self._list_offsets({tp: KafkaOffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()},
                                  by_timestamp=True)

    def resolve(self, spec: OffsetSpec, tps: list[TopicPartition], side: str,
                no_match: str = "latest") -> PartitionOffsets:
        """Concrete offsets for `tps` at one end of a range.

        side is "starting" or "ending" (used in messages). no_match says what a timestamp with no
        record at or after it gives: "latest" (the connector's rule for ending timestamps and for
        startingOffsetsByTimestampStrategy=latest) or "error" (its default for starting ones).
        """
        if spec.kind == "earliest":
            return self.earliest(tps)
        if spec.kind == "latest":
            return self.latest(tps)
        if spec.kind == "offsets":
            return self._resolve_offsets(spec, tps, side)
        if spec.kind == "timestamp":
            stamps = {tp: spec.timestamp for tp in tps}
        else:
            missing = sorted(set(tps) - set(spec.per_partition))
            if missing:
                raise OptionError(f"{side}OffsetsByTimestamp does not name partitions {missing}")
            stamps = {tp: spec.per_partition[tp] for tp in tps}
        found = self.for_timestamps(stamps)
        unmatched = [tp for tp, off in found.items() if off < 0]
        if unmatched and no_match == "error":
            raise OptionError(
                f"no record has a timestamp at or after the {side} timestamp in partitions {sorted(unmatched)}; "
                "set startingOffsetsByTimestampStrategy=latest to start those at their latest offset")
        if unmatched:
            found.update(self.latest(unmatched))
        return found

    def _resolve_offsets(self, spec: OffsetSpec, tps: list[TopicPartition], side: str) -> PartitionOffsets:
        missing = sorted(set(tps) - set(spec.per_partition))
        if missing:
            raise OptionError(f"{side}Offsets does not name partitions {missing} of the selected topics")
        offsets = {tp: spec.per_partition[tp] for tp in tps}
        earliest = [tp for tp, o in offsets.items() if o == EARLIEST]
        latest = [tp for tp, o in offsets.items() if o == LATEST]
        offsets.update(self.earliest(earliest))
        offsets.update(self.latest(latest))
        return offsets
