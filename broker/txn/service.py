"""What the transaction APIs are given (broker/api/transaction_service.py's TransactionService):
one object in front of the parts a transaction's requests reach, so a handler names a service
call and never which part answers it.

- the transaction coordinator (coordinator.py): InitProducerId, AddPartitionsToTxn,
  AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions;
- the producer-id allocator (broker/producer_ids.py): an idempotent producer's InitProducerId;
- the marker appends (marker_append.py): WriteTxnMarkers from a remote coordinator;
- the partition verifier (partition_verifier.py): a partition leader's question to the id's
  coordinator, here or on another broker, and transaction.partition.verification.enable.
"""

from __future__ import annotations

from typing import Callable

from wire.error_codes import ErrorCode

from broker.producer_ids import ProducerIdAllocator
from broker.txn.coordinator import TransactionCoordinator
from broker.txn.marker_append import Marker, MarkerAppender
from broker.txn.metadata import TxnMetadata
from broker.txn.partition_verifier import Partitions, PartitionVerifier
from broker.txn.state import TxnState
from broker.txn.txn_ops import EndResult, InitResult


class TransactionServices:
    def __init__(self, coordinator: TransactionCoordinator, producer_ids: ProducerIdAllocator,
                 markers: MarkerAppender, verifier: PartitionVerifier,
                 partition_verification: Callable[[], bool]) -> None:
        """`partition_verification`: transaction.partition.verification.enable as in force now."""
        self._coordinator = coordinator
        self._producer_ids = producer_ids
        self._markers = markers
        self._verifier = verifier
        self._partition_verification = partition_verification

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> InitResult:
        return await self._coordinator.init_producer_id(transactional_id, timeout_ms, producer_id, producer_epoch)

    async def allocate_producer_id(self) -> int:
        return await self._producer_ids.allocate()

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Partitions, client_version: int, connection: int | None = None) -> ErrorCode:
        return await self._coordinator.add_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                                      client_version, connection)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        return self._coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      v2: bool, connection: int | None = None) -> EndResult:
        return await self._coordinator.end_txn(transactional_id, producer_id, producer_epoch, commit, v2, connection)

    async def write_markers(self, markers: list[Marker]) -> list[ErrorCode]:
        return await self._markers.append(markers)

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None]:
        return self._coordinator.describe(transactional_id)

    def listed(self, states: set[TxnState] | None, producer_ids: set[int],
               min_duration_ms: int) -> list[TxnMetadata]:
        return self._coordinator.listed(states, producer_ids, min_duration_ms)

    def partition_verification(self) -> bool:
        return self._partition_verification()

    async def verify_with_coordinator(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                      partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        return await self._verifier.verify(transactional_id, producer_id, producer_epoch, partitions)

    async def add_with_coordinator(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                   partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        return await self._verifier.add(transactional_id, producer_id, producer_epoch, partitions)
