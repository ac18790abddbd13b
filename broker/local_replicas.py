"""This broker's replicas as the data-path handlers reach them (broker/api/replica_service.py's
ReplicaService): one object routing each call to what does the work, as Kafka's KafkaApis calls
its ReplicaManager. Each call is one attribute lookup and one call more than the handler made
before: nothing per record or per partition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from replica.future_replica import FutureReplica
from replica.write_path import PendingWrites, RecordsWrite, WritePath
from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader

from broker.fetch_sessions import FetchContext, FetchSessionCache, PartitionKey
from broker.quotas.enforcement import consumer_fetch, consumer_fetch_limit
from broker.quotas.manager import ClientQuotaManager
from broker.settings.cordoned_log_dirs import CONFIG as CORDONED_LOG_DIRS, cordoned_modes
from broker.storage.log_dir_move import LogDirMoves
from broker.topic import Topic

TopicPartition = tuple[str, int]
# The dynamic broker configs in force: this broker's id's, the cluster default's (RuntimeConfigs.broker_config_layers).
ConfigLayers = Callable[[], tuple[dict[str, str], dict[str, str]]]


class LocalReplicas:
    def __init__(self, config_layers: ConfigLayers, write_path: WritePath,
                 fetch_sessions: FetchSessionCache, quotas: ClientQuotaManager,
                 log_dir_moves: LogDirMoves) -> None:
        self._config_layers = config_layers
        self._write_path = write_path
        self._fetch_sessions = fetch_sessions
        self._quotas = quotas
        self._moves = log_dir_moves

    async def append(self, writes: Sequence[RecordsWrite], acks: int) -> PendingWrites:
        return await self._write_path.append(writes, acks)

    def fetch_context(self, request: Any, replica_id: int, requested: dict[PartitionKey, object],
                      forgotten: list[PartitionKey]) -> FetchContext | ErrorCode:
        return self._fetch_sessions.context(request, replica_id, requested, forgotten)

    def consumer_fetch_limit(self, header: RequestHeader) -> int | None:
        return consumer_fetch_limit(self._quotas, header)

    def consumer_fetch_throttle(self, header: RequestHeader, response_bytes: int) -> int:
        return consumer_fetch(self._quotas, header, response_bytes)

    def log_dirs(self) -> dict[str, Path]:
        return self._moves.dirs()

    def cordoned_log_dirs(self) -> set[str]:
        own, _ = self._config_layers()
        return cordoned_modes(own.get(CORDONED_LOG_DIRS), self._moves.dirs())

    def log_dir_mode(self, path: str) -> str | None:
        return self._moves.mode_of_dir(path)

    def future_replica(self, topic: str, index: int) -> FutureReplica | None:
        return self._moves.future(topic, index)

    def move_replica(self, topic: Topic, index: int, mode: str) -> None:
        self._moves.request(topic, index, mode)
