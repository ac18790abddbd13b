"""A partition leader asking the transaction coordinator whether its partitions are in a
producer's open transaction, before it appends that transaction's first batch there (KIP-890
part 1, Kafka's AddPartitionsToTxnManager).

When this broker coordinates the transactional id (always, on one broker) the question is a
call into its coordinator. Otherwise it goes to the leader of the id's `__transaction_state`
partition as AddPartitionsToTxn v5 with verify_only set, over the inter-broker listener like
the markers (broker/handlers/add_partitions_to_txn.py answers it). Answers are the
coordinator's error names per partition; a failed connection or an unknown coordinator answers
as Kafka's manager does (NETWORK_EXCEPTION, COORDINATOR_NOT_AVAILABLE), which the produce path
turns into a retriable error for the client.
"""

from __future__ import annotations

import logging

from replica.broker_connection import ConnectionFailed
from wire.protocol import request_class

from broker.handlers.response_builder import make, nested
from broker.txn import txn_log
from broker.txn.peer_connections import PeerConnections

log = logging.getLogger(__name__)

ADD_PARTITIONS_TO_TXN_KEY = 24
VERIFY_VERSION = 5
REQUEST_TIMEOUT_MS = 30_000  # Kafka's request.timeout.ms, its manager's wait for an answer

Partitions = set[tuple[str, int]]


class PartitionVerifier:
    def __init__(self, broker, member) -> None:
        self._broker = broker
        self._peers = PeerConnections(member, broker.config.node_id, "txn-verify", REQUEST_TIMEOUT_MS) \
            if member is not None else None

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: Partitions) -> dict[tuple[str, int], str]:
        coordinator = self._broker.transactions
        if self._peers is None or coordinator.coordinator_error(transactional_id) is None:
            return coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
        leader = self._coordinator_node(transactional_id)
        connection = self._peers.to(leader) if leader is not None else None
        if connection is None:
            return dict.fromkeys(partitions, "coordinator_not_available")
        try:
            response = await connection.request(_request(transactional_id, producer_id, producer_epoch, partitions))
        except ConnectionFailed as exc:
            log.info("verifying %s's partitions with broker %d failed: %s", transactional_id, leader, exc)
            return dict.fromkeys(partitions, "network_exception")
        if response.error_code.name != "none":
            return dict.fromkeys(partitions, response.error_code.name)
        answered = {(t.name, p.partition_index): p.partition_error_code.name
                    for r in response.results_by_transaction if r.transactional_id == transactional_id
                    for t in r.topic_results for p in t.results_by_partition}
        return {p: answered.get(p, "unknown_server_error") for p in partitions}

    def _coordinator_node(self, transactional_id: str) -> int | None:
        """The leader of the id's __transaction_state partition, when another broker."""
        broker = self._broker
        index = broker.txn_store.partition_index(transactional_id)
        if index is None:
            return None
        placement = broker.view.placement(txn_log.TOPIC, index, broker.topics.partition(txn_log.TOPIC, index))
        if placement is None or placement.leader < 0 or placement.leader == broker.config.node_id:
            return None  # no leader now, or ours and not yet loaded here
        return placement.leader

    async def close(self) -> None:
        if self._peers is not None:
            await self._peers.close()


def _request(transactional_id: str, producer_id: int, producer_epoch: int, partitions: Partitions):
    cls = request_class(ADD_PARTITIONS_TO_TXN_KEY, VERIFY_VERSION)
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        by_topic.setdefault(topic, []).append(index)
    topics = tuple(make(nested(cls, "AddPartitionsToTxnTopic"), name=t, partitions=tuple(i))
                   for t, i in by_topic.items())
    transaction = make(nested(cls, "AddPartitionsToTxnTransaction"), transactional_id=transactional_id,
                       producer_id=producer_id, producer_epoch=producer_epoch, verify_only=True, topics=topics)
    return make(cls, transactions=(transaction,))
