"""cordoned.log.dirs (KIP-1066, Kafka 4.3): a broker's dynamic config naming the log dirs of its
own that take no new partitions, `*` for all of them. Kafka lists it among the dynamic log
configs (DynamicLogConfig) and as per broker: it is set on a broker id, never on the cluster
default (dynamic_broker_configs.py PER_BROKER refuses that).

A broker's log dirs here are one per storage layout (DescribeLogDirs lists both: the data dir
and its commitlog-store/), so an entry must be one of those two paths, as DescribeLogDirs names
them (absolute; a path that resolves to one of them is taken too). Otherwise the change is
refused with Kafka's message (DynamicLogConfig.validateCordonedLogDirs). What cordoning does here,
as in Kafka:

- DescribeLogDirs v5 answers is_cordoned true for a cordoned dir;
- AlterReplicaLogDirs into a cordoned dir is INVALID_REPLICA_ASSIGNMENT;
- a broker whose dirs are all cordoned gets no replica of a new topic or partition from Kafka's
  placement (explicit assignments may still name it, as Kafka 4.3.1 lets them); with no broker
  left, CreateTopics and CreatePartitions answer INVALID_REPLICATION_FACTOR.

Replicas already in a cordoned dir stay and are served; cordoning only keeps new ones out. A
static cordoned.log.dirs in a server.properties is not read (twinlog skips keys it does not know).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from wire.error_codes import ErrorCode
from broker.settings.topic_config_changes import ConfigChangeError

CONFIG = "cordoned.log.dirs"
ALL = "*"
DIRS_PER_BROKER = 2  # one per storage layout: every broker has both


def _entries(value: str | None) -> list[str]:
    return [e.strip() for e in (value or "").split(",") if e.strip()]


def _match(entry: str, log_dirs: Mapping[str, Path]) -> str | None:
    path = Path(entry).resolve()
    return next((mode for mode, d in log_dirs.items() if d == path), None)


def check(value: str, log_dirs: Mapping[str, Path]) -> None:
    """Raise ConfigChangeError (INVALID_REQUEST) unless every entry is `*` or one of `log_dirs`
    (storage mode -> its dir, resolved)."""
    entries = _entries(value)
    for entry in entries:
        if entry != ALL and _match(entry, log_dirs) is None:
            shown = "[" + ", ".join(entries) + "]"  # Java's List.toString
            raise ConfigChangeError(ErrorCode.invalid_request, f"Invalid value {shown} for configuration {CONFIG}: Invalid "
                                    f"entry in {CONFIG}: {entry}. All cordoned log dirs must be entries of log.dirs "
                                    "or log.dir.")


def cordoned_modes(value: str | None, log_dirs: Mapping[str, Path]) -> set[str]:
    """The storage modes whose log dir `value` cordons."""
    entries = _entries(value)
    if ALL in entries:
        return set(log_dirs)
    return {mode for mode in (_match(e, log_dirs) for e in entries) if mode is not None}


def fully_cordoned(configs: Mapping[str, str]) -> bool:
    """Whether a broker's dynamic configs cordon all its log dirs: `*`, or both of them (check
    allowed no other entries). Read by placement on any broker, which does not know the other
    brokers' paths."""
    entries = set(_entries(configs.get(CONFIG)))
    return ALL in entries or len(entries) >= DIRS_PER_BROKER
