"""The produce path's check of a transaction's first batch in a partition (KIP-890), as Kafka's
ReplicaManager does it per Produce version (AddPartitionsToTxnManager's
produceRequestVersionToTransactionSupportedOperation).

A transactional batch whose producer has no open transaction in the partition (at the batch's
epoch) would open one there. Below v12 it is appended only if the coordinator says the
partition is in the producer's current transaction (part 1, transaction.partition.verification
at Kafka's default): otherwise it is a late batch of an ended transaction, or of one the producer
never told the coordinator about, and appending it would hold the partition's last stable offset
until the transaction timeout; transaction.partition.verification.enable=false (static or
dynamic) turns this part off, as in Kafka. From v12 the client is one of transactions V2, which sends no
AddPartitionsToTxn: the leader asks the coordinator to add the partition (part 2), and a late
batch is refused by its epoch instead (the coordinator bumped it at the end). Either way the
partition makes a guard before the question (replica/txn_verification.py), so a marker arriving
meanwhile still refuses the batch. The question goes through broker/txn/partition_verifier.py,
one per request: a request whose transactional batches name more than one producer is refused
whole, as Kafka's ReplicaManager refuses it (InvalidPidMappingException).

The errors are Kafka's per version: a fenced producer INVALID_PRODUCER_EPOCH; a partition not in
the transaction TRANSACTION_ABORTABLE from v11 (INVALID_TXN_STATE below, which older clients
know); a coordinator moving, loading or unreachable NOT_ENOUGH_REPLICAS, which every client
retries without a metadata refresh; CONCURRENT_TRANSACTIONS the same below v12, and as itself
from v12, where it is common (a V2 producer's next transaction while its last one's markers are
written) and the client retries it.
"""

from __future__ import annotations

from replica.partition import Partition
from replica.txn_verification import VerificationGuard
from wire.error_codes import ErrorCode

from broker.api.transaction_service import TransactionService
from broker.handlers.produce_records import PendingBatch

FIRST_GENERIC_ERROR_VERSION = 11  # TRANSACTION_ABORTABLE answered (KIP-890)
FIRST_ADD_PARTITION_VERSION = 12  # transactions V2: the leader adds the partition

_FOR_PRODUCER = {
    ErrorCode.cluster_authorization_failed: ErrorCode.invalid_txn_state,
    ErrorCode.producer_fenced: ErrorCode.invalid_producer_epoch,
    ErrorCode.network_exception: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_load_in_progress: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_not_available: ErrorCode.not_enough_replicas,
    ErrorCode.not_coordinator: ErrorCode.not_enough_replicas,
}

# A batch admitted for its record check: (result position, topic, index, partition, PendingBatch).
Admitted = tuple[int, str, int, Partition, PendingBatch]


def _for_producer(code: ErrorCode, api_version: int) -> ErrorCode:
    if code is ErrorCode.transaction_abortable and api_version < FIRST_GENERIC_ERROR_VERSION:
        return ErrorCode.invalid_txn_state
    if code is ErrorCode.concurrent_transactions and api_version < FIRST_ADD_PARTITION_VERSION:
        return ErrorCode.not_enough_replicas
    return _FOR_PRODUCER.get(code, code)


async def verify_first_batches(transactions: TransactionService, transactional_id: str | None, admitted: list[Admitted],
                               api_version: int) -> dict[int, VerificationGuard]:
    """`admitted`: the request's checked batches. Returns the guard of each position whose batch
    was verified (or added); a batch the coordinator refused gets its error in `pending.error`.
    Transactional batches of more than one producer (id and epoch) in one request: every batch
    is refused with INVALID_PRODUCER_ID_MAPPING, as Kafka's ReplicaManager refuses the request."""
    # runs for every Produce, as Kafka's check does: indexed, not unpacked (at 64 batches 12 -> 6 µs)
    producers = {(h.producer_id, h.producer_epoch) for e in admitted if (h := e[4].header).is_transactional}
    if len(producers) > 1:
        for *_, pending in admitted:
            if pending.error is None:
                pending.error = (ErrorCode.invalid_producer_id_mapping,
                                 "transactional records contained more than one producer id")
        return {}
    if transactional_id is None:  # a transactional batch needs one to be admitted, unless no ACLs check it
        return {}
    if api_version < FIRST_ADD_PARTITION_VERSION and not transactions.partition_verification():
        return {}  # part 1 turned off (Kafka's maybeSendPartitionsToTransactionCoordinator); V2 still adds
    unverified = [e for e in admitted if e[4].error is None and e[3].needs_verification(e[4].header)]
    if not unverified:
        return {}
    ((pid, epoch),) = producers  # a batch needing verification is a transactional one
    guards: dict[int, VerificationGuard] = {}
    for position, _name, _index, partition, _pending in unverified:
        guards[position] = partition.start_verification(pid)
        guards[position].covers(epoch, epoch_bumps=api_version >= FIRST_ADD_PARTITION_VERSION)
    ask = (transactions.add_with_coordinator if api_version >= FIRST_ADD_PARTITION_VERSION
           else transactions.verify_with_coordinator)
    codes = await ask(transactional_id, pid, epoch, {(name, index) for _, name, index, *_ in unverified})
    for position, name, index, _partition, pending in unverified:
        code = codes.get((name, index), ErrorCode.unknown_server_error)
        if code is not ErrorCode.none:
            pending.error = (_for_producer(code, api_version),
                             f"{name}-{index} could not be added to or verified in {transactional_id}'s "
                             f"transaction: {code.name}")
            del guards[position]
    return guards
