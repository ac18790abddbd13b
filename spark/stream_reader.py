"""Streaming reads (`spark.readStream.format("twinlog")`): the connector's KafkaMicroBatchStream.

Offsets are `{"topic":{"partition":offset}}` dicts (offsets.py), so Spark's checkpoint holds the
connector's JSON and a restarted query resumes from the end of its last committed micro-batch.

- initialOffset: startingTimestamp / startingOffsetsByTimestamp / startingOffsets (default
  "latest") resolved once for the partitions that exist when the query first starts.
- latestOffset(start, limit): the latest offsets now; with maxOffsetsPerTrigger Spark passes
  ReadMaxRows and the range is cut with the connector's proportional rate limit. Partitions that
  appear later start at earliest; partitions that disappear are reported as data loss.
- Trigger.AvailableNow: prepareForTriggerAvailableNow records the latest offsets at query start
  and no micro-batch goes past them (still split by maxOffsetsPerTrigger, as in the connector).
- commit is a no-op: the checkpoint, not Kafka, owns the progress (the connector never commits).
"""

from __future__ import annotations

import logging
from typing import Iterator, Sequence

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from spark.batch_reader import reader_settings
from spark.metadata import KafkaMetadata
from spark.offsets import KafkaOffsetRange, PartitionOffsets, from_json_dict, offset_ranges, rate_limit, to_json_dict
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

    def __getstate__(self) -> dict:
        # Executors get a copy of this reader for read(); the admin client stays on the driver.
        state = dict(self.__dict__)
        state["_metadata"] = None
        return state

    @property
    def metadata(self) -> KafkaMetadata:
        if self._metadata is None:
            self._metadata = KafkaMetadata(self.bootstrap, self.opts.kafka_params)
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
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in latest if tp not in begin]
            end = rate_limit(limit.max_rows, begin, latest, self.metadata.earliest(new) if new else {})
        else:
            end = latest
        return to_json_dict(end)

    def reportLatestOffset(self) -> dict | None:
        return to_json_dict(self._latest())

    def _lost(self, message: str) -> None:
        if self.opts.fail_on_data_loss:
            raise DataLossError(f"{message}. Set the source option 'failOnDataLoss' to 'false' to go on.")
        log.warning("%s; failOnDataLoss=false, going on", message)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return offset_ranges(from_json_dict(start), from_json_dict(end))

    def read(self, partition: KafkaOffsetRange) -> Iterator[tuple]:
        return read_range(partition, self.settings)

    def commit(self, end: dict) -> None:
        pass

    def stop(self) -> None:
        self._metadata = None
