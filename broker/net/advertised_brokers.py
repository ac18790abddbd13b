"""The brokers' addresses as the asking client must see them: on the listener it connected to
(Kafka's MetadataCache.getAliveBrokerNodes(listenerName)). A client that came in on the
INTERNAL listener is told INTERNAL addresses, one on EXTERNAL the EXTERNAL ones; a client given
the other listener's address would connect where its security protocol does not match.

One broker: its own listener's advertised address. A cluster: each broker's endpoint of that
listener name, from the endpoints its etcd registration carries; a broker without a listener
of that name is left out, as Kafka does (the view's brokers_on, broker/cluster/view.py)."""

from __future__ import annotations

from broker.cluster.view import BrokerAddress, ClusterView
from broker.net.request_context import current_request


def brokers(view: ClusterView) -> list[BrokerAddress]:
    context = current_request.get()
    if context is None:
        return view.brokers()
    return view.brokers_on(context.listener)


def broker_address(view: ClusterView, node_id: int) -> BrokerAddress | None:
    for address in brokers(view):
        if address.node_id == node_id:
            return address
    return None
