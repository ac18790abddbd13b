"""Batch reads (`spark.read.format("twinlog")`): the connector's KafkaRelation / KafkaBatch.

The driver resolves startingOffsets and endingOffsets (or their timestamp forms) to concrete
offsets once, when Spark plans the scan, and cuts one input partition per Kafka partition (more
with minPartitions / maxRecordsPerPartition, offsets.split_ranges); executors read their ranges (partition_reader.py). The connector's defaults for batch queries
apply: start at earliest, end at latest; a start of "latest" or an end of "earliest" is refused
when the options are parsed (options.py).
"""

from __future__ import annotations

import uuid
from typing import Iterator, Sequence

from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark.metadata import KafkaMetadata
from spark.offsets import KafkaOffsetRange, offset_ranges, split_ranges
from spark.options import SourceOptions
from spark.partition_reader import ReaderSettings, read_range


def reader_settings(opts: SourceOptions, bootstrap: str) -> ReaderSettings:
    # Like the connector: a unique group id per query unless kafka.group.id is given, and the
    # executors' consumers use "<id>-executor". The group is never joined nor committed to.
    group = opts.group_id or f"{opts.group_id_prefix}-{uuid.uuid4()}"
    return ReaderSettings(
        bootstrap=bootstrap,
        kafka_params=dict(opts.kafka_params),
        group_id=f"{group}-executor" if opts.group_id is None else group,
        include_headers=opts.include_headers,
        fail_on_data_loss=opts.fail_on_data_loss,
        poll_timeout_ms=opts.poll_timeout_ms,
        retries=opts.fetch_offset_retries,
        retry_interval_ms=opts.fetch_offset_retry_interval_ms,
    )


class KafkaBatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions, bootstrap: str):
        self.opts = opts
        self.bootstrap = bootstrap
        self.settings = reader_settings(opts, bootstrap)

    def partitions(self) -> Sequence[InputPartition]:
        metadata = KafkaMetadata(self.bootstrap, self.opts.kafka_params, retries=self.opts.fetch_offset_retries,
                                 retry_interval_ms=self.opts.fetch_offset_retry_interval_ms)
        tps = metadata.partitions(self.opts.topics)
        start = metadata.resolve(self.opts.starting, tps, "starting", self.opts.starting_by_timestamp_strategy)
        end = metadata.resolve(self.opts.ending, tps, "ending", "latest")
        backwards = sorted(tp for tp in tps if start[tp] > end[tp])
        if backwards:
            tp = backwards[0]
            raise ValueError(f"beginning offset {start[tp]} is after the ending offset {end[tp]} for topic "
                             f"{tp[0]} partition {tp[1]}. You either provided an invalid fromOffset, or the "
                             "Kafka topic has been damaged")
        return split_ranges(offset_ranges(start, end), self.opts.min_partitions, self.opts.max_records_per_partition)

    def read(self, partition: KafkaOffsetRange) -> Iterator[tuple]:
        return read_range(partition, self.settings)
