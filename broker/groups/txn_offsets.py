"""TxnOffsetCommit's rules in the group coordinator: a transaction's offsets, written but pending
(GroupOffsets.txn_commit and txn_write, offsets.py, apply them).

Kafka's GroupCoordinatorService.commitTransactionalOffsets: the offsets are a transactional
write of the coordinator runtime (`TxnCommit`, in the group's partition's turn like every
operation of its groups): one transactional batch of the producer of their own (id and
epoch; an epoch older than the partition knows is INVALID_PRODUCER_EPOCH, answered to this
commit alone), and the group keeps them as that producer's pending offsets
(pending_offsets.py) until the transaction coordinator's marker for that partition ends the
transaction (GroupOffsets.end_transaction). Their records (OffsetRecord with the producer's
id) are replayed as pending in the operation's turn, before the batch is written, as Kafka's
runtime replays them (offset_ops.py): an abort marker may follow the batch at once, and a replay
of the log finds them pending too. A write the log refuses puts them back (the runtime's undo log).

Who may commit, as Kafka's validateOffsetCommit for a transactional commit: anyone while the
group is Empty and the request names no member (v0-v2 never do), otherwise a member of the
current generation, also while the group waits for its leader's assignment (a transaction's
offsets count only at its commit). An unknown group with generation -1 is created, as for a
plain commit; one named with a generation is ILLEGAL_GENERATION (Kafka's new coordinator).
A consumer-protocol group's member epochs are checked in groups/consumer/classic_apis.py,
which then calls GroupOffsets.txn_write.

A client of transactions V2 sends no AddOffsetsToTxn: its TxnOffsetCommit v5 names its
transactional id, and the group's offsets partition is added to the producer's transaction
before the offsets are written (`enrol`, KIP-890 part 2; Kafka's group coordinator does it
through AddPartitionsToTxnManager's ADD_PARTITION). The write then carries the verification
guard made before the add, so a marker that ended the transaction meanwhile refuses it rather
than leaving offsets no marker will ever settle.
"""

from __future__ import annotations

import logging
from typing import NamedTuple, Protocol

from wire.error_codes import ErrorCode
from replica.txn_verification import VerificationGuard
from broker.api.topic_lookup import TopicLookup
from broker.groups import offsets_log
from broker.groups.committed_offset import OffsetRecord
from broker.groups.group import Group
from broker.groups.offsets_store import OffsetsStore
from broker.groups.state import GroupState


log = logging.getLogger(__name__)

# The transaction coordinator's answer to the add -> TxnOffsetCommit's, as Kafka's
# AddPartitionsToTxnManager and GroupCoordinatorService.handleOperationException map them.
_ENROL_ERRORS = {
    ErrorCode.producer_fenced: ErrorCode.invalid_producer_epoch,
    ErrorCode.cluster_authorization_failed: ErrorCode.invalid_txn_state,
    ErrorCode.network_exception: ErrorCode.coordinator_load_in_progress,  # retried by every client, no lookup
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
}


class TransactionEnrolment(Protocol):
    """Adds partitions to a producer's transaction (the transaction coordinator's PartitionVerifier,
    named by what the groups use of it, so groups/ does not import txn/)."""

    async def add(self, transactional_id: str, producer_id: int, producer_epoch: int,
                  partitions: set[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]: ...


class TxnCommit(NamedTuple):
    """The accepted offsets of a TxnOffsetCommit (each record with the producer's id), written as
    the producer's transactional batch."""

    group_id: str
    records: list[OffsetRecord]


def txn_commit_error(group: Group | None, generation: int, member_id: str, instance_id: str | None) -> ErrorCode | None:
    """Whether a classic group refuses the transactional commit (None: it may commit)."""
    if group is None:
        return None if generation < 0 else ErrorCode.illegal_generation
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available
    if generation < 0 and group.state is GroupState.EMPTY:
        return None
    if generation >= 0 or member_id or instance_id is not None:
        return group.validate_member(member_id, instance_id, generation)[1]
    return None


async def enrol(store: OffsetsStore, topics: TopicLookup, verifier: TransactionEnrolment, group_id: str,
                transactional_id: str, producer_id: int, producer_epoch: int
                ) -> tuple[VerificationGuard | None, ErrorCode | None]:
    """Add the group's offsets partition to the producer's transaction: (the guard to append
    under, or None when no add was needed; the error to answer, or None)."""
    await store.ensure_topic()  # the first commit of all makes the topic: enrol in it too
    index = store.partition_index(group_id)
    if index is None:
        return None, None  # no topic: the write answers
    partition = topics.partition(offsets_log.TOPIC, index)
    if partition is None or not partition.is_leader or partition.in_transaction(producer_id, producer_epoch):
        return None, None  # the write answers where the group is not ours; an open transaction holds it
    guard = partition.start_verification(producer_id)
    guard.covers(producer_epoch, epoch_bumps=True)  # TxnOffsetCommit v5+: a transactions V2 producer
    codes = await verifier.add(transactional_id, producer_id, producer_epoch, {(offsets_log.TOPIC, index)})
    code = codes.get((offsets_log.TOPIC, index), ErrorCode.unknown_server_error)
    if code is not ErrorCode.none:
        log.info("group %s: adding %s-%d to %s's transaction failed: %s", group_id, offsets_log.TOPIC, index,
                 transactional_id, code)
        return None, _ENROL_ERRORS.get(code, code)
    return guard, None
