"""What the transaction coordinator asks of the shard of one `__transaction_state` partition
(txn_shard.py), and the answers: the operations the coordinator runtime queues for that
partition (broker/coordinator/runtime.py) and runs one at a time.

The requests' operations carry what the shard cannot get without waiting: a producer id. The
shard decides whether a change needs a new one (a new transactional id, an epoch run out); when
it does and the operation brings none it answers NEEDS_PRODUCER_ID, and the coordinator
allocates one (broker/producer_ids.py, which may ask the cluster) and submits the operation
again with it. The second run decides afresh on the state of that moment, so nothing is held
between the two; an id allocated and then not needed is never used, as Kafka's may not be.

The shard's own operations: `Written` answers once every record of the operations before it is
written (how a transaction's end waits for its Prepare record before sending markers),
`CompleteEnd` writes the Complete record once an end's markers are written, and the timers'
`AbortTimedOut`, `ExpireIds` and `ResumeEnds`.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from wire.error_codes import ErrorCode

from broker.txn.metadata import NO_EPOCH, TxnMetadata
from broker.txn.txn_log import NO_PRODUCER_ID, TxnRecord


class StoredTxn(NamedTuple):
    """A record of `__transaction_state`: the id's new value."""

    transactional_id: str
    record: TxnRecord | None  # None: the id is forgotten (a tombstone)


class InitResult(NamedTuple):
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH


class EndResult(NamedTuple):
    """EndTxn's answer; v5 also gives the producer id and epoch the end leaves (none on an error)."""
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH


class _NeedsProducerId:
    def __repr__(self) -> str:
        return "NEEDS_PRODUCER_ID"


NEEDS_PRODUCER_ID: Final = _NeedsProducerId()  # the answer: submit again with a new producer id


class InitProducerId(NamedTuple):
    transactional_id: str
    timeout_ms: int
    producer_id: int  # the request's (NO_PRODUCER_ID: none named)
    producer_epoch: int
    new_producer_id: int = NO_PRODUCER_ID  # allocated for it after NEEDS_PRODUCER_ID


class AddPartitions(NamedTuple):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[tuple[str, int]]
    client_version: int
    connection: int | None = None  # the client connection it came on (None: a partition leader's add)


class EndTxn(NamedTuple):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    v2: bool
    connection: int | None = None  # the client connection it came on
    new_producer_id: int = NO_PRODUCER_ID


class Written(NamedTuple):
    """Answers None once the records of every operation before it are written."""


class CompleteEnd(NamedTuple):
    """Every marker of `meta`'s prepared end is written: its Complete record (an ErrorCode)."""

    meta: TxnMetadata


class AbortTimedOut(NamedTuple):
    """Fence and abort the transactions open longer than their timeout (how many), and again
    after transaction.abort.timed.out.transaction.cleanup.interval.ms."""


class ExpireIds(NamedTuple):
    """Forget the ids idle for transactional.id.expiration.ms (how many), and again after
    transaction.remove.expired.transaction.cleanup.interval.ms."""


class ResumeEnds(NamedTuple):
    """Carry on the ends the log left prepared (how many)."""


TxnOp = InitProducerId | AddPartitions | EndTxn | Written | CompleteEnd | AbortTimedOut | ExpireIds | ResumeEnds
