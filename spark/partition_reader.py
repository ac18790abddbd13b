"""Reading one offset range on an executor: the connector's KafkaDataConsumer, on librdkafka.

Client choice: confluent-kafka (librdkafka) rather than kafka-python. The executor's work is a
tight fetch loop over one partition; librdkafka fetches and decompresses in C on its own threads
and hands batches of messages to Python (`consume(n)`), where kafka-python parses every record
in Python. Both can do what the connector needs (assign + seek, no group membership, no commits,
headers, timestamp types); librdkafka is also what the broker's benchmarks already use.

Like the connector, the consumer is given a partition with `assign` at the range's start (no
subscribe, no group join, never a commit) and reads until the range's end, exclusive:

- start -2 means "earliest": a partition discovered after the range was planned;
- a start below the partition's log start offset (an out-of-range error) means records were
  deleted (retention, DeleteRecords) before they were read: failOnDataLoss=true fails the task,
  false reads from the log start instead;
- reaching the high watermark before the end (the log was truncated) is the same kind of loss;
- offsets missing inside the range (compaction, transaction markers) are skipped: the read ends
  at the first record at or past the end, or at end-of-partition at or past it;
- no progress for kafkaConsumer.pollTimeoutMs fails the task, like the connector's fetch timeout.

On a cluster the partition's leader can die mid-read. librdkafka follows the move itself
(NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH make it refresh metadata and
fetch from the new leader at the same offset); the errors it still hands up for a dead broker
(connection refused, all brokers down) are transient here, bounded by pollTimeoutMs. A newly
elected leader can briefly report a high watermark below the old one's (its followers have not
fetched yet): before a range end above the log end counts as data loss, the watermark is asked
again fetchOffset.numRetries times, fetchOffset.retryIntervalMs apart. The broker never serves a
consumer past the high watermark, so nothing read can be taken back by a failover.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterator, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from spark.client_config import consumer_config
from spark.offsets import KafkaOffsetRange
from spark.schema import row_of

log = logging.getLogger(__name__)

FETCH_BATCH = 5000
POLL_STEP_S = 1.0
METADATA_TIMEOUT_S = 30.0


class DataLossError(RuntimeError):
    """Records the query needed are gone; raised only when failOnDataLoss=true."""


@dataclass(frozen=True)
class ReaderSettings:
    """What an executor needs to read: picklable, no client objects."""

    bootstrap: str
    kafka_params: Mapping[str, str]
    group_id: str
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    retries: int = 3
    retry_interval_ms: int = 1000


# Errors librdkafka reports while it follows a leader change; it recovers from them on its own.
# (NOT_LEADER_FOR_PARTITION is librdkafka's name for NOT_LEADER_OR_FOLLOWER, code 6.) A restarted
# broker can answer UNKNOWN_TOPIC_OR_PART for a moment, before it has the cluster's metadata;
# _DESTROY_BROKER is a dead broker's connection torn down under a request.
_TRANSIENT = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
              KafkaError._DESTROY_BROKER, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
              KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.REQUEST_TIMED_OUT,
              KafkaError.UNKNOWN_TOPIC_OR_PART}
# A fresh client whose first Metadata came from a broker still starting does not know the
# partition for a moment: worth asking again before the read starts.
_NOT_KNOWN_YET = _TRANSIENT | {KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}


def _lost(settings: ReaderSettings, message: str) -> None:
    if settings.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost because they are not available in Kafka any more; "
            "either the data was aged out by Kafka or the topic may have been deleted before all the data "
            "in the topic was processed. If you don't want your streaming query to fail on such cases, "
            "set the source option 'failOnDataLoss' to 'false'.")
    log.warning("%s; failOnDataLoss=false, so going on with what is still there", message)


def read_range(r: KafkaOffsetRange, settings: ReaderSettings) -> Iterator[tuple]:
    if not isinstance(r, KafkaOffsetRange):
        return  # Spark reads one placeholder InputPartition when partitions() planned none
    consumer = Consumer(consumer_config(settings.bootstrap, settings.kafka_params, settings.group_id))
    try:
        yield from _read(consumer, r, settings)
    finally:
        consumer.close()


def _watermarks(consumer: Consumer, r: KafkaOffsetRange, settings: ReaderSettings, end: int) -> tuple[int, int]:
    """(log start, high watermark), asked again while the leader is unknown or its HW is below `end`."""
    tp = KafkaTopicPartition(r.topic, r.partition)
    for _ in range(settings.retries):
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=METADATA_TIMEOUT_S, cached=False)
            if high >= end:
                return low, high
        except KafkaException as e:
            if e.args[0].code() not in _NOT_KNOWN_YET:
                raise
            try:
                consumer.list_topics(r.topic, timeout=settings.retry_interval_ms / 1000)  # refresh its metadata
            except KafkaException:
                pass  # the next attempt says whether it helped
        time.sleep(settings.retry_interval_ms / 1000)
    return consumer.get_watermark_offsets(tp, timeout=METADATA_TIMEOUT_S, cached=False)


def _read(consumer: Consumer, r: KafkaOffsetRange, settings: ReaderSettings) -> Iterator[tuple]:
    # Watermarks are asked only when needed: a start below the log start comes back as an
    # out-of-range error, an end above the log end as end-of-partition before it (_on_error).
    # Asking up front costs a round trip per range and fails while a leader moves.
    start, end = r.start, r.end
    if start < 0:
        start, _ = _watermarks(consumer, r, settings, 0)
    if start >= end:
        return
    consumer.assign([KafkaTopicPartition(r.topic, r.partition, start)])
    next_offset = start
    last_progress = time.monotonic()
    while next_offset < end:
        messages = consumer.consume(min(FETCH_BATCH, end - next_offset), timeout=POLL_STEP_S)
        if not messages:
            if (time.monotonic() - last_progress) * 1000 > settings.poll_timeout_ms:
                raise TimeoutError(f"Cannot fetch record for offset {next_offset} of {r.topic}-{r.partition} "
                                   f"in {settings.poll_timeout_ms} milliseconds")
            continue
        last_progress = time.monotonic()
        for m in messages:
            err = m.error()
            if err is not None and _transient(err):
                log.debug("twinlog source: %s-%d: %s; librdkafka retries", r.topic, r.partition, err)
                continue
            if err is not None:
                next_offset = _on_error(consumer, err, m, r, next_offset, end, settings)
                if next_offset >= end:
                    return
                break  # after a seek, messages left in this batch are stale
            offset = m.offset()
            if offset >= end:
                return
            if offset < next_offset:
                continue  # a whole batch is fetched even when the range starts inside it
            yield row_of(m, settings.include_headers)
            next_offset = offset + 1


def _transient(err: KafkaError) -> bool:
    return err.code() in _TRANSIENT or (err.retriable() and not err.fatal())


def _on_error(consumer: Consumer, err: KafkaError, m, r: KafkaOffsetRange, next_offset: int, end: int,
              settings: ReaderSettings) -> int:
    """Returns the offset to go on from; `end` or more stops the read."""
    code = err.code()
    if code == KafkaError._PARTITION_EOF:
        eof = m.offset()
        if eof >= end:
            return end
        _, high = _watermarks(consumer, r, settings, end)
        if high >= end:
            return next_offset  # a new leader's HW caught up: the fetcher goes on by itself
        _lost(settings, f"{r.topic}-{r.partition} ends at {high} before the planned end {end}")
        return end
    if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
        tp = KafkaTopicPartition(r.topic, r.partition)
        low, _ = _watermarks(consumer, r, settings, end)
        if next_offset < low:
            _lost(settings, f"offset {next_offset} of {r.topic}-{r.partition} is out of range (log starts at {low})")
        else:  # above a just-elected leader's log end for a moment: fetch the same offset again
            time.sleep(settings.retry_interval_ms / 1000)
        resume = max(low, next_offset)
        if resume < end:
            consumer.assign([KafkaTopicPartition(r.topic, r.partition, resume)])
        return resume
    raise KafkaException(err)
