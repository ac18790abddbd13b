"""The broker's Prometheus metrics that count events as they happen (`--metrics-port`).

Names follow what Prometheus's JMX exporter, with its stock Kafka rules, makes of Kafka's own
MBeans, so a dashboard written for Kafka finds them: `kafka.<domain>:type=<Type>,name=<Name>`
becomes `kafka_<domain>_<type>_<name>` in lower case, a `...PerSec` meter becomes a counter
ending in `_total` (its count: Prometheus computes rates), the MBean's keys become labels, and a
Kafka timer `...TimeMs` a histogram in milliseconds. Metrics Kafka has no MBean for take the name
the common Kafka exporter gives them (`kafka_consumergroup_lag`) or a `twinlog_` one. What is
read from the broker's state at scrape time (offsets, sizes, lag, replicas) is in
metrics_collector.py; the HTTP side in metrics_http.py.

    kafka_network_requestmetrics_requests_total{request,version}   RequestsPerSec
    kafka_network_requestmetrics_errors_total{request,error}       ErrorsPerSec (NONE not counted)
    kafka_network_requestmetrics_totaltimems{request}              TotalTimeMs: frame read -> answer
                                                                   written to the socket (no answer:
                                                                   -> handled)
    kafka_network_requestmetrics_requestqueuetimems{request}       RequestQueueTimeMs: frame read ->
                                                                   its handling starts (behind the
                                                                   connection's earlier frames)
    kafka_network_requestmetrics_responsequeuetimems{request}      ResponseQueueTimeMs: answer ready ->
                                                                   its writing starts (behind earlier
                                                                   answers waiting for an fsync)
    kafka_server_brokertopicmetrics_bytesin_total{topic}           BytesInPerSec (appended batches)
    kafka_server_brokertopicmetrics_messagesin_total{topic}        MessagesInPerSec
    kafka_server_brokertopicmetrics_bytesout_total{topic}          BytesOutPerSec (consumers' fetches)
    kafka_server_brokertopicmetrics_replicationbytesout_total      ReplicationBytesOutPerSec
    kafka_server_brokertopicmetrics_failedproducerequests_total{topic}  FailedProduceRequestsPerSec: partitions
    kafka_server_brokertopicmetrics_failedfetchrequests_total{topic}    FailedFetchRequestsPerSec    whose append
                                                                   or read failed, less the errors Kafka's
                                                                   ReplicaManager expects (EXPECTED_ERRORS)
    kafka_server_socket_server_metrics_connection_count            connection-count
    kafka_server_socket_server_metrics_connection_creation_total   connection-creation-total
    kafka_server_socket_server_metrics_connection_close_total      connection-close-total
    kafka_log_logflushstats_logflushrateandtimems                  LogFlushRateAndTimeMs: each
                                                                   group-commit fsync (produce
                                                                   with flush.messages, followers)
    twinlog_storage_fsyncs_total{file}                             fsyncs the engines completed, by kind of
                                                                   file (log, commitlog, consumequeue, index,
                                                                   checkpoint, ...: segment/fsync_count.py)
    twinlog_startup_recovery_seconds                               opening and recovering the data dir
    twinlog_startup_seconds                                        process start -> ready (/health 200)
    twinlog_event_loop_lag_seconds                                 how late a timer due every 50 ms ran
                                                                   (Kafka's JVM has no such loop; Node's
                                                                   monitorEventLoopDelay's measure)
    twinlog_transaction_end_step_ms{step}                          a transaction's end after its Prepare
                                                                   record: "markers" (Prepare written ->
                                                                   every marker written and replicated),
                                                                   "complete" (-> Complete record written);
                                                                   EndTxn -> Prepare written is EndTxn's
                                                                   totaltimems (Kafka has no such steps)

Requests are labelled with Kafka's API names (ProduceRequest -> "Produce"), and a Fetch, as in
Kafka's request metrics, as "FetchConsumer" or "FetchFollower".

The hot path pays a few counter increments per request: each (API, version) and each topic
has its label children looked up once and cached here (RequestInstruments), so a Produce costs
a dict lookup, a requests increment, three time observations, and a bytes and messages
increment per topic; the failed-request walk runs only for an answer that holds an error.
prometheus_client's values take a lock each, which is what lets the HTTP thread read them
without the event loop.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, Metric

from segment.fsync_count import fsyncs

from wire.follower_fetch_response import FollowerFetchBody
from wire.error_codes import ErrorCode
from wire.produce_response import ProduceBody
from wire.protocol import RequestHeader, fetch_replica_id, request_class

from broker.api.response_errors import errors_in

if TYPE_CHECKING:
    from broker.topic import Topic

PRODUCE, FETCH = 0, 1
# Kafka's meters have no creation time, and a `_created` series per label set doubles the output.
disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated

BYTES_IN, MESSAGES_IN, BYTES_OUT, FAILED_PRODUCE, FAILED_FETCH = range(5)  # a topic's children (_topic)
RECORD_COUNT_AT = slice(57, 61)  # a v2 batch header's record count (wire/record_batch.py)
# Kafka's request times run from well under a millisecond to a long poll's max_wait (500 ms by
# default) and an acks=all produce's timeout.
TIME_BUCKETS_MS = (0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)
FSYNC_BUCKETS_MS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000)
# An idle loop's timer fires within a millisecond (epoll's timeout is in whole milliseconds);
# a stall a client notices is tens of milliseconds, one that times out requests seconds.
LAG_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)


# Kafka's ReplicaManager marks a failed produce or fetch for a partition whose append or read
# threw, except the exceptions it expects (appendToLocalLog, readFromLog); the errors answered
# before the log is reached (KafkaApis: authorization, an unknown topic) or after it (the
# purgatory's timeout) are not counted either.
EXPECTED_ERRORS = {
    PRODUCE: frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID", "NOT_LEADER_OR_FOLLOWER",
                        "MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "CORRUPT_MESSAGE", "KAFKA_STORAGE_ERROR",
                        "TOPIC_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                        "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "INVALID_REQUIRED_ACKS"}),
    FETCH: frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID", "NOT_LEADER_OR_FOLLOWER",
                      "UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH", "REPLICA_NOT_AVAILABLE", "KAFKA_STORAGE_ERROR",
                      "INCONSISTENT_TOPIC_ID", "OFFSET_OUT_OF_RANGE", "OFFSET_MOVED_TO_TIERED_STORAGE",
                      "TOPIC_AUTHORIZATION_FAILED"}),
}


def request_name(api_key: int, version: int, follower: bool = False) -> str:
    """Kafka's name of the API (its ApiKeys name: kio's class name less "Request")."""
    if api_key == FETCH:
        return "FetchFollower" if follower else "FetchConsumer"
    name: str = request_class(api_key, version).__name__
    return name.removesuffix("Request")


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("kafka_network_requestmetrics_requests", "Requests answered, per API and version",
                                ("request", "version"), registry=r)
        self.errors = Counter("kafka_network_requestmetrics_errors",
                              "Error codes in answers (each partition's counts), per API and error",
                              ("request", "error"), registry=r)
        self.total_time = Histogram("kafka_network_requestmetrics_totaltimems",
                                    "Milliseconds from a request's frame read to its answer written, per API",
                                    ("request",), buckets=TIME_BUCKETS_MS, registry=r)
        self.request_queue_time = Histogram("kafka_network_requestmetrics_requestqueuetimems",
                                            "Milliseconds a request's frame waited before its handling started",
                                            ("request",), buckets=TIME_BUCKETS_MS, registry=r)
        self.response_queue_time = Histogram("kafka_network_requestmetrics_responsequeuetimems",
                                             "Milliseconds an answer waited before its writing started",
                                             ("request",), buckets=TIME_BUCKETS_MS, registry=r)
        self.bytes_in = Counter("kafka_server_brokertopicmetrics_bytesin",
                                "Bytes of record batches appended from producers, per topic", ("topic",), registry=r)
        self.messages_in = Counter("kafka_server_brokertopicmetrics_messagesin",
                                   "Records appended from producers, per topic", ("topic",), registry=r)
        self.bytes_out = Counter("kafka_server_brokertopicmetrics_bytesout",
                                 "Bytes of record batches sent to consumers, per topic", ("topic",), registry=r)
        self.failed_produce = Counter("kafka_server_brokertopicmetrics_failedproducerequests",
                                      "Partitions whose append failed (less Kafka's expected errors), per topic",
                                      ("topic",), registry=r)
        self.failed_fetch = Counter("kafka_server_brokertopicmetrics_failedfetchrequests",
                                    "Partitions whose read failed (less Kafka's expected errors), per topic",
                                    ("topic",), registry=r)
        # The per-topic counters, in the order of a topic's cached children (_topic: BYTES_IN...)
        self._per_topic = (self.bytes_in, self.messages_in, self.bytes_out, self.failed_produce, self.failed_fetch)
        self.replication_bytes_out = Counter("kafka_server_brokertopicmetrics_replicationbytesout",
                                             "Bytes of record batches sent to followers", registry=r)
        self.connections = Gauge("kafka_server_socket_server_metrics_connection_count",
                                 "Client connections open now", registry=r)
        self.connections_created = Counter("kafka_server_socket_server_metrics_connection_creation",
                                           "Client connections accepted", registry=r)
        self.connections_closed = Counter("kafka_server_socket_server_metrics_connection_close",
                                          "Client connections closed", registry=r)
        self.fsync_time = Histogram("kafka_log_logflushstats_logflushrateandtimems",
                                    "Milliseconds per group-commit fsync", buckets=FSYNC_BUCKETS_MS, registry=r)
        r.register(FsyncCounts())
        self.recovery_seconds = Gauge("twinlog_startup_recovery_seconds",
                                      "Seconds the data dir took to open and recover at start-up", registry=r)
        self.startup_seconds = Gauge("twinlog_startup_seconds",
                                     "Seconds from start-up to serving (logs recovered, listener open, "
                                     "cluster metadata applied)", registry=r)
        self.event_loop_lag = Histogram("twinlog_event_loop_lag_seconds",
                                        "Seconds a timer due on the event loop ran late (loop_lag.py)",
                                        buckets=LAG_BUCKETS_S, registry=r)
        self.transaction_end_steps = Histogram("twinlog_transaction_end_step_ms",
                                               "Milliseconds each step of a transaction's end took after its "
                                               "Prepare record was written (markers, complete)",
                                               ("step",), buckets=TIME_BUCKETS_MS, registry=r)
        self._by_request: dict[tuple[int, int, bool], RequestInstruments] = {}
        self._by_error: dict[tuple[str, str], Counter] = {}
        self._by_topic: dict[str, tuple[Counter, ...]] = {}
        # The broker's topics by id (attach, metrics_http.py): Produce v13 and Fetch v13+ name
        # topics by id, and the per-topic series are named by topic name.
        self.topics_by_id: Mapping[uuid.UUID, Topic] = {}

    # ----- per request (dispatch.py, server.py) ----------------------------------------------

    def instruments(self, header: RequestHeader, request: Any) -> RequestInstruments:
        """The request's API's and version's label children (made on its first request)."""
        api_key = header.api_key
        follower = api_key == FETCH and fetch_replica_id(request) >= 0
        key = (api_key, header.api_version, follower)
        instruments = self._by_request.get(key)
        if instruments is None:
            instruments = self._by_request[key] = RequestInstruments(self, api_key, header.api_version, follower)
        return instruments

    def request_done(self, header: RequestHeader, request: Any, response: Any, started: float,
                     received: float | None = None) -> RequestInstruments:
        """A request handled (`response` None: acks=0); `received`, `started`: time.perf_counter()
        when its frame was read and when its handling started (None: at once). The total time of
        an answer is observed once it is written (RequestInstruments.answer_written)."""
        instruments = self.instruments(header, request)
        instruments.requests.inc()
        instruments.request_queue_time.observe((started - received) * 1000 if received is not None else 0.0)
        api_key = header.api_key
        if response is None:
            instruments.total_time.observe((time.perf_counter() - (received or started)) * 1000)
            if api_key == PRODUCE:
                self._bytes_in(request, ())
            return instruments
        name = instruments.name
        failed = errors_in(response)
        for code in failed:
            self._error(name, code.name.upper()).inc()
        if api_key == PRODUCE:
            refused = self._failed_partitions(response) if failed else ()
            self._bytes_in(request, refused)
            if refused:
                self._count_failed(PRODUCE, refused.values())
        elif api_key == FETCH and isinstance(response, FollowerFetchBody):  # written by hand
            self.replication_bytes_out.inc(response.record_bytes)
            if failed:
                self._count_failed(FETCH, response.failed)
        elif api_key == FETCH:
            self._bytes_out(response, instruments.follower)
            if failed:
                self._count_failed(FETCH, ((self._name(t), p.error_code) for t in response.responses
                                           for p in t.partitions if p.error_code.value != 0))
        return instruments

    def request_failed(self, header: RequestHeader, request: Any, started: float,
                       received: float | None = None) -> None:
        """The handler raised: the connection closes, Kafka would answer UNKNOWN_SERVER_ERROR."""
        instruments = self.instruments(header, request)
        instruments.requests.inc()
        instruments.request_queue_time.observe((started - received) * 1000 if received is not None else 0.0)
        instruments.total_time.observe((time.perf_counter() - (received or started)) * 1000)
        self._error(instruments.name, "UNKNOWN_SERVER_ERROR").inc()

    def _count_failed(self, api_key: int, errors: Iterable[tuple[str | None, ErrorCode]]) -> None:
        """Each (topic, error code) of a partition Kafka's ReplicaManager counts as failed."""
        expected = EXPECTED_ERRORS[api_key]
        for topic, code in errors:
            if topic is not None and code.name.upper() not in expected:
                self._topic(topic)[FAILED_PRODUCE if api_key == PRODUCE else FAILED_FETCH].inc()

    def _error(self, name: str, error: str) -> Counter:
        child = self._by_error.get((name, error))
        if child is None:
            child = self._by_error[(name, error)] = self.errors.labels(name, error)
        return child

    def _topic(self, topic: str) -> tuple[Counter, ...]:
        children = self._by_topic.get(topic)
        if children is None:
            children = self._by_topic[topic] = tuple(counter.labels(topic) for counter in self._per_topic)
        return children

    def _bytes_in(self, request: Any, failed: Mapping[tuple[str | None, int], object] | tuple[()]) -> None:
        for topic_data in request.topic_data:
            name = self._name(topic_data)
            size = count = 0
            for data in topic_data.partition_data:
                records = data.records
                if records and not (failed and (name, data.index) in failed):
                    size += len(records)
                    count += int.from_bytes(records[RECORD_COUNT_AT], "big")
            if size and name is not None:
                children = self._topic(name)
                children[BYTES_IN].inc(size)
                children[MESSAGES_IN].inc(count)

    def _bytes_out(self, response: Any, follower: bool) -> None:
        for topic_response in response.responses:
            size = sum(p.records.total for p in topic_response.partitions if p.records)
            if not size:
                continue
            if follower:
                self.replication_bytes_out.inc(size)
            elif (name := self._name(topic_response)) is not None:
                self._topic(name)[BYTES_OUT].inc(size)

    def _name(self, entry: Any) -> str | None:
        """A request's or response's topic entry's topic name (Fetch calls it `topic`, Produce
        `name`; v13+ of both carry only the id, None when no topic here has it any more)."""
        if hasattr(entry, "topic_id"):
            topic = self.topics_by_id.get(entry.topic_id)
            return topic.name if topic is not None else None
        name: str = entry.topic if hasattr(entry, "topic") else entry.name
        return name

    def _failed_partitions(self, response: Any) -> dict[tuple[str | None, int], tuple[str | None, ErrorCode]]:
        """(topic, partition) -> (topic, error code) of each refused partition of a Produce answer:
        a hand-written one carries them, one naming leaders is an entity."""
        if isinstance(response, ProduceBody):
            return {(name, index): (name, code) for name, index, code in response.failed}
        refused: dict[tuple[str | None, int], tuple[str | None, ErrorCode]] = {}
        for t in response.responses:
            name = self._name(t)
            for p in t.partition_responses:
                if p.error_code.value != 0:
                    refused[(name, p.index)] = (name, p.error_code)
        return refused

    def forget_topics(self, hosted: set[str]) -> None:
        """Drop the series of topics no longer hosted (Kafka removes a deleted topic's metrics).
        On the event loop, which alone changes the cache."""
        for topic in [t for t in self._by_topic if t not in hosted]:
            del self._by_topic[topic]
            for counter in self._per_topic:
                try:
                    counter.remove(topic)
                except KeyError:
                    pass

    # ----- connections (server.py), fsyncs (broker.py), transaction ends ----------------------

    def connection_opened(self) -> None:
        self.connections.inc()
        self.connections_created.inc()

    def connection_closed(self) -> None:
        self.connections.dec()
        self.connections_closed.inc()

    def transaction_end_step(self, step: str, seconds: float) -> None:
        """A step of a transaction's end done (broker/txn/ending.py)."""
        self.transaction_end_steps.labels(step).observe(seconds * 1000)

    def timed_fsync(self, flush: Callable[..., None]) -> Callable[..., None]:
        """`flush`, observed into the fsync histogram; it runs in a worker thread (replica/group_commit.py)."""
        def timed(*args: Any) -> None:
            started = time.perf_counter()
            flush(*args)
            self.fsync_time.observe((time.perf_counter() - started) * 1000)
        return timed


class RequestInstruments:
    """One (API, version, fetch from a follower or not)'s label children, made once."""

    __slots__ = ("name", "follower", "requests", "total_time", "request_queue_time", "response_queue_time")

    def __init__(self, metrics: BrokerMetrics, api_key: int, version: int, follower: bool) -> None:
        self.name = name = request_name(api_key, version, follower)
        self.follower = follower
        self.requests = metrics.requests.labels(name, str(version))
        self.total_time = metrics.total_time.labels(name)
        self.request_queue_time = metrics.request_queue_time.labels(name)
        self.response_queue_time = metrics.response_queue_time.labels(name)

    def answer_written(self, received: float, ready: float, writing: float) -> None:
        """The answer is written (server.py): its frame was read at `received`, the answer was
        ready at `ready` and its writing started at `writing` (time.perf_counter())."""
        self.response_queue_time.observe((writing - ready) * 1000)
        self.total_time.observe((time.perf_counter() - received) * 1000)


class FsyncCounts:
    """twinlog_storage_fsyncs_total, read from the engines' counter at scrape time (it is
    thread-safe: no hop to the event loop)."""

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily("twinlog_storage_fsyncs", "fsyncs the storage engines completed, by kind "
                                     "of file", labels=("file",))
        for kind, count in sorted(fsyncs().items()):
            family.add_metric((kind,), count)
        yield family
