"""The options of Spark's Kafka connector (spark-sql-kafka-0-10), parsed and checked the way it does.

Spark hands a data source its options as a case-insensitive map of strings. This module turns
them into plain values once, on the driver, so that everything shipped to executors is already
validated:

    which partitions   subscribe | subscribePattern | assign          (exactly one)
    where to start     startingTimestamp > startingOffsetsByTimestamp > startingOffsets
    where to stop      endingTimestamp > endingOffsetsByTimestamp > endingOffsets  (batch only)
    how much per batch maxOffsetsPerTrigger, minOffsetsPerTrigger + maxTriggerDelay (streaming only)
    how to split       minPartitions, maxRecordsPerPartition
    driver retries     fetchOffset.numRetries, fetchOffset.retryIntervalMs
    row shape          includeHeaders
    on lost data       failOnDataLoss
    client settings    kafka.<name>  ->  <name> for the Kafka client (see client_config.py)

Offset specs keep the connector's JSON conventions: `{"topic":{"0":23,"1":-2}}` where -2 means
earliest and -1 latest, and a timestamp map `{"topic":{"0":1700000000000}}` in milliseconds.
Error messages name the option the way a connector user wrote it. An option neither the
connector nor this source knows (a typo like `bogusOption`) is refused by name: the connector
ignores it silently, which hides typos such as `startingOffset`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Mapping

EARLIEST = -2
LATEST = -1

# Options the connector rejects because it manages them itself (KafkaSourceProvider).
_REJECTED_KAFKA_PARAMS = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "key.deserializer": "keys are always read as bytes; cast them in the query",
    "value.deserializer": "values are always read as bytes; cast them in the query",
    "key.serializer": "keys are written as bytes or strings; cast them in the query",
    "value.serializer": "values are written as bytes or strings; cast them in the query",
    "enable.auto.commit": "offsets are tracked by Spark's checkpoint, never committed to Kafka",
    "interceptor.classes": "interceptors are not supported by the Kafka source",
}


# Every source option of the connector (KafkaSourceProvider), lower-cased as Spark passes them.
_KNOWN_SOURCE_OPTIONS = {o.lower() for o in (
    "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets", "startingTimestamp",
    "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "failOnDataLoss", "minPartitions", "maxRecordsPerPartition",
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs", "kafkaConsumer.pollTimeoutMs", "includeHeaders", "groupIdPrefix")}
_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


class OptionError(ValueError):
    """An option a Kafka-connector user could have written wrong: the message says which."""


@dataclass(frozen=True)
class TopicSelection:
    """Exactly one of the three ways the connector picks partitions."""

    subscribe: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str) -> bool:
        if self.subscribe:
            return topic in self.subscribe
        if self.pattern is not None:
            # Kafka's pattern subscription skips internal topics (exclude.internal.topics=true).
            return not topic.startswith("__") and re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.assign)


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: 'earliest', 'latest', per-partition offsets or timestamps.

    kind is one of "earliest", "latest", "offsets" (per_partition holds offsets, -2/-1 allowed),
    "timestamps" (per_partition holds ms timestamps) or "timestamp" (one ms value for all).
    """

    kind: str
    per_partition: Mapping[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class SourceOptions:
    topics: TopicSelection
    starting: OffsetSpec
    ending: OffsetSpec
    starting_by_timestamp_strategy: str  # "error" | "latest"
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    max_records_per_partition: int | None
    fetch_offset_retries: int
    fetch_offset_retry_interval_ms: int
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    group_id: str | None
    group_id_prefix: str
    kafka_params: Mapping[str, str]


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"option '{name}' must be true or false, got {raw!r}")
    return value == "true"


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise OptionError(f"option '{name}' must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise OptionError(f"option '{name}' must be a positive integer, got {raw!r}")
    return value


def _non_negative_int(options: Mapping[str, str], name: str, default: int) -> int:
    raw = options.get(name.lower())
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise OptionError(f"option '{name}' must be a non-negative integer, got {raw!r}")
    return value


def _duration_ms(options: Mapping[str, str], name: str, default: str) -> int:
    """Spark's time strings (JavaUtils.timeStringAsMs): "15m", "10s", "500ms", a bare number is ms."""
    raw = str(options.get(name.lower(), default)).strip().lower()
    match = re.fullmatch(r"(\d+)\s*([a-z]*)", raw)
    if match is None or match.group(2) not in ("", *_DURATION_UNITS_MS):
        raise OptionError(f"option '{name}' must be a duration such as 15m, 30s or 500ms, got {raw!r}")
    return int(match.group(1)) * _DURATION_UNITS_MS.get(match.group(2) or "ms", 1)


def check_known(options: Mapping[str, str]) -> None:
    """Refuse an option that neither the connector nor this source reads, naming it."""
    unknown = sorted(k for k in options if not k.lower().startswith("kafka.") and k.lower() not in _KNOWN_SOURCE_OPTIONS)
    if unknown:
        raise OptionError(f"unknown option(s) {unknown} for the twinlog (Kafka) source; its options are "
                          f"{sorted(_KNOWN_SOURCE_OPTIONS)} and kafka.<client setting>")


def kafka_params(options: Mapping[str, str]) -> dict[str, str]:
    """`kafka.<name>` options with the prefix removed, refusing the ones the connector refuses."""
    params = {}
    for key, value in options.items():
        if not key.lower().startswith("kafka."):
            continue
        name = key[len("kafka."):].lower()
        if name in _REJECTED_KAFKA_PARAMS:
            raise OptionError(f"Kafka option 'kafka.{name}' is not supported: {_REJECTED_KAFKA_PARAMS[name]}")
        params[name] = str(value)
    return params


def parse_topics(options: Mapping[str, str]) -> TopicSelection:
    given = [name for name in ("subscribe", "subscribePattern", "assign") if options.get(name.lower())]
    if len(given) != 1:
        raise OptionError("exactly one of the options 'subscribe', 'subscribePattern' or 'assign' "
                          f"must be given, got {given or 'none'}")
    which = given[0]
    raw = str(options[which.lower()]).strip()
    if which == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError(f"no topics to subscribe to in 'subscribe' = {raw!r}")
        return TopicSelection(subscribe=topics)
    if which == "subscribePattern":
        try:
            re.compile(raw)
        except re.error as e:
            raise OptionError(f"option 'subscribePattern' is not a valid pattern: {e}") from None
        return TopicSelection(pattern=raw)
    parsed = _json_object(raw, "assign")
    pairs = []
    for topic, parts in parsed.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) for p in parts):
            raise OptionError(f"option 'assign' must look like {{\"topicA\":[0,1]}}, got {raw!r}")
        pairs += [(topic, p) for p in parts]
    if not pairs:
        raise OptionError(f"option 'assign' names no partitions: {raw!r}")
    return TopicSelection(assign=tuple(sorted(set(pairs))))


def _json_object(raw: str, name: str) -> dict:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise OptionError(f"option '{name}' must be a JSON object, got {raw!r}")
    return parsed


def _per_partition(raw: str, name: str) -> dict[tuple[str, int], int]:
    out = {}
    for topic, parts in _json_object(raw, name).items():
        if not isinstance(parts, dict):
            raise OptionError(f"option '{name}' must look like {{\"topic\":{{\"0\":23}}}}, got {raw!r}")
        for part, value in parts.items():
            try:
                out[(topic, int(part))] = int(value)
            except (TypeError, ValueError):
                raise OptionError(f"option '{name}': partition {part!r} / value {value!r} of "
                                  f"{topic!r} are not integers") from None
    return out


def parse_offset_spec(options: Mapping[str, str], side: str, default: str) -> OffsetSpec:
    """side is "starting" or "ending"; the timestamp options take precedence as in the connector."""
    ts = options.get(f"{side}Timestamp".lower())
    if ts is not None:
        try:
            return OffsetSpec("timestamp", timestamp=int(str(ts).strip()))
        except ValueError:
            raise OptionError(f"option '{side}Timestamp' must be milliseconds since the epoch, got {ts!r}") from None
    by_ts = options.get(f"{side}OffsetsByTimestamp".lower())
    if by_ts is not None:
        return OffsetSpec("timestamps", per_partition=_per_partition(str(by_ts), f"{side}OffsetsByTimestamp"))
    raw = str(options.get(f"{side}Offsets".lower(), default)).strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetSpec(raw.lower())
    return OffsetSpec("offsets", per_partition=_per_partition(raw, f"{side}Offsets"))


def _check_batch_bounds(starting: OffsetSpec, ending: OffsetSpec) -> None:
    # The connector's batch checks: a range must not start at "latest" or end at "earliest".
    if starting.kind == "latest" or (starting.kind == "offsets" and LATEST in starting.per_partition.values()):
        raise OptionError("starting offset can't be latest for batch queries on Kafka")
    if ending.kind == "earliest" or (ending.kind == "offsets" and EARLIEST in ending.per_partition.values()):
        raise OptionError("ending offset can't be earliest for batch queries on Kafka")


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    check_known(options)
    topics = parse_topics(options)
    starting = parse_offset_spec(options, "starting", "latest" if streaming else "earliest")
    if streaming:
        for name in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp"):
            if options.get(name.lower()) is not None:
                raise OptionError(f"option '{name}' is not supported for streaming queries")
        ending = OffsetSpec("latest")
    else:
        ending = parse_offset_spec(options, "ending", "latest")
        _check_batch_bounds(starting, ending)  # maxOffsetsPerTrigger: ignored in batch, as by the connector
    strategy = str(options.get("startingoffsetsbytimestampstrategy", "error")).strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"option 'startingOffsetsByTimestampStrategy' must be error or latest, got {strategy!r}")
    poll = _positive_int(options, "kafkaConsumer.pollTimeoutMs") or 120_000
    params = kafka_params(options)
    return SourceOptions(
        topics=topics,
        starting=starting,
        ending=ending,
        starting_by_timestamp_strategy=strategy,
        max_offsets_per_trigger=_positive_int(options, "maxOffsetsPerTrigger") if streaming else None,
        min_offsets_per_trigger=_positive_int(options, "minOffsetsPerTrigger") if streaming else None,
        max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", "15m"),
        min_partitions=_positive_int(options, "minPartitions"),
        max_records_per_partition=_positive_int(options, "maxRecordsPerPartition"),
        fetch_offset_retries=_non_negative_int(options, "fetchOffset.numRetries", 3),
        fetch_offset_retry_interval_ms=_non_negative_int(options, "fetchOffset.retryIntervalMs", 1000),
        include_headers=_bool(options, "includeHeaders", False),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        poll_timeout_ms=poll,
        group_id=params.pop("group.id", None),
        group_id_prefix=str(options.get("groupidprefix", "spark-kafka-source" if streaming else "spark-kafka-relation")),
        kafka_params=params,
    )


def bootstrap_servers(options: Mapping[str, str]) -> str:
    servers = options.get("kafka.bootstrap.servers")
    if not servers:
        raise OptionError("option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    return str(servers)
