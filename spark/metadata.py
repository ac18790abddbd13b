"""The driver's view of Kafka: which partitions the options select, and their offsets.

Like the connector's KafkaOffsetReaderAdmin, the driver talks to the cluster through an admin
client only: Metadata to find partitions (describeTopics / listTopics), ListOffsets for
earliest, latest and by-timestamp offsets with isolation level read_uncommitted. No consumer
runs on the driver, so nothing joins a group or holds a fetch session there.
"""

from __future__ import annotations

import time
from typing import Iterable, Mapping

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec as KafkaOffsetSpec

from spark.client_config import admin_config
from spark.offsets import PartitionOffsets, TopicPartition
from spark.options import EARLIEST, LATEST, OffsetSpec, OptionError, TopicSelection

DEFAULT_TIMEOUT_S = 30.0


class KafkaMetadata:
    """One admin client; open on the driver, never shipped to executors (it is not picklable)."""

    def __init__(self, bootstrap: str, params: Mapping[str, str], timeout_s: float = DEFAULT_TIMEOUT_S):
        self._admin = AdminClient(admin_config(bootstrap, params))
        self._timeout = timeout_s

    def partitions(self, selection: TopicSelection) -> list[TopicPartition]:
        """Partitions the options select that exist now, sorted. `assign` is taken as given."""
        if selection.assign:
            return sorted(selection.assign)
        topics = self._admin.list_topics(timeout=self._timeout).topics
        out = []
        for name, topic in topics.items():
            if not selection.matches(name):
                continue
            if topic.error is not None:
                continue  # e.g. a subscribed topic that does not exist (yet): nothing to read
            out += [(name, p) for p in topic.partitions]
        return sorted(out)

    def _list_offsets(self, requests: Mapping[TopicPartition, KafkaOffsetSpec]) -> dict[TopicPartition, int]:
        if not requests:
            return {}
        wanted = {KafkaTopicPartition(t, p): spec for (t, p), spec in requests.items()}
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                futures = self._admin.list_offsets(
                    wanted, isolation_level=IsolationLevel.READ_UNCOMMITTED, request_timeout=self._timeout)
                return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
            except KafkaException as e:
                # A just-created topic can miss a leader for a moment; the connector retries too.
                if time.monotonic() > deadline or not e.args[0].retriable():
                    raise

    def earliest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: KafkaOffsetSpec.earliest() for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: KafkaOffsetSpec.latest() for tp in tps})

    def for_timestamps(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Offset of the first record with timestamp >= ts per partition; -1 where there is none."""
        return self._list_offsets({tp: KafkaOffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()})

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
