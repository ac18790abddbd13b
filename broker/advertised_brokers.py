"""The brokers' addresses as the asking client must see them: on the listener it connected to
(Kafka's MetadataCache.getAliveBrokerNodes(listenerName)). A client that came in on the
INTERNAL listener is told INTERNAL addresses, one on EXTERNAL the EXTERNAL ones; a client given
the other listener's address would connect where its security protocol does not match.

One broker: its own listener's advertised address. A cluster: each broker's address as its
etcd registration has it (the inter-broker listener's); per-listener endpoints in the
registration are not carried yet (see the README's listener paragraph)."""

from __future__ import annotations

from .cluster_view import BrokerAddress
from .request_context import current_request


def brokers(broker) -> list[BrokerAddress]:
    context = current_request.get()
    if context is None or broker.config.etcd is not None:
        return broker.view.brokers()
    listener = context.listener
    return [BrokerAddress(broker.config.node_id, listener.advertised_host, listener.advertised_port)]


def broker_address(broker, node_id: int) -> BrokerAddress | None:
    for address in brokers(broker):
        if address.node_id == node_id:
            return address
    return None
