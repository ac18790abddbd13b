"""A partition leader asking the transaction coordinator whether its partitions are in a
producer's open transaction, before it appends that transaction's first batch there (KIP-890
part 1), or, for a client of transactions V2, asking it to add them (KIP-890 part 2: Produce
v12+, and the group coordinator for TxnOffsetCommit v5+). Kafka's AddPartitionsToTxnManager.

When this broker coordinates the transactional id (always, on one broker) the question is a
call into its coordinator. Otherwise it goes to the leader of the id's `__transaction_state`
partition as AddPartitionsToTxn v5, verify_only set for a question and not for an add, over the
inter-broker listener like the markers (broker/handlers/add_partitions_to_txn.py answers it).
Answers are the coordinator's errors per partition; a failed connection or an unknown
coordinator answers as Kafka's manager does (NETWORK_EXCEPTION, COORDINATOR_NOT_AVAILABLE),
which the callers turn into retriable errors for the client.

An add answered CONCURRENT_TRANSACTIONS is asked again every add.partitions.to.txn.retry.backoff.ms
for up to add.partitions.to.txn.retry.backoff.max.ms, as Kafka's ReplicaManager does: it is what
a V2 producer meets when it starts its next transaction while the coordinator still writes the
last one's markers, and waiting here a few milliseconds saves the producer a retry of its batch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from wire.error_codes import ErrorCode
from replica.broker_connection import ConnectionFailed
from wire.protocol import request_class

from broker.api.response_builder import make, nested
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.settings.config import BrokerConfig
from broker.txn import txn_log
from broker.txn.state_store import TxnStateStore
from broker.cluster.peer_connections import PeerConnections

if TYPE_CHECKING:  # the etcd client it brings is loaded only by a clustered broker
    from broker.cluster.member import ClusterMember

log = logging.getLogger(__name__)

ADD_PARTITIONS_TO_TXN_KEY = 24
VERIFY_VERSION = 5
REQUEST_TIMEOUT_MS = 30_000  # Kafka's request.timeout.ms, its manager's wait for an answer

Partitions = set[tuple[str, int]]


class LocalCoordinator(Protocol):
    """What the verifier asks of this broker's transaction coordinator (broker/txn/coordinator.py)."""

    def coordinator_error(self, transactional_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR for an id this broker does not coordinate."""

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Partitions) -> dict[tuple[str, int], ErrorCode]: ...

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Partitions, client_version: int) -> ErrorCode: ...


class PartitionVerifier:
    def __init__(self, coordinator: Callable[[], LocalCoordinator], store: TxnStateStore, topics: TopicLookup,
                 view: ClusterView, config: BrokerConfig, member: ClusterMember | None) -> None:
        """`coordinator`: this broker's, made after the verifier (its markers end the offsets
        the group coordinator's verified commits hold); `store`, `topics` and `view`: which
        broker leads an id's `__transaction_state` partition."""
        self._coordinator = coordinator
        self._store = store
        self._topics = topics
        self._view = view
        self._node_id = config.node_id
        self._peers = PeerConnections(member, config.node_id, "txn-verify", REQUEST_TIMEOUT_MS) \
            if member is not None else None
        self._retry_backoff_s = config.add_partitions_retry_backoff_ms / 1000
        self._retry_for_s = config.add_partitions_retry_backoff_max_ms / 1000

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        """Per partition, whether the producer's open transaction holds it."""
        return await self._ask(transactional_id, producer_id, producer_epoch, partitions, add=False)

    async def add(self, transactional_id: str, producer_id: int, producer_epoch: int,
                  partitions: Partitions) -> dict[tuple[str, int], ErrorCode]:
        """Per partition, whether it is now in the producer's transaction (added if not)."""
        started = time.monotonic()
        while True:
            codes = await self._ask(transactional_id, producer_id, producer_epoch, partitions, add=True)
            busy = ErrorCode.concurrent_transactions in codes.values()
            if not busy or time.monotonic() - started + self._retry_backoff_s > self._retry_for_s:
                return codes
            await asyncio.sleep(self._retry_backoff_s)

    async def _ask(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Partitions,
                   add: bool) -> dict[tuple[str, int], ErrorCode]:
        coordinator = self._coordinator()
        if self._peers is None or coordinator.coordinator_error(transactional_id) is None:
            if not add:
                return coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
            # Kafka records a broker's add as transaction version 2: only a V2 client's request makes one.
            code = await coordinator.add_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                                    client_version=2)
            return dict.fromkeys(partitions, code)
        leader = self._coordinator_node(transactional_id)
        connection = self._peers.to(leader) if leader is not None else None
        if connection is None:
            return dict.fromkeys(partitions, ErrorCode.coordinator_not_available)
        try:
            response = await connection.request(_request(transactional_id, producer_id, producer_epoch, partitions,
                                                          verify_only=not add))
        except ConnectionFailed as exc:
            log.info("verifying %s's partitions with broker %d failed: %s", transactional_id, leader, exc)
            return dict.fromkeys(partitions, ErrorCode.network_exception)
        if response.error_code is not ErrorCode.none:
            return dict.fromkeys(partitions, response.error_code)
        answered = {(t.name, p.partition_index): p.partition_error_code
                    for r in response.results_by_transaction if r.transactional_id == transactional_id
                    for t in r.topic_results for p in t.results_by_partition}
        return {p: answered.get(p, ErrorCode.unknown_server_error) for p in partitions}

    def _coordinator_node(self, transactional_id: str) -> int | None:
        """The leader of the id's __transaction_state partition, when another broker."""
        index = self._store.partition_index(transactional_id)
        if index is None:
            return None
        placement = self._view.placement(txn_log.TOPIC, index, self._topics.partition(txn_log.TOPIC, index))
        if placement is None or placement.leader < 0 or placement.leader == self._node_id:
            return None  # no leader now, or ours and not yet loaded here
        return placement.leader

    async def close(self) -> None:
        if self._peers is not None:
            await self._peers.close()


def _request(transactional_id: str, producer_id: int, producer_epoch: int, partitions: Partitions,
             verify_only: bool) -> Any:
    cls = request_class(ADD_PARTITIONS_TO_TXN_KEY, VERIFY_VERSION)
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        by_topic.setdefault(topic, []).append(index)
    topics = tuple(make(nested(cls, "AddPartitionsToTxnTopic"), name=t, partitions=tuple(i))
                   for t, i in by_topic.items())
    transaction = make(nested(cls, "AddPartitionsToTxnTransaction"), transactional_id=transactional_id,
                       producer_id=producer_id, producer_epoch=producer_epoch, verify_only=verify_only,
                       topics=topics)
    return make(cls, transactions=(transaction,))
