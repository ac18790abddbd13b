"""Committed offsets, as one class (GroupOffsets): OffsetCommit and TxnOffsetCommit's checks
and writes, OffsetFetch, OffsetDelete, DeleteGroups' tombstones, and the transaction markers
that end a transaction's pending offsets (pending_offsets.py). Rebuilding them from the log is
offsets_replay.py's.

A commit is acknowledged only after its records are appended to `__consumer_offsets`
(offsets_store) and, in a cluster, reached every in-sync replica: what a client was told is
committed is what a restarted broker, or the next leader of the partition, replays.
Who may commit follows Kafka's classic rules: a member of the current generation (also
while the group prepares a rebalance, not while it waits for the leader's assignment), or
anyone with generation -1 and no member id while the group has no members (the admin and
`assign()` consumers' path). A transaction's offsets have their own rules (txn_offsets.py),
and so has OffsetDelete (offset_deletion.py).

Committed offsets live in the classic group object of the group's id, whatever the group's
protocol (a consumer-protocol or streams group checks its own members, then calls `write` or
`txn_write`); the group objects are the GroupCoordinator's, read through its public `groups`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Callable

from wire.error_codes import ErrorCode
from broker.api.topic_lookup import TopicLookup
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.offsets_store import OffsetsStore, offset_commit_error
from broker.groups.committed_offset import CommittedOffset
from broker.groups.group import Group, Member
from broker.groups.offset_deletion import CONSUMER_PROTOCOL, is_subscribed
from broker.groups.pending_offsets import keep_later
from broker.groups.state import Event, GroupState, transition
from broker.groups.txn_offsets import enrol, txn_commit_error

if TYPE_CHECKING:
    from broker.txn.partition_verifier import PartitionVerifier

log = logging.getLogger(__name__)

MAX_METADATA_BYTES = 4096  # offset.metadata.max.bytes

Record = tuple[bytes, bytes | None]  # a __consumer_offsets record: key, value (None: a tombstone)
Fetched = list[tuple[str, list[tuple[int, CommittedOffset | None, ErrorCode]]]]


@dataclass
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


def _commit_allowed(group: Group | None, generation: int, member_id: str,
                    instance_id: str | None) -> tuple[ErrorCode | None, Member | None]:
    if group is None:
        return (None, None) if generation < 0 else (ErrorCode.illegal_generation, None)
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available, None
    if generation >= 0 or member_id or instance_id is not None:
        member, code = group.validate_member(member_id, instance_id, generation)
        if code:
            return code, None
        return transition(group.state, Event.COMMIT).error, member
    if group.state is not GroupState.EMPTY:
        return ErrorCode.unknown_member_id, None  # a simple commit into a group that has members
    return None, None


class GroupOffsets:
    def __init__(self, coordinator: GroupCoordinator, store: OffsetsStore, topics: TopicLookup,
                 verifier: PartitionVerifier) -> None:
        """`topics`: to check a committed partition exists and find a group's offsets partition;
        `verifier`: adds that partition to a transactions V2 producer's transaction."""
        self._coordinator = coordinator
        self._store = store
        self._topics = topics
        self._verifier = verifier

    def _group(self, group_id: str) -> Group:
        """The group object keeping the id's offsets, made if there is none yet."""
        groups = self._coordinator.groups
        group = groups.get(group_id)
        if group is None:
            group = groups[group_id] = Group(group_id, state_timestamp=self._coordinator.timers.now_ms())
        return group

    # --- OffsetCommit ------------------------------------------------------------------------------

    async def commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                     wanted: list[OffsetToCommit]) -> list[ErrorCode]:
        """Kafka's error for each entry of `wanted`, in order."""
        if not group_id:
            return [ErrorCode.invalid_group_id] * len(wanted)
        not_here = self._coordinator.coordinator_error(group_id)
        if not_here:
            return [not_here] * len(wanted)
        group = self._coordinator.groups.get(group_id)
        code, member = _commit_allowed(group, generation, member_id, instance_id)
        if code:
            return [code] * len(wanted)
        if group is not None and member is not None:
            self._coordinator.rebalance.keep_alive(group, member)
        return await self.write(group_id, wanted)

    async def write(self, group_id: str, wanted: list[OffsetToCommit]) -> list[ErrorCode]:
        """Store offsets whose committer has been checked, by the classic rules above or by a
        consumer or streams group's."""
        group = self._group(group_id)
        codes, records, accepted = self._records(group_id, wanted)
        if records:
            written = await self._store.append(group_id, records, appended=_stamp_record_offsets(accepted))
            if written is not ErrorCode.none:
                log.info("group %s: writing offsets failed: %s", group_id, written.name)
                failed = offset_commit_error(written)
                return [failed if c is ErrorCode.none else c for c in codes]
            for partition, value in accepted:  # a transaction that ended meanwhile may hold a later record
                keep_later(group.offsets, partition, value)
        return codes

    def _records(self, group_id: str, wanted: list[OffsetToCommit]
                 ) -> tuple[list[ErrorCode], list[Record], list[tuple[tuple[str, int], CommittedOffset]]]:
        """For a commit (plain or transactional): Kafka's error for each entry of `wanted`, the
        __consumer_offsets records of those accepted, and their (partition, value) pairs."""
        now = self._coordinator.timers.now_ms()
        codes: list[ErrorCode] = []
        records: list[Record] = []
        accepted: list[tuple[tuple[str, int], CommittedOffset]] = []
        for w in wanted:
            topic = self._topics.get(w.topic)  # in a cluster most partitions are hosted elsewhere
            if topic is None or not 0 <= w.partition < len(topic.partitions):
                codes.append(ErrorCode.unknown_topic_or_partition)
            elif w.metadata is not None and len(w.metadata.encode()) > MAX_METADATA_BYTES:
                codes.append(ErrorCode.offset_metadata_too_large)
            else:
                value = CommittedOffset(w.offset, w.leader_epoch, w.metadata or "", now)
                key = offsets_log.offset_key(group_id, w.topic, w.partition)
                records.append((key, offsets_log.offset_value(value)))
                accepted.append(((w.topic, w.partition), value))
                codes.append(ErrorCode.none)
        return codes, records, accepted

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
        group = self._group(group_id)
        codes, records, accepted = self._records(group_id, wanted)
        if not records:
            return codes
        guard = None
        if enrol_in is not None:
            guard, refused = await enrol(self._store, self._topics, self._verifier, group_id, enrol_in,
                                         producer_id, producer_epoch)
            if refused:
                return [refused if c is ErrorCode.none else c for c in codes]
        stamp = _stamp_record_offsets(accepted)

        def appended(first_offset: int) -> None:
            stamp(first_offset)
            for partition, value in accepted:
                group.pending_txn_offsets.add(producer_id, partition, value)

        written = await self._store.append(group_id, records, producer=(producer_id, producer_epoch),
                                           appended=appended, verified=guard)
        if written is not ErrorCode.none:
            log.info("group %s: writing offsets of producer %d failed: %s", group_id, producer_id, written.name)
            failed = offset_commit_error(written)
            return [failed if c is ErrorCode.none else c for c in codes]
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
        offsets = group.offsets if group is not None else {}
        unstable = group.pending_txn_offsets.partitions() if group is not None and require_stable else set()

        def answer(topic: str, p: int) -> tuple[int, CommittedOffset | None, ErrorCode]:
            if (topic, p) in unstable:
                return p, None, ErrorCode.unstable_offset_commit
            return p, offsets.get((topic, p)), ErrorCode.none

        if wanted is None:
            by_topic: dict[str, list[tuple[int, CommittedOffset | None, ErrorCode]]] = {}
            for topic, partition in sorted(offsets):
                by_topic.setdefault(topic, []).append(answer(topic, partition))
            return list(by_topic.items())
        return [(topic, [answer(topic, p) for p in partitions]) for topic, partitions in wanted]

    # --- OffsetDelete (offset_deletion.py has its rules), DeleteGroups ---------------------------------

    async def delete_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]],
                             consumer_subscribed: Callable[[str], bool] | None = None
                             ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """(the request's error, each partition's error). `consumer_subscribed`: for a
        consumer-protocol or streams group, whether its members consume a topic; its offsets are
        kept in the classic group of the same id, which exists only once something was committed."""
        not_here = self._coordinator.coordinator_error(group_id)
        if not_here:
            return not_here, {}
        group = self._coordinator.groups.get(group_id)
        if consumer_subscribed is None:
            if group is None or group.state is GroupState.DEAD:
                return ErrorCode.group_id_not_found, {}
            if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL:
                return ErrorCode.non_empty_group, {}
            consumer_subscribed = partial(is_subscribed, group)
        elif group is None:
            group = Group(group_id)  # nothing committed: nothing to delete
        codes, gone = {}, []
        for topic, partitions in wanted:
            subscribed = consumer_subscribed(topic)
            for p in partitions:
                codes[(topic, p)] = ErrorCode.group_subscribed_to_topic if subscribed else ErrorCode.none
                if not subscribed and ((topic, p) in group.offsets or group.pending_txn_offsets.is_pending((topic, p))):
                    gone.append((topic, p))
        if gone:
            written = await self._store.append(group_id, [(offsets_log.offset_key(group_id, t, p), None)
                                                          for t, p in gone])
            if written is not ErrorCode.none:
                log.info("group %s: writing offset tombstones failed: %s", group_id, written.name)
                return offset_commit_error(written), {}
            for key in gone:  # a tombstone ends an open transaction's offset too, as its replay does
                group.offsets.pop(key, None)
                group.pending_txn_offsets.drop_partition(key)
        return ErrorCode.none, codes

    async def delete_groups(self, group_ids: list[str]) -> list[ErrorCode]:
        """DeleteGroups of classic groups: each empty one goes, with its offsets."""
        codes = []
        for group_id in group_ids:
            not_here = self._coordinator.coordinator_error(group_id)
            if not_here:
                codes.append(not_here)
                continue
            group = self._coordinator.groups.get(group_id)
            if group is None:
                codes.append(ErrorCode.group_id_not_found)
                continue
            outcome = transition(group.state, Event.DELETE)
            if outcome.error:
                codes.append(outcome.error)
                continue
            # Kafka's deleteAllOffsets: a partition only an open transaction wrote gets one too, so
            # a replay cannot bring that transaction's offsets back into a group of the same name
            partitions = sorted(set(group.offsets) | group.pending_txn_offsets.partitions())
            tombstones: list[Record] = [
                (offsets_log.offset_key(group_id, t, p), None) for t, p in partitions]
            tombstones.append((offsets_log.group_key(group_id), None))
            written = await self._store.append(group_id, tombstones)
            if written is not ErrorCode.none:
                log.info("group %s: writing tombstones failed: %s", group_id, written.name)
                codes.append(offset_commit_error(written))
                continue
            group.state = outcome.next
            self._coordinator.groups.pop(group_id, None)
            codes.append(ErrorCode.none)
        return codes


def _stamp_record_offsets(accepted: list[tuple[tuple[str, int], CommittedOffset]]) -> Callable[[int], None]:
    """What OffsetsStore.append calls with its batch's first offset: each value learns where its
    record went (the batch holds one record per accepted value, in order)."""
    def stamp(first_offset: int) -> None:
        for i, (_, value) in enumerate(accepted):
            value.record_offset = first_offset + i
    return stamp
