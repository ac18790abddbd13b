"""TxnOffsetCommit's side in the group coordinator: a transaction's offsets, written but pending.

Kafka's GroupCoordinator.handleTxnCommitOffsets / GroupMetadataManager.storeOffsets with a
producer id: the offsets go to the group's `__consumer_offsets` partition in one
transactional batch of the producer (id and epoch; an epoch older than the partition knows
is INVALID_PRODUCER_EPOCH), and the group keeps them as that producer's pending offsets
(pending_offsets.py) until the transaction coordinator's marker for that partition ends the
transaction (offsets.end_transaction). They are pending from the moment the batch is in the
log, before it is replicated: an abort marker may follow it at once, and a replay of the log
would find them pending too.

Who may commit, as Kafka's validateOffsetCommit for a transactional commit: anyone while the
group is Empty and the request names no member (v0-v2 never do), otherwise a member of the
current generation, also while the group waits for its leader's assignment (a transaction's
offsets count only at its commit). An unknown group with generation -1 is created, as for a
plain commit; one named with a generation is ILLEGAL_GENERATION (Kafka's new coordinator).
A consumer-protocol group's member epochs are checked in groups/consumer/classic_apis.py,
which then calls `write`.

A client of transactions V2 sends no AddOffsetsToTxn: its TxnOffsetCommit v5 names its
transactional id, and the group's offsets partition is added to the producer's transaction
before the offsets are written (`_enrol`, KIP-890 part 2; Kafka's group coordinator does it
through AddPartitionsToTxnManager's ADD_PARTITION). The write then carries the verification
guard made before the add, so a marker that ended the transaction meanwhile refuses it rather
than leaving offsets no marker will ever settle.
"""

from __future__ import annotations

import logging

from wire.error_codes import ErrorCode
from replica.partition import now_ms
from replica.txn_verification import VerificationGuard
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group import Group
from broker.groups.offsets import OffsetToCommit, offset_records, stamp_record_offsets
from broker.groups.offsets_store import offset_commit_error
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


def _commit_allowed(group: Group | None, generation: int, member_id: str, instance_id: str | None) -> ErrorCode | None:
    if group is None:
        return None if generation < 0 else ErrorCode.illegal_generation
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available
    if generation < 0 and group.state is GroupState.EMPTY:
        return None
    if generation >= 0 or member_id or instance_id is not None:
        return group.validate_member(member_id, instance_id, generation)[1]
    return None


async def commit(coord: GroupCoordinator, broker, group_id: str, producer_id: int, producer_epoch: int,
                 generation: int, member_id: str, instance_id: str | None,
                 wanted: list[OffsetToCommit], enrol_in: str | None) -> list[ErrorCode]:
    """Kafka's error for each entry of `wanted`, in order. `enrol_in`: see `write`."""
    if not group_id:
        return [ErrorCode.invalid_group_id] * len(wanted)
    not_here = coord.coordinator_error(group_id)
    if not_here:
        return [not_here] * len(wanted)
    code = _commit_allowed(coord.groups.get(group_id), generation, member_id, instance_id)
    if code:
        return [code] * len(wanted)
    return await write(coord, broker, group_id, producer_id, producer_epoch, wanted, enrol_in)


async def _enrol(coord: GroupCoordinator, broker, group_id: str, transactional_id: str, producer_id: int,
                 producer_epoch: int) -> tuple[VerificationGuard | None, str | None]:
    """Add the group's offsets partition to the producer's transaction: (the guard to append
    under, or None when no add was needed; the error to answer, or None)."""
    await coord._store.ensure_topic()  # the first commit of all makes the topic: enrol in it too
    index = coord._store.partition_index(group_id)
    partition = None if index is None else broker.topics.partition(offsets_log.TOPIC, index)
    if partition is None or not partition.is_leader or partition.in_transaction(producer_id, producer_epoch):
        return None, None  # the write answers where the group is not ours; an open transaction holds it
    guard = partition.start_verification(producer_id)
    guard.covers(producer_epoch, epoch_bumps=True)  # TxnOffsetCommit v5+: a transactions V2 producer
    codes = await broker.txn_verifier.add(transactional_id, producer_id, producer_epoch, {(offsets_log.TOPIC, index)})
    code = codes.get((offsets_log.TOPIC, index), ErrorCode.unknown_server_error)
    if code is not ErrorCode.none:
        log.info("group %s: adding %s-%d to %s's transaction failed: %s", group_id, offsets_log.TOPIC, index,
                 transactional_id, code)
        return None, _ENROL_ERRORS.get(code, code)
    return guard, None


async def write(coord: GroupCoordinator, broker, group_id: str, producer_id: int, producer_epoch: int,
                wanted: list[OffsetToCommit], enrol_in: str | None) -> list[ErrorCode]:
    """The offsets of a committer already allowed (by the checks above, or a consumer-protocol
    group's member epochs): pending in the group that keeps the id's offsets. `enrol_in`: for
    TxnOffsetCommit v5+, the transactional id whose transaction gets the offsets partition first."""
    group = coord.groups.get(group_id)
    if group is None:
        group = coord.groups[group_id] = Group(group_id, state_timestamp=now_ms())
    codes, records, accepted = offset_records(broker, group_id, wanted)
    if not records:
        return codes
    guard = None
    if enrol_in is not None:
        guard, refused = await _enrol(coord, broker, group_id, enrol_in, producer_id, producer_epoch)
        if refused:
            return [refused if c is ErrorCode.none else c for c in codes]
    stamp = stamp_record_offsets(accepted)

    def appended(first_offset: int) -> None:
        stamp(first_offset)
        for partition, value in accepted:
            group.pending_txn_offsets.add(producer_id, partition, value)

    written = await coord._store.append(group_id, records, producer=(producer_id, producer_epoch), appended=appended,
                                        verified=guard)
    if written is not ErrorCode.none:
        log.info("group %s: writing offsets of producer %d failed: %s", group_id, producer_id, written.name)
        failed = offset_commit_error(written)
        return [failed if c is ErrorCode.none else c for c in codes]
    return codes
