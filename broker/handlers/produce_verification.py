"""The produce path's check of a transaction's first batch in a partition (KIP-890 part 1, as
Kafka 3.6+ verifies with transaction.partition.verification.enable at its default).

A transactional batch whose producer has no open transaction in the partition is appended only
if the coordinator says the partition is in the producer's current transaction: otherwise it
is a late batch of an ended transaction (or of one the producer never told the coordinator
about), and appending it would hold the partition's last stable offset until the transaction
timeout. The partition makes a guard before the question (replica/txn_verification.py) so a
marker arriving meanwhile still refuses the batch. The question goes to the coordinator through
broker/txn/partition_verifier.py, one per producer of the request.

The errors are those Kafka's ReplicaManager gives a client below Produce v11 (all this broker
serves): a partition not in the transaction is INVALID_TXN_STATE; a fenced producer
INVALID_PRODUCER_EPOCH; a coordinator busy ending the transaction, moving or unreachable
NOT_ENOUGH_REPLICAS, which every client retries without a metadata refresh.
"""

from __future__ import annotations

import asyncio

from replica.txn_verification import VerificationGuard

from broker.handlers.produce_records import PendingBatch

_FOR_PRODUCER = {
    "transaction_abortable": "invalid_txn_state",
    "cluster_authorization_failed": "invalid_txn_state",
    "producer_fenced": "invalid_producer_epoch",
    "concurrent_transactions": "not_enough_replicas",
    "network_exception": "not_enough_replicas",
    "coordinator_load_in_progress": "not_enough_replicas",
    "coordinator_not_available": "not_enough_replicas",
    "not_coordinator": "not_enough_replicas",
}


async def verify_first_batches(broker, transactional_id: str | None, admitted) -> dict[int, VerificationGuard]:
    """`admitted`: (result position, topic, index, partition, PendingBatch) of the request's
    checked batches. Returns the guard of each position whose batch was verified; a batch the
    coordinator refused gets its error in `pending.error`."""
    if transactional_id is None:  # a transactional batch needs one to be admitted, unless no ACLs check it
        return {}
    by_producer: dict[tuple[int, int], list[tuple[int, str, int, object, PendingBatch]]] = {}
    for entry in admitted:
        partition, pending = entry[3], entry[4]
        if pending.error is None and partition.needs_verification(pending.header):
            by_producer.setdefault((pending.header.producer_id, pending.header.producer_epoch), []).append(entry)
    if not by_producer:
        return {}
    guards = {entry[0]: entry[3].start_verification(pid) for (pid, _), entries in by_producer.items()
              for entry in entries}
    answers = await asyncio.gather(*(
        broker.txn_verifier.verify(transactional_id, pid, epoch, {(name, index) for _, name, index, *_ in entries})
        for (pid, epoch), entries in by_producer.items()))
    for entries, codes in zip(by_producer.values(), answers):
        for position, name, index, _partition, pending in entries:
            code = codes.get((name, index), "unknown_server_error")
            if code != "none":
                pending.error = (_FOR_PRODUCER.get(code, code),
                                 f"{name}-{index} could not be verified in {transactional_id}'s transaction: {code}")
                del guards[position]
    return guards
