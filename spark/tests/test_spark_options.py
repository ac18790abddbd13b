"""Option parsing and offset arithmetic of the twinlog source, without Spark or a broker."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from spark.metadata import retriable
from spark.client_config import consumer_config, producer_config
from spark.offsets import KafkaOffsetRange, from_json_dict, offset_ranges, rate_limit, split_ranges, to_json_dict
from spark.options import EARLIEST, LATEST, OptionError, parse_source_options


def _opts(**kw):
    return {k.lower(): v for k, v in kw.items()}


def test_exactly_one_topic_selection():
    with pytest.raises(OptionError, match="exactly one"):
        parse_source_options(_opts(), streaming=True)
    with pytest.raises(OptionError, match="exactly one"):
        parse_source_options(_opts(subscribe="a", assign='{"a":[0]}'), streaming=True)
    assert parse_source_options(_opts(assign='{"a":[1,0]}'), streaming=True).topics.assign == (("a", 0), ("a", 1))
    sel = parse_source_options(_opts(subscribePattern="orders-.*"), streaming=True).topics
    assert sel.matches("orders-eu") and not sel.matches("__consumer_offsets") and not sel.matches("x-orders-eu")


def test_offset_specs_and_defaults():
    stream = parse_source_options(_opts(subscribe="a"), streaming=True)
    batch = parse_source_options(_opts(subscribe="a"), streaming=False)
    assert (stream.starting.kind, batch.starting.kind, batch.ending.kind) == ("latest", "earliest", "latest")
    spec = parse_source_options(_opts(subscribe="a", startingOffsets='{"a":{"0":23,"1":-2}}'), True).starting
    assert spec.per_partition == {("a", 0): 23, ("a", 1): EARLIEST}
    ts = parse_source_options(_opts(subscribe="a", startingTimestamp="1000",
                                    startingOffsets="earliest"), True).starting
    assert (ts.kind, ts.timestamp) == ("timestamp", 1000)  # startingTimestamp wins, as in the connector
    with pytest.raises(OptionError, match="can't be latest"):
        parse_source_options(_opts(subscribe="a", startingOffsets=f'{{"a":{{"0":{LATEST}}}}}'), False)
    with pytest.raises(OptionError, match="can't be earliest"):
        parse_source_options(_opts(subscribe="a", endingOffsets="earliest"), False)
    with pytest.raises(OptionError, match="not supported for streaming"):
        parse_source_options(_opts(subscribe="a", endingOffsets="latest"), True)


def test_kafka_params_pass_through():
    opts = parse_source_options(_opts(**{"subscribe": "a", "kafka.bootstrap.servers": "h:1",
                                         "kafka.fetch.max.wait.ms": "50", "kafka.max.poll.records": "10",
                                         "kafka.group.id": "mine"}), True)
    assert opts.group_id == "mine"
    config = consumer_config("h:1", opts.kafka_params, "mine")
    assert config["fetch.wait.max.ms"] == "50" and "max.poll.records" not in config
    assert config["isolation.level"] == "read_uncommitted" and config["enable.auto.commit"] is False
    with pytest.raises(OptionError, match="startingOffsets"):
        parse_source_options(_opts(**{"subscribe": "a", "kafka.auto.offset.reset": "earliest"}), True)
    assert producer_config("h:1", {})["enable.idempotence"] is True
    assert producer_config("h:1", {})["acks"] == "all"


def test_isolation_level_is_checked_and_defaults_to_read_uncommitted():
    assert consumer_config("h:1", {}, "g")["isolation.level"] == "read_uncommitted"
    assert consumer_config("h:1", {"isolation.level": "read_committed"}, "g")["isolation.level"] == "read_committed"
    with pytest.raises(OptionError, match="isolation.level"):
        consumer_config("h:1", {"isolation.level": "committed"}, "g")


def test_offsets_json_shape_round_trips():
    offsets = {("b", 1): 7, ("a", 10): 3, ("a", 2): 5}
    assert to_json_dict(offsets) == {"a": {"2": 5, "10": 3}, "b": {"1": 7}}
    assert from_json_dict(to_json_dict(offsets)) == offsets


def test_ranges_skip_empty_and_new_partitions_start_earliest():
    ranges = offset_ranges({("a", 0): 5, ("a", 1): 9}, {("a", 0): 8, ("a", 1): 9, ("a", 2): 4})
    assert ranges == [KafkaOffsetRange("a", 0, 5, 8), KafkaOffsetRange("a", 2, -2, 4)]


def test_rate_limit_is_the_connectors():
    start = {("a", 0): 0, ("a", 1): 0}
    assert rate_limit(8, start, {("a", 0): 15, ("a", 1): 5}) == {("a", 0): 6, ("a", 1): 2}
    # A share below one record rounds up, so a small partition is never starved.
    assert rate_limit(10, start, {("a", 0): 1000, ("a", 1): 1}) == {("a", 0): 9, ("a", 1): 1}
    assert rate_limit(100, start, {("a", 0): 15, ("a", 1): 5}) == {("a", 0): 15, ("a", 1): 5}
    assert rate_limit(4, {}, {("a", 0): 10}, {("a", 0): 6}) == {("a", 0): 10}


def test_unknown_option_is_refused_by_name():
    with pytest.raises(OptionError, match="bogusOption"):
        parse_source_options({"subscribe": "a", "bogusOption": "1"}, streaming=True)
    with pytest.raises(OptionError, match="startingoffset'"):  # a typo of startingOffsets
        parse_source_options(_opts(subscribe="a", startingOffset="earliest"), streaming=False)
    parse_source_options(_opts(**{"subscribe": "a", "minPartitions": "4", "maxRecordsPerPartition": "10",
                                  "minOffsetsPerTrigger": "5", "maxTriggerDelay": "30s",
                                  "fetchOffset.numRetries": "0", "fetchOffset.retryIntervalMs": "10",
                                  "kafka.anything.goes": "x"}), streaming=True)


def test_new_options_parse_like_the_connector():
    opts = parse_source_options(_opts(subscribe="a", minOffsetsPerTrigger="5", maxTriggerDelay="2m",
                                      minPartitions="3", maxRecordsPerPartition="7"), streaming=True)
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (5, 120_000)
    assert (opts.min_partitions, opts.max_records_per_partition) == (3, 7)
    defaults = parse_source_options(_opts(subscribe="a"), streaming=True)
    assert (defaults.max_trigger_delay_ms, defaults.fetch_offset_retries, defaults.fetch_offset_retry_interval_ms) \
        == (900_000, 3, 1000)  # the connector's 15m, 3 retries, 1000 ms
    for bad in ({"maxTriggerDelay": "soon"}, {"minPartitions": "0"}, {"fetchOffset.numRetries": "-1"}):
        with pytest.raises(OptionError, match=list(bad)[0]):
            parse_source_options(_opts(subscribe="a", **bad), streaming=True)


def test_split_ranges_is_the_connectors_range_calculator():
    a0, a1 = KafkaOffsetRange("a", 0, 0, 100), KafkaOffsetRange("a", 1, 10, 20)
    assert split_ranges([a0, a1], None, None) == [a0, a1]
    assert split_ranges([a0, a1], 2, None) == [a0, a1]  # already enough partitions
    # minPartitions=4: a0 has 100 of 110 records -> round(3.6)=4 pieces, a1 round(0.36)->1.
    assert split_ranges([a0, a1], 4, None) == [KafkaOffsetRange("a", 0, 0, 25), KafkaOffsetRange("a", 0, 25, 50),
                                               KafkaOffsetRange("a", 0, 50, 75), KafkaOffsetRange("a", 0, 75, 100),
                                               a1]
    # maxRecordsPerPartition=40: ceil(100/40)=3 pieces of a0, a1 whole.
    assert split_ranges([a0, a1], None, 40) == [KafkaOffsetRange("a", 0, 0, 33), KafkaOffsetRange("a", 0, 33, 66),
                                                KafkaOffsetRange("a", 0, 66, 100), a1]
    unresolved = KafkaOffsetRange("a", 2, -2, 50)  # a new partition's start is resolved on the executor
    assert split_ranges([unresolved], 8, 5) == [unresolved]


def test_min_offsets_per_trigger_waits_at_most_max_trigger_delay(monkeypatch):
    from spark import stream_reader

    now = [1000.0]  # the reader's clock, moved by the test: a busy machine's pauses do not count
    monkeypatch.setattr(stream_reader, "time", SimpleNamespace(monotonic=lambda: now[0]))
    reader = stream_reader.KafkaStreamReader(parse_source_options(
        _opts(subscribe="a", minOffsetsPerTrigger="10", maxTriggerDelay="300ms"), streaming=True), "h:1")
    begin = {("a", 0): 0, ("a", 1): 0}
    assert reader._delay_batch(begin, {("a", 0): 4, ("a", 1): 5})  # 9 < 10: wait
    assert not reader._delay_batch(begin, {("a", 0): 4, ("a", 1): 6})  # 10: go
    now[0] += 0.299
    assert reader._delay_batch(begin, {("a", 0): 1, ("a", 1): 0})
    now[0] += 0.002
    assert not reader._delay_batch(begin, {("a", 0): 1, ("a", 1): 0})  # maxTriggerDelay passed: go anyway


def test_a_partition_without_a_leader_is_retried_and_an_authorization_error_is_not():
    no_leader = KafkaException(KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found"))
    denied = KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied"))
    assert retriable(no_leader)
    assert not retriable(denied)
