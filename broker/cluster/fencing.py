"""Fencing a broker before its lease runs out: only on a majority's evidence, never on one peer's.

A crashed broker's port refuses connections at once (peer_liveness.py), and revoking its lease
then saves the rest of a session timeout of leaderlessness. But a refusal is evidence, not
proof: a link cut with `REJECT --reject-with tcp-reset`, or a firewall, refuses exactly like a
dead process. When any one watcher's refusal was enough, a broker cut off from its peers (not
from etcd) saw them all refuse and revoked their leases in turn, they revoked its, and each
re-registration started another round: every partition of a healthy majority stalled for the
whole cut. In Kafka only the controller fences, from heartbeats it stops receiving. Here:

  - a refusal (confirmed) is a *suspicion*: the watcher writes `suspicions/<suspect>/<voter>`
    = the suspect's broker_epoch, under its own session lease, and deletes it once the
    suspect's port answers again. A voter that is fenced, or dies, loses its votes with its
    lease; a vote names the incarnation it saw, so a re-registered suspect starts clean;
  - a suspect is fenced once more than half of the registered brokers, the suspect included,
    suspect its current incarnation (`majority_suspects`). In a cluster of three that is
    both others: a broker cut off from both peers suspects both but fences neither, while the
    two of them fence it as fast as before. Counting the suspect keeps a split in halves (two
    and two) from fencing both halves, and a cluster down to two brokers from fencing itself:
    there the lease alone decides, as it always does for a silent (dropped) link;
  - the controller does the fencing, guarded by its controller key (a deposed controller's
    read is refused, so it revokes nothing). When the suspect *is* the controller (or no
    controller is known), each voter of the majority does it instead, guarded by its own
    registration; a second revoke of the same lease fails harmlessly. Either way the votes
    are read again from etcd in that guarded transaction before the lease is revoked, so no
    stale image fences anybody.

Safety never rested on this (a broker without a session refuses acks=all; leader epochs fence
the rest): this is availability, and a wrong fencing costs a re-registration.
"""

from __future__ import annotations

import logging

import aetcd

from broker.cluster.broker_session import BrokerSession
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import BrokerRegistration
from broker.cluster.etcd_store import EtcdStore, Guard
from broker.cluster.metadata_image import MetadataChange, MetadataImage

log = logging.getLogger(__name__)


def voters_against(image: MetadataImage, suspect: int) -> frozenset[int]:
    """The registered brokers, other than the suspect, suspecting its current incarnation."""
    registration = image.brokers.get(suspect)
    if registration is None:
        return frozenset()
    return frozenset(voter for (s, voter), epoch in image.suspicions.items()
                     if s == suspect and voter != suspect and voter in image.brokers
                     and epoch == registration.broker_epoch)


def majority_suspects(image: MetadataImage, suspect: int) -> bool:
    """More than half of the registered brokers, the suspect counted, suspect it."""
    return suspect in image.brokers and 2 * len(voters_against(image, suspect)) > len(image.brokers)


def fences(image: MetadataImage, node_id: int, suspect: int) -> bool:
    """Whether `node_id` is the one to fence `suspect` (a majority suspecting it assumed): the
    controller, unless the suspect is the controller or none is known, then each voter."""
    controller = image.controller.node_id if image.controller is not None else None
    if controller not in (None, suspect):
        return node_id == controller
    return node_id in voters_against(image, suspect)


class Fencing:
    """A metadata listener on every broker: votes (from PeerLiveness) and fences (its duty)."""

    def __init__(self, store: EtcdStore, session: BrokerSession, controller_guard) -> None:
        """`controller_guard()`: the Guard of our controller key while we hold it, else None."""
        self._store = store
        self._session = session
        self._controller_guard = controller_guard
        self._fenced: set[tuple[int, int]] = set()  # (node, broker_epoch) we revoked

    async def vote(self, peer: BrokerRegistration, suspected: bool) -> None:
        """Record (or withdraw) our suspicion of `peer`'s incarnation; raises aetcd's errors.
        A withdrawal deletes only a vote against that incarnation, not a newer one's."""
        client, layout = self._store.client, self._store.layout
        key = layout.suspicion_key(peer.node_id, self._session.node_id)
        value = layout.encode(peer.broker_epoch)
        if suspected:
            await client.put(key, value, lease=self._session.lease_id)
        else:
            tx = client.transactions
            await self._store.transaction(compare=[tx.value(key) == value], success=[tx.delete(key)])

    async def on_metadata(self, image: MetadataImage, change: MetadataChange) -> None:
        if not self._session.has_session():
            return
        me = self._session.node_id
        for suspect, registration in image.brokers.items():
            key = (suspect, registration.broker_epoch)
            if suspect == me or key in self._fenced or not majority_suspects(image, suspect):
                continue
            if fences(image, me, suspect):
                try:
                    await self._fence(image, registration)
                except (ClusterError, aetcd.exceptions.ClientError) as exc:
                    log.info("fencing broker %d: %r", suspect, exc)

    async def _fence(self, image: MetadataImage, suspect: BrokerRegistration) -> None:
        """Read the votes again under our guard; revoke the suspect's lease if they still
        make a majority of the registrations read with them."""
        client, layout = self._store.client, self._store.layout
        tx = client.transactions
        guard: Guard = self._controller_guard() or self._session.registration_guard()
        nodes = sorted(image.brokers)
        ok, responses = await self._store.transaction(
            compare=[tx.create(guard.key) == guard.create_revision],
            success=[tx.get(layout.broker_key(n)) for n in nodes]
            + [tx.get(layout.suspicion_key(suspect.node_id, n)) for n in nodes])
        if not ok:
            raise ClusterError(guard.code, guard.message)
        registered = [n for n, found in zip(nodes, responses[:len(nodes)]) if found]
        votes = [n for n, found in zip(nodes, responses[len(nodes):])
                 if found and n in registered and int(found[0][0]) == suspect.broker_epoch]
        if suspect.node_id not in registered or 2 * len(votes) <= len(registered):
            return
        self._fenced.add((suspect.node_id, suspect.broker_epoch))
        log.warning("brokers %s find broker %d's port refusing connections: revoking its lease %x", votes,
                    suspect.node_id, suspect.broker_epoch)
        try:
            await client.revoke_lease(suspect.broker_epoch)
        except aetcd.exceptions.ClientError as exc:  # gone already: another voter, or etcd, ended it
            log.info("revoking lease %x of broker %d: %r", suspect.broker_epoch, suspect.node_id, exc)
