"""The share groups as the share-group APIs see them (broker/api/share_group_service.py's
ShareGroupService): one object in front of what a ShareGroupHeartbeat, ShareFetch,
ShareAcknowledge or share-group offsets request reaches, so a handler asks one service instead of
choosing among the share coordinator (share_coordinator.py), its share-partitions
(share_partitions.py) and sessions (share_sessions.py), the offsets admin (share_group_admin.py)
and the group coordinator's placement. Each call is the owner's own; nothing here decides anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable
from typing import Callable

from replica.readable_partition import ReadablePartition
from wire.error_codes import ErrorCode

from broker.groups.share.share_coordinator import ShareGroupCoordinator, ShareHeartbeatResult
from broker.groups.share.share_group import ShareGroup
from broker.groups.share.share_group_admin import Refused, ShareGroupAdmin, TopicResult
from broker.groups.share.share_partition import SharePartition
from broker.groups.share.share_partitions import Acquired, Key
from broker.groups.share.share_sessions import ShareSession
from broker.settings.group_configs import GroupShareConfig


class ShareGroups:
    def __init__(self, coordinator: ShareGroupCoordinator, admin: ShareGroupAdmin,
                 coordinator_error: Callable[[str], ErrorCode | None],
                 other_group_kind: Callable[[str], str | None]) -> None:
        """`coordinator_error(group_id)`: NOT_COORDINATOR when another broker coordinates the
        group; `other_group_kind(group_id)`: the kind of the other group holding the id, if any."""
        self._coordinator = coordinator
        self._admin = admin
        self.coordinator_error = coordinator_error
        self.other_group_kind = other_group_kind

    def group(self, group_id: str) -> ShareGroup | None:
        return self._coordinator.groups.get(group_id)

    def config_of(self, group_id: str) -> GroupShareConfig:
        return self._coordinator.partitions.config_of(group_id)

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int, subscribed: tuple[str, ...] | None,
                        rack_id: str | None, client_id: str, client_host: str) -> ShareHeartbeatResult:
        return await self._coordinator.heartbeat(group_id, member_id, member_epoch, subscribed, rack_id, client_id,
                                                 client_host)

    def is_unknown_member(self, group_id: str, member_id: str) -> bool:
        return self._coordinator.is_unknown_member(group_id, member_id)

    def session_for_fetch(self, group_id: str, member_id: str, epoch: int,
                          connection: Hashable | None) -> ShareSession:
        return self._coordinator.sessions.for_fetch(group_id, member_id, epoch, connection)

    def session_for_acknowledge(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        return self._coordinator.sessions.for_acknowledge(group_id, member_id, epoch)

    async def close_session(self, session: ShareSession) -> None:
        group_id, member_id = session.group_id, session.member_id
        self._coordinator.sessions.close(group_id, member_id)
        await self._coordinator.release(group_id, member_id, {(group_id, tid, i) for tid, i in session.partitions})

    async def load(self, key: Key, partition: ReadablePartition) -> SharePartition:
        return await self._coordinator.partitions.load(key, partition)

    def acquire(self, key: Key, partition: ReadablePartition, member: str, max_records: int, max_bytes: int,
                now_ms: int, record_limit: bool) -> Acquired:
        return self._coordinator.partitions.acquire(key, partition, member, max_records, max_bytes, now_ms,
                                                    record_limit)

    async def acknowledge(self, key: Key, partition: ReadablePartition, member: str,
                          batches: list[tuple[int, int, tuple[int, ...]]], now_ms: int) -> tuple[ErrorCode, str | None]:
        return await self._coordinator.partitions.acknowledge(key, partition, member, batches, now_ms)

    async def persist(self, key: Key) -> None:
        await self._coordinator.partitions.persist(key)

    def next_deadline_ms(self, keys: Iterable[Key]) -> int | None:
        return self._coordinator.partitions.next_deadline_ms(keys)

    def add_waiter(self, fut: asyncio.Future[None]) -> None:
        self._coordinator.partitions.add_waiter(fut)

    def discard_waiter(self, fut: asyncio.Future[None]) -> None:
        self._coordinator.partitions.discard_waiter(fut)

    async def describe_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]] | None) -> list[TopicResult]:
        return await self._admin.describe(group_id, wanted)

    async def alter_offsets(self, group_id: str,
                            wanted: list[tuple[str, list[tuple[int, int]]]]) -> Refused | list[TopicResult]:
        return await self._admin.alter(group_id, wanted)

    async def delete_offsets(self, group_id: str, names: list[str]) -> Refused | list[TopicResult]:
        return await self._admin.delete_offsets(group_id, names)
