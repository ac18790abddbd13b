"""Streaming reads (`spark.readStream.format("twinlog")`): the connector's KafkaMicroBatchStream.

Offsets are `{"topic":{"partition":offset}}` dicts (offsets.py), so Spark's checkpoint holds the
connector's JSON and a restarted query resumes from the end of its last committed micro-batch.

- initialOffset: startingTimestamp / startingOffsetsByTimestamp / startingOffsets (default
  "latest") resolved once for the partitions that exist when the query first starts.
- latestOffset(start, limit): the latest offsets now; with maxOffsetsPerTrigger Spark passes
  ReadMaxRows and the range is cut with the connector's proportional rate limit. Partitions that
  appear later start at earliest; partitions that disappear are reported as data loss.
- minOffsetsPerTrigger + maxTriggerDelay: a micro-batch waits (latestOffset returns its start)
  until that many new records are there or maxTriggerDelay has passed since the last one ran, as
  the connector's delayBatch. Not under Trigger.AvailableNow, which must end.
- minPartitions / maxRecordsPerPartition split a range into several Spark partitions.
- Source metrics: the connector's avgOffsetsBehindLatest & co. cannot be reported: pyspark 4.3's
  Python stream reader has no metrics hook (python_streaming_source_runner serves only offsets,
  partitions, commit, read limits and reportLatestOffset); Spark shows the latest offsets we
  report (sources[].latestOffset in lastProgress), from which lag follows.
- Trigger.AvailableNow: prepareForTriggerAvailableNow records the latest offsets at query start
  and no micro-batch goes past them (still split by maxOffsetsPerTrigger, as in the connector).
- commit is a no-op: the checkpoint, not Kafka, owns the progress (the connector never commits).
"""

from __future__ import annotations

import logging
import time
from typing import Iterator, Sequence

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from spark.batch_reader import reader_settings
from spark.metadata import KafkaMetadata
from spark.offsets import (KafkaOffsetRange, PartitionOffsets, from_json_dict, offset_ranges, rate_limit,
                           split_ranges, to_json_dict)
from spark.options import SourceOptions
from spark.partition_reader import DataLossError, read_range

log = logging.getLogger(__name__)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: SourceOptions, bootstrap: str):
        self.opts = opts
        self.bootstrap = bootstrap
        self.settings = reader_settings(opts, bootstrap)
        self._metadata: KafkaMetadata | None = None
        self._target: PartitionOffsets | None = None  # availableNow's end, once prepared
        self._last_trigger = time.monotonic()  # when a micro-batch last went ahead (minOffsetsPerTrigger)

    def __getstate__(self) -> dict:
        # Executors get a copy of this reader for read(); the admin client stays on the driver.
        state = dict(self.__dict__)
        state["_metadata"] = None
        return state

    @property
    def metadata(self) -> KafkaMetadata:
        if self._metadata is None:
            self._metadata = KafkaMetadata(self.bootstrap, self.opts.kafka_params,
                                           retries=self.opts.fetch_offset_retries,
                                           retry_interval_ms=self.opts.fetch_offset_retry_interval_ms)
        return self._metadata

    def initialOffset(self) -> dict:
        tps = self.metadata.partitions(self.opts.topics)
        start = self.metadata.resolve(self.opts.starting, tps, "starting", self.opts.starting_by_timestamp_strategy)
        log.info("twinlog source: initial offsets %s", start)
        return to_json_dict(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.metadata.latest(self.metadata.partitions(self.opts.topics))
        log.info("twinlog source: availableNow reads up to %s", self._target)

    def _latest(self) -> PartitionOffsets:
        if self._target is not None:
            return dict(self._target)
        return self.metadata.latest(self.metadata.partitions(self.opts.topics))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json_dict(start)
        latest = self._latest()
        gone = sorted(set(begin) - set(latest))
        if gone:
            self._lost(f"partitions {gone} are gone")
        for tp in sorted(tp for tp in latest if tp in begin and latest[tp] < begin[tp]):
            self._lost(f"{tp[0]}-{tp[1]}'s latest offset {latest[tp]} is below the {begin[tp]} already read")
        if self._delay_batch(begin, latest):
            return start
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in latest if tp not in begin]
            end = rate_limit(limit.max_rows, begin, latest, self.metadata.earliest(new) if new else {})
        else:
            end = latest
        return to_json_dict(end)

    def _delay_batch(self, begin: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """The connector's delayBatch: wait for minOffsetsPerTrigger new records, at most maxTriggerDelay."""
        wanted = self.opts.min_offsets_per_trigger
        if not wanted or self._target is not None:
            return False
        now = time.monotonic()
        waited_ms = (now - self._last_trigger) * 1000
        available = sum(max(0, off - begin.get(tp, off)) for tp, off in latest.items())
        if available < wanted and waited_ms < self.opts.max_trigger_delay_ms:
            log.debug("twinlog source: %d new records < minOffsetsPerTrigger %d; waiting", available, wanted)
            return True
        self._last_trigger = now
        return False

    def reportLatestOffset(self) -> dict | None:
        return to_json_dict(self._latest())

    def _lost(self, message: str) -> None:
        if self.opts.fail_on_data_loss:
            raise DataLossError(f"{message}. Set the source option 'failOnDataLoss' to 'false' to go on.")
        log.warning("%s; failOnDataLoss=false, going on", message)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return split_ranges(offset_ranges(from_json_dict(start), from_json_dict(end)), self.opts.min_partitions,
                            self.opts.max_records_per_partition)

    def read(self, partition: KafkaOffsetRange) -> Iterator[tuple]:
        return read_range(partition, self.settings)

    def commit(self, end: dict) -> None:
        pass

    def stop(self) -> None:
        self._metadata = None
