"""What the transaction APIs call (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
WriteTxnMarkers, DescribeTransactions, ListTransactions) and what a partition leader asks before
a transaction's first batch (Produce). broker/txn/service.py's TransactionServices is the one
implementation: it routes each call to the transaction coordinator (broker/txn/coordinator.py),
the producer-id allocator, the marker appends or the partition verifier.

Errors are answers, never raised, but for `allocate_producer_id`'s NoProducerIdBlock.
"""

from __future__ import annotations

from typing import Protocol

from wire.error_codes import ErrorCode

from broker.txn.txn_ops import EndResult, InitResult
from broker.txn.marker_append import Marker
from broker.txn.metadata import TxnMetadata
from broker.txn.partition_verifier import Partitions
from broker.txn.state import TxnState


class TransactionService(Protocol):
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> InitResult:
        """The id's producer with its epoch bumped (a new one for a new id); `producer_id` and
        `producer_epoch` name the producer asking (-1: none, before v3)."""

    async def allocate_producer_id(self) -> int:
        """A fresh producer id, for an idempotent producer; raises NoProducerIdBlock when no
        block of ids can be reserved now (broker/producer_ids.py)."""

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Partitions, client_version: int, connection: int | None = None) -> ErrorCode:
        """Add the partitions to the producer's transaction; `client_version` is the transaction
        version Kafka records for the request (0 for a client's, 2 for a partition leader's);
        `connection` is the client connection a client's request came on (its RequestContext's
        connection_id)."""

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        """Per partition, whether the producer's open transaction here holds it (AddPartitionsToTxn
        v4+ with verify_only)."""

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      v2: bool, connection: int | None = None) -> EndResult:
        """Commit or abort; `v2`: EndTxn v5, whose end bumps the epoch; `connection`: the client
        connection the request came on."""

    async def write_markers(self, markers: list[Marker]) -> list[ErrorCode]:
        """Append the markers to partitions led here, together; an error per marker, in order,
        none once replicated."""

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None]:
        """The id's state, or why there is none (NOT_COORDINATOR, TRANSACTIONAL_ID_NOT_FOUND)."""

    def listed(self, states: set[TxnState] | None, producer_ids: set[int],
               min_duration_ms: int) -> list[TxnMetadata]:
        """The ids coordinated here in one of `states` (None: any), of one of `producer_ids`
        (empty: any), whose transaction has run at least `min_duration_ms` (-1: any)."""

    def partition_verification(self) -> bool:
        """transaction.partition.verification.enable as in force now (static or dynamic)."""

    async def verify_with_coordinator(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                      partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        """A partition leader's question to the id's coordinator, wherever it is: per partition,
        whether the producer's open transaction holds it (KIP-890 part 1)."""

    async def add_with_coordinator(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                   partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        """A partition leader's add to the id's coordinator, wherever it is (KIP-890 part 2): per
        partition, whether it is now in the producer's transaction."""
