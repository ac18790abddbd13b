"""The metrics' own logic, without a broker process (compat_tests/admin/test_metrics.py has the real one):

- errors_in finds every error code of any served response (Hypothesis, against a plain walk of
  every field);
- request_done counts requests, errors, bytes and records in (not those of refused partitions),
  bytes out to consumers apart from followers';
- /health's states over real HTTP: 503 starting, 200 ready, 503 stopping; 404 elsewhere;
- a scrape whose event loop does not answer gives up after its timeout instead of hanging;
- the replica counts and group lag a snapshot of the broker's state turns into.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import threading
import time
import urllib.error
import urllib.request
import uuid
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.errors import ErrorCode
from kio.static.primitive import Records

from broker.api.response_builder import make, nested
from broker.observability.metrics import BrokerMetrics
from broker.observability.metrics_collector import BrokerStateCollector, Snapshot, families
from broker.observability.metrics_http import MetricsEndpoint
from broker.api.response_errors import errors_in
from wire.follower_fetch_response import follower_fetch_response
from wire.protocol import SERVED_VERSIONS, RecordRegions, RequestHeader, request_class, response_class

st.register_type_strategy(Records, st.binary(max_size=8))


def every_error(entity) -> list[ErrorCode]:
    """The oracle: each field of each dataclass, whatever its type says."""
    found = []
    for f in dataclasses.fields(entity):
        v = getattr(entity, f.name)
        items = v if isinstance(v, tuple) else (v,)
        for item in items:
            if isinstance(item, ErrorCode) and item is not ErrorCode.none:
                found.append(item)
            elif dataclasses.is_dataclass(item):
                found.extend(every_error(item))
    return found


@pytest.mark.parametrize("api_key", sorted(SERVED_VERSIONS))
# StreamsGroupDescribe's answer nests topologies in members in groups: most drawn answers are past
# Hypothesis's size limit, and the few that fit are enough for this walk
@settings(max_examples=5, suppress_health_check=[HealthCheck.data_too_large])
@given(data=st.data())
def test_errors_in_finds_every_error_code(api_key, data):
    version = SERVED_VERSIONS[api_key][1]
    response = data.draw(st.from_type(response_class(api_key, version)))
    assert sorted(errors_in(response)) == sorted(every_error(response))


def _header(api_key: int, version: int) -> RequestHeader:
    return RequestHeader(api_key, version, 1, "test", True)


def _produce(topics: dict[str, dict[int, bytes]]):
    cls = request_class(0, 9)
    topic_cls, part_cls = nested(cls, "TopicProduceData"), nested(cls, "PartitionProduceData")
    return make(cls, transactional_id=None, acks=-1, timeout=None, topic_data=tuple(
        make(topic_cls, name=name, partition_data=tuple(make(part_cls, index=i, records=r) for i, r in parts.items()))
        for name, parts in topics.items()))


def _produce_answer(codes: dict[str, dict[int, str]]):
    cls = response_class(0, 9)
    topic_cls, part_cls = nested(cls, "TopicProduceResponse"), nested(cls, "PartitionProduceResponse")
    return make(cls, throttle_time=None, responses=tuple(
        make(topic_cls, name=name, partition_responses=tuple(
            make(part_cls, index=i, error_code=ErrorCode[c], base_offset=0, log_append_time=None,
                 log_start_offset=0, record_errors=(), error_message=None) for i, c in parts.items()))
        for name, parts in codes.items()))


def _batch(records: int, size: int = 100) -> bytes:
    head = bytearray(size)
    head[57:61] = records.to_bytes(4, "big")
    return bytes(head)


def _sample(metrics: BrokerMetrics, name: str, **labels) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_produce_counts_requests_errors_and_only_appended_bytes():
    metrics = BrokerMetrics()
    request = _produce({"a": {0: _batch(3), 1: _batch(5), 2: _batch(1)}, "b": {0: _batch(2, 80)}})
    answer = _produce_answer({"a": {0: "none", 1: "not_leader_or_follower", 2: "not_enough_replicas"},
                              "b": {0: "none"}})
    received = time.perf_counter()
    started = received + 0.004  # 4 ms behind the connection's earlier frames
    instruments = metrics.request_done(_header(0, 9), request, answer, started, received)
    assert _sample(metrics, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == 0
    instruments.answer_written(received, started + 0.001, started + 0.003)  # 2 ms behind earlier answers
    metrics.request_done(_header(0, 9), _produce({"a": {0: _batch(4)}}), None, time.perf_counter())  # acks=0
    assert _sample(metrics, "kafka_network_requestmetrics_requests_total", request="Produce", version="9") == 2
    assert _sample(metrics, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == 2
    assert _sample(metrics, "kafka_network_requestmetrics_requestqueuetimems_count", request="Produce") == 2
    assert 3.99 < _sample(metrics, "kafka_network_requestmetrics_requestqueuetimems_sum", request="Produce") < 4.01
    assert _sample(metrics, "kafka_network_requestmetrics_responsequeuetimems_count", request="Produce") == 1
    assert 1.99 < _sample(metrics, "kafka_network_requestmetrics_responsequeuetimems_sum", request="Produce") < 2.01
    assert _sample(metrics, "kafka_network_requestmetrics_errors_total", request="Produce",
                   error="NOT_LEADER_OR_FOLLOWER") == 1
    # Kafka's ReplicaManager expects NOT_LEADER_OR_FOLLOWER; NOT_ENOUGH_REPLICAS is a failed append
    assert _sample(metrics, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic="a") == 1
    assert _sample(metrics, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic="b") == 0
    assert _sample(metrics, "kafka_server_brokertopicmetrics_bytesin_total", topic="a") == 200
    assert _sample(metrics, "kafka_server_brokertopicmetrics_messagesin_total", topic="a") == 7
    assert _sample(metrics, "kafka_server_brokertopicmetrics_bytesin_total", topic="b") == 80
    metrics.forget_topics({"b"})
    assert _sample(metrics, "kafka_server_brokertopicmetrics_bytesin_total", topic="a") is None
    assert _sample(metrics, "kafka_server_brokertopicmetrics_bytesin_total", topic="b") == 80


def _fetch_answer(topic: str, sizes: list[int]):
    cls = response_class(1, 12)
    topic_cls, part_cls = nested(cls, "FetchableTopicResponse"), nested(cls, "PartitionData")
    return make(cls, throttle_time=None, error_code=ErrorCode.none, session_id=0, responses=(
        make(topic_cls, topic=topic, partitions=tuple(
            make(part_cls, partition_index=i, error_code=ErrorCode.none, high_watermark=0, last_stable_offset=0,
                 log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                 records=RecordRegions([b"x" * size])) for i, size in enumerate(sizes))),))


def test_failed_fetches_leave_out_the_errors_kafka_expects():
    metrics = BrokerMetrics()
    cls = response_class(1, 12)
    topic_cls, part_cls = nested(cls, "FetchableTopicResponse"), nested(cls, "PartitionData")
    answer = make(cls, throttle_time=None, error_code=ErrorCode.none, session_id=0, responses=(
        make(topic_cls, topic="t", partitions=tuple(
            make(part_cls, partition_index=i, error_code=ErrorCode[code], high_watermark=0, last_stable_offset=0,
                 log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1, records=None)
            for i, code in enumerate(["offset_out_of_range", "corrupt_message", "not_leader_or_follower"]))),))
    consumer = make(request_class(1, 12), replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                    topics=(), forgotten_topics_data=())
    metrics.request_done(_header(1, 12), consumer, answer, time.perf_counter())
    assert _sample(metrics, "kafka_server_brokertopicmetrics_failedfetchrequests_total", topic="t") == 1
    assert _sample(metrics, "kafka_network_requestmetrics_errors_total", request="FetchConsumer",
                   error="OFFSET_OUT_OF_RANGE") == 1


def test_fetch_bytes_out_apart_from_followers():
    metrics = BrokerMetrics()
    consumer, follower = (make(request_class(1, 12), replica_id=r, max_wait=datetime.timedelta(0), min_bytes=0,
                                    topics=(), forgotten_topics_data=()) for r in (-1, 2))
    metrics.request_done(_header(1, 12), consumer, _fetch_answer("t", [10, 0, 5]), time.perf_counter())
    metrics.request_done(_header(1, 12), follower, _fetch_answer("t", [7]), time.perf_counter())
    assert _sample(metrics, "kafka_server_brokertopicmetrics_bytesout_total", topic="t") == 15
    assert _sample(metrics, "kafka_server_brokertopicmetrics_replicationbytesout_total") == 7
    assert _sample(metrics, "kafka_network_requestmetrics_requests_total", request="FetchConsumer", version="12") == 1
    assert _sample(metrics, "kafka_network_requestmetrics_requests_total", request="FetchFollower", version="12") == 1


def test_a_hand_written_follower_answer_counts_as_kios_would():
    """wire/follower_fetch_response.py's body: replication bytes out, and its failed partitions."""
    metrics = BrokerMetrics()
    follower = make(request_class(1, 12), replica_id=2, max_wait=datetime.timedelta(0), min_bytes=0,
                    topics=(), forgotten_topics_data=())
    answer = follower_fetch_response(0, [("t", [(0, ErrorCode.none, 3, 3, 0, [b"x" * 7]),
                                                (1, ErrorCode.corrupt_message, -1, -1, -1, [])])])
    metrics.request_done(_header(1, 12), follower, answer, time.perf_counter())
    assert _sample(metrics, "kafka_server_brokertopicmetrics_replicationbytesout_total") == 7
    assert _sample(metrics, "kafka_server_brokertopicmetrics_failedfetchrequests_total", topic="t") == 1
    assert _sample(metrics, "kafka_network_requestmetrics_errors_total", request="FetchFollower",
                   error="CORRUPT_MESSAGE") == 1


def test_topics_named_by_id_count_under_their_names():
    """Produce v13 and Fetch v13+ carry topic ids only; the series stay per topic name, and an
    id no topic has (any more) counts nowhere rather than failing the request's accounting."""
    metrics = BrokerMetrics()
    known, gone = uuid.uuid4(), uuid.uuid4()
    metrics.topics_by_id = {known: SimpleNamespace(name="t")}
    produce = request_class(0, 13)
    topic_cls, part_cls = nested(produce, "TopicProduceData"), nested(produce, "PartitionProduceData")
    request = make(produce, transactional_id=None, acks=-1, timeout=None, topic_data=tuple(
        make(topic_cls, topic_id=topic_id, partition_data=(make(part_cls, index=0, records=_batch(3)),))
        for topic_id in (known, gone)))
    metrics.request_done(_header(0, 13), request, None, time.perf_counter())
    assert _sample(metrics, "kafka_server_brokertopicmetrics_messagesin_total", topic="t") == 3

    fetch = response_class(1, 17)
    topic_cls, part_cls = nested(fetch, "FetchableTopicResponse"), nested(fetch, "PartitionData")
    answer = make(fetch, throttle_time=None, error_code=ErrorCode.none, session_id=0, responses=tuple(
        make(topic_cls, topic_id=topic_id, partitions=(
            make(part_cls, partition_index=0, error_code=ErrorCode.none, high_watermark=0, aborted_transactions=None,
                 records=RecordRegions([b"x" * 9])),)) for topic_id in (known, gone)))
    follower = make(request_class(1, 17), replica_state=nested(request_class(1, 17), "ReplicaState")(replica_id=2),
                    max_wait=datetime.timedelta(0), min_bytes=0, topics=(), forgotten_topics_data=())
    consumer = make(request_class(1, 17), max_wait=datetime.timedelta(0), min_bytes=0, topics=(),
                    forgotten_topics_data=())
    metrics.request_done(_header(1, 17), consumer, answer, time.perf_counter())
    metrics.request_done(_header(1, 17), follower, answer, time.perf_counter())
    assert _sample(metrics, "kafka_server_brokertopicmetrics_bytesout_total", topic="t") == 9
    assert _sample(metrics, "kafka_server_brokertopicmetrics_replicationbytesout_total") == 18
    assert _sample(metrics, "kafka_network_requestmetrics_requests_total", request="FetchFollower", version="17") == 1


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_health_follows_the_broker_states_over_http():
    endpoint = MetricsEndpoint("127.0.0.1", 0, console_sample_interval_ms=1000)
    try:
        assert _get(endpoint.port, "/health") == (503, "starting\n")
        endpoint.ready()
        assert _get(endpoint.port, "/health") == (200, "ok\n")
        status, text = _get(endpoint.port, "/metrics")
        assert status == 200 and "twinlog_startup_seconds" in text
        assert _get(endpoint.port, "/nothing")[0] == 404
        status, text = _get(endpoint.port, "/")  # the console; metrics only on /metrics
        assert status == 200 and "<title>twinlog console</title>" in text
        endpoint.stopping()
        assert _get(endpoint.port, "/health") == (503, "stopping\n")
    finally:
        endpoint.close()


def test_metrics_off_serves_nothing():
    endpoint = MetricsEndpoint("127.0.0.1", None, console_sample_interval_ms=1000)
    assert endpoint.port is None and endpoint.metrics is None
    endpoint.ready()
    endpoint.close()


async def _empty_snapshot() -> Snapshot:
    return Snapshot()


def test_a_scrape_gives_up_on_a_loop_that_does_not_answer():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        loop.call_soon_threadsafe(time.sleep, 0.6)  # the loop is busy for 0.6 s
        collector = BrokerStateCollector(_empty_snapshot, loop, timeout_s=0.2)  # families, were it in time
        started = time.monotonic()
        assert list(collector.collect()) == []
        assert time.monotonic() - started < 0.8
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_replica_counts_of_a_snapshot():
    snap = Snapshot(partitions=[
        # topic, partition, leo, hw, log start, size, leader here, isr, replicas, min isr
        ("t", 0, 10, 8, 2, 500, True, 2, 3, 2),   # led here, one replica out: under-replicated
        ("t", 1, 10, 10, 0, 600, True, 1, 3, 2),  # and below min.insync.replicas
        ("t", 2, 10, 10, 0, 600, False, 1, 3, 2),  # a follower here: its leader counts it
        ("u", 0, 4, 4, 0, 90, True, 3, 3, 2),
    ], offsets=[("g", "t", 0, 5, 8), ("g", "gone", 0, 3, None)], is_controller=False)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families(snap) for s in f.samples}
    assert samples[("kafka_server_replicamanager_partitioncount", ())] == 4
    assert samples[("kafka_server_replicamanager_leadercount", ())] == 3
    assert samples[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 2
    assert samples[("kafka_server_replicamanager_underminisrpartitioncount", ())] == 1
    assert samples[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 0
    assert samples[("kafka_cluster_partition_underreplicated", (("partition", "2"), ("topic", "t")))] == 0
    assert samples[("twinlog_partition_highwatermark", (("partition", "0"), ("topic", "t")))] == 8
    lag = [(labels, v) for (name, labels), v in samples.items() if name == "kafka_consumergroup_lag"]
    assert lag == [((("consumergroup", "g"), ("partition", "0"), ("topic", "t")), 3)]  # none for an unhosted one
