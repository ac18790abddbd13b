"""Committed offsets, as one class (GroupOffsets): OffsetCommit and TxnOffsetCommit's checks
and writes, OffsetFetch, OffsetDelete, DeleteGroups' tombstones, and the transaction markers
that end a transaction's pending offsets (pending_offsets.py). Rebuilding them from the log is
offsets_replay.py's.

OffsetCommit, OffsetDelete and DeleteGroups are operations of the group's `__consumer_offsets`
partition in the coordinator runtime (offset_ops.py has their rules; group_loading.py's shard
hands them there): handled in the partition's turn, their records replayed into the groups and
written through the write path, and answered once written, so what a client was told is
committed is what a restarted broker, or the next leader of the partition, replays. A write
that fails answers every entry the coordinator's error (Kafka's new coordinator's mapping,
internal_topic_log.coordinator_error), and the groups and offsets its records changed are put
back as the log holds them (offset_ops.py).
A transaction's offsets have their own rules (txn_offsets.py): they are a transactional write of
the runtime, in the same queue, their records the producer's transactional batch of their own,
so a fenced producer's refusal answers that commit alone.

Committed offsets live in the classic group object of the group's id, whatever the group's
protocol (a consumer-protocol or streams group checks its own members, then calls `write` or
`txn_write`); the group objects are the GroupCoordinator's, read through its public `groups`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Awaitable, Callable, cast

from wire.error_codes import ErrorCode
from broker.api.topic_lookup import TopicLookup
from broker.coordinator.runtime import CoordinatorError, TxnWrite
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import OffsetsStore
from broker.groups.committed_offset import CommittedOffset
from broker.groups.offset_ops import (Commit, DeleteGroup, Deleted, DeleteOffsets, OffsetOp, WriteOffsets,
                                      offsets_to_commit)
from broker.groups.offset_ops import OffsetToCommit as OffsetToCommit  # what the handlers build
from broker.groups.txn_offsets import TransactionEnrolment, TxnCommit, enrol, txn_commit_error

log = logging.getLogger(__name__)

Fetched = list[tuple[str, list[tuple[int, CommittedOffset | None, ErrorCode]]]]
Submit = Callable[[str, OffsetOp], Awaitable[object]]  # GroupLoading.submit: the group's partition's answer
SubmitTxn = Callable[[str, TxnCommit, TxnWrite], Awaitable[object]]  # GroupLoading.submit_transactional


class GroupOffsets:
    def __init__(self, coordinator: GroupCoordinator, store: OffsetsStore, topics: TopicLookup,
                 verifier: TransactionEnrolment, submit: Submit, submit_txn: SubmitTxn) -> None:
        """`topics`: to check a committed partition exists and find a group's offsets partition;
        `verifier`: adds that partition to a transactions V2 producer's transaction; `submit`:
        runs an operation in the group's partition (raises CoordinatorError); `submit_txn`: a
        transactional write there."""
        self._coordinator = coordinator
        self._store = store
        self._topics = topics
        self._verifier = verifier
        self._submit = submit
        self._submit_txn = submit_txn

    # --- OffsetCommit ------------------------------------------------------------------------------

    async def commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                     wanted: list[OffsetToCommit]) -> list[ErrorCode]:
        """Kafka's error for each entry of `wanted`, in order."""
        if not group_id:
            return [ErrorCode.invalid_group_id] * len(wanted)
        not_here = self._coordinator.coordinator_error(group_id)
        if not_here:
            return [not_here] * len(wanted)
        return await self._commit(group_id, Commit(group_id, generation, member_id, instance_id, wanted))

    async def write(self, group_id: str, wanted: list[OffsetToCommit]) -> list[ErrorCode]:
        """Store offsets whose committer a consumer or streams group has checked."""
        return await self._commit(group_id, WriteOffsets(group_id, wanted))

    async def _commit(self, group_id: str, op: Commit | WriteOffsets) -> list[ErrorCode]:
        try:
            return cast(list[ErrorCode], await self._submit(group_id, op))
        except CoordinatorError as exc:
            log.info("group %s: writing offsets failed: %s", group_id, exc)
            return [exc.code] * len(op.wanted)

    # --- TxnOffsetCommit (txn_offsets.py has its rules) -----------------------------------------------

    async def txn_commit(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                         member_id: str, instance_id: str | None, wanted: list[OffsetToCommit],
                         enrol_in: str | None) -> list[ErrorCode]:
        """Kafka's error for each entry of `wanted`, in order. `enrol_in`: see `txn_write`."""
        if not group_id:
            return [ErrorCode.invalid_group_id] * len(wanted)
        not_here = self._coordinator.coordinator_error(group_id)
        if not_here:
            return [not_here] * len(wanted)
        code = txn_commit_error(self._coordinator.groups.get(group_id), generation, member_id, instance_id)
        if code:
            return [code] * len(wanted)
        return await self.txn_write(group_id, producer_id, producer_epoch, wanted, enrol_in)

    async def txn_write(self, group_id: str, producer_id: int, producer_epoch: int, wanted: list[OffsetToCommit],
                        enrol_in: str | None) -> list[ErrorCode]:
        """The offsets of a committer already allowed (by the checks above, or a consumer or
        streams group's member epochs): pending in the group that keeps the id's offsets.
        `enrol_in`: for TxnOffsetCommit v5+, the transactional id whose transaction gets the
        offsets partition first."""
        codes, accepted = offsets_to_commit(group_id, wanted, self._topics, self._coordinator.timers.now_ms())
        if not accepted:
            return codes
        guard = None
        if enrol_in is not None:
            guard, refused = await enrol(self._store, self._topics, self._verifier, group_id, enrol_in,
                                         producer_id, producer_epoch)
            if refused:
                return [refused if c is ErrorCode.none else c for c in codes]
        op = TxnCommit(group_id, [replace(record, producer_id=producer_id) for record in accepted])
        try:
            await self._submit_txn(group_id, op, TxnWrite(producer_id, producer_epoch, guard))
        except CoordinatorError as exc:
            log.info("group %s: writing offsets of producer %d failed: %s", group_id, producer_id, exc)
            return [exc.code if c is ErrorCode.none else c for c in codes]
        return codes

    def end_transaction(self, partition_index: int, producer_id: int, marker_offset: int, commit: bool) -> None:
        """A COMMIT or ABORT marker of the producer is at `marker_offset` in `__consumer_offsets`
        partition `partition_index` (broker/txn/marker_append.py, once replicated, as Kafka's
        onTransactionCompleted): the pending offsets it wrote for that partition's groups end."""
        for group in self._coordinator.groups.values():
            if group.pending_txn_offsets.has_producer(producer_id) \
                    and self._store.partition_index(group.group_id) == partition_index:
                group.pending_txn_offsets.end(producer_id, marker_offset, commit, group.offsets)

    # --- OffsetFetch ------------------------------------------------------------------------------

    def fetch(self, group_id: str, wanted: list[tuple[str, list[int]]] | None,
              require_stable: bool = False) -> Fetched:
        """Committed offsets per topic, each with its error; `wanted` None means every partition the
        group committed. `require_stable` (OffsetFetch v7+): a partition an open transaction wrote
        an offset for answers UNSTABLE_OFFSET_COMMIT and no offset, as Kafka does."""
        group = self._coordinator.groups.get(group_id)
        if group is None:
            return [] if wanted is None else [(topic, [(p, None, ErrorCode.none) for p in ps]) for topic, ps in wanted]
        unstable = group.pending_txn_offsets.partitions() if require_stable else set()
        high_watermark = self._high_watermark(group_id)

        def answer(topic: str, p: int) -> tuple[int, CommittedOffset | None, ErrorCode]:
            if (topic, p) in unstable:
                return p, None, ErrorCode.unstable_offset_commit
            return p, group.unreplicated.visible((topic, p), group.offsets.get((topic, p)), high_watermark), ErrorCode.none

        if wanted is None:
            by_topic: dict[str, list[tuple[int, CommittedOffset | None, ErrorCode]]] = {}
            for topic, partition in sorted(group.offsets):
                answered = answer(topic, partition)
                if answered[1] is not None or answered[2] is not ErrorCode.none:  # a first commit not replicated yet: none
                    by_topic.setdefault(topic, []).append(answered)
            return list(by_topic.items())
        return [(topic, [answer(topic, p) for p in partitions]) for topic, partitions in wanted]

    def _high_watermark(self, group_id: str) -> int:
        """Of the group's `__consumer_offsets` partition led here (0: none: nothing counts yet)."""
        topic = self._store.topic()
        if topic is None:
            return 0
        partition = topic.partitions[offsets_log.partition_for(group_id, len(topic.partitions))]
        return partition.high_watermark if partition is not None else 0

    # --- OffsetDelete (offset_deletion.py has its rules), DeleteGroups ---------------------------------

    async def delete_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]],
                             consumer_subscribed: Callable[[str], bool] | None = None) -> Deleted:
        """(the request's error, each partition's error). `consumer_subscribed`: for a
        consumer-protocol or streams group, whether its members consume a topic; its offsets are
        kept in the classic group of the same id, which exists only once something was committed."""
        not_here = self._coordinator.coordinator_error(group_id)
        if not_here:
            return not_here, {}
        try:
            return cast(Deleted, await self._submit(group_id, DeleteOffsets(group_id, wanted, consumer_subscribed)))
        except CoordinatorError as exc:
            log.info("group %s: writing offset tombstones failed: %s", group_id, exc)
            return exc.code, {}

    async def delete_groups(self, group_ids: list[str]) -> list[ErrorCode]:
        """DeleteGroups of classic groups: each empty one goes, with its offsets."""
        codes = []
        for group_id in group_ids:
            not_here = self._coordinator.coordinator_error(group_id)
            if not_here:
                codes.append(not_here)
                continue
            try:
                codes.append(cast(ErrorCode, await self._submit(group_id, DeleteGroup(group_id))))
            except CoordinatorError as exc:
                log.info("group %s: writing tombstones failed: %s", group_id, exc)
                codes.append(exc.code)
        return codes
