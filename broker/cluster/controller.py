"""The controller: one broker at a time, elected through etcd, moves leadership off dead brokers.

Election: every broker whose session is alive, on seeing no `controller` key, tries one
transaction — create the key (under its own session lease) if it is absent, and bump
`controller_epoch` if nobody else bumped it since it was read. At most one such transaction
succeeds; the winner's key vanishes with its lease, and the next broker to notice wins the next
epoch. Kafka's controller epoch has the same role: it only ever grows.

Duty: after every metadata change, for each partition, apply leader_election.on_broker_change
with the brokers registered now as the live set. A broker that registered again under a new
epoch (it restarted or lost its session) counts as dead for that one pass, so leadership moves
off its old incarnation, as KRaft fences a re-registering broker; the next change brings it
back. Every write is a compare-and-swap guarded by the controller key's create revision, so a
controller whose lease has expired cannot write, even if it has not noticed yet. The state the
rule judges is always the one just read from etcd, never the possibly stale image.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

import aetcd

from wire.error_codes import ErrorCode
from broker.cluster.leader_election import on_broker_change
from broker.cluster.broker_session import BrokerSession
from broker.cluster.cluster_events import ClusterEvents
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import ControllerRecord
from broker.cluster.etcd_store import EtcdStore, Guard
from broker.cluster.metadata_image import MetadataChange, MetadataImage

log = logging.getLogger(__name__)

UNCLEAN_CONFIG = "unclean.leader.election.enable"


class Controller:
    def __init__(self, store: EtcdStore, session: BrokerSession, events: ClusterEvents,
                 unclean_leader_election: bool = False) -> None:
        self._store = store
        self._session = session
        self._events = events
        self._unclean_default = unclean_leader_election
        self.epoch = 0  # our controller epoch while we hold the key, else 0
        self._create_revision = 0

    async def on_metadata(self, image: MetadataImage, change: MetadataChange) -> None:
        if not self._session.has_session():
            return
        try:
            await self._on_metadata(image, change)
        except aetcd.exceptions.ClientError as exc:
            # etcd out of reach, or our lease revoked before our session timer noticed (the
            # campaign then fails with "requested lease not found"): the next change retries
            log.warning("controller: etcd: %r", exc)

    async def _on_metadata(self, image: MetadataImage, change: MetadataChange) -> None:
        c = image.controller
        if c is not None and (c.node_id, c.controller_epoch) != (self._session.node_id, self.epoch):
            self.epoch = 0  # another broker, or an earlier session of ours, holds the key
            return
        # c is None with self.epoch set: we won and the image has not caught up yet, or our key
        # is gone; the guard on every write tells which
        if self.epoch == 0 and not await self._campaign():
            return
        await self.reconcile(image, fenced=change.brokers_restarted)
        if self.epoch == 0 and c is None and await self._campaign():
            await self.reconcile(image, fenced=change.brokers_restarted)

    async def _campaign(self) -> bool:
        client, layout = self._store.client, self._store.layout
        tx = client.transactions
        epoch_kv = await client.get(layout.controller_epoch_key)
        last = int(epoch_kv.value) if epoch_kv is not None else 0
        record = ControllerRecord(self._session.node_id, last + 1)
        won, responses = await self._store.transaction(
            compare=[tx.version(layout.controller_key) == 0, self._store.unchanged(layout.controller_epoch_key, epoch_kv)],
            success=[tx.put(layout.controller_key, layout.encode(record), lease=self._session.lease_id),
                     tx.put(layout.controller_epoch_key, layout.encode(last + 1)),
                     tx.get(layout.controller_key)])
        if not won:
            return False
        self.epoch = last + 1
        self._create_revision = responses[2][0][1].create_revision
        log.info("broker %d is the controller, epoch %d", self._session.node_id, self.epoch)
        return True

    def guard(self) -> Guard | None:
        """What fences a write of ours as controller; None while we are not the controller."""
        return self._guard() if self.epoch else None

    def _guard(self) -> Guard:
        return Guard(self._store.layout.controller_key, self._create_revision, ErrorCode.not_controller,
                     f"Broker {self._session.node_id} is no longer the controller (epoch {self.epoch}).")

    def unclean_allowed(self, image: MetadataImage, topic: str) -> bool:
        """unclean.leader.election.enable as Kafka's controller resolves it
        (ConfigurationControlManager.getTopicConfig): the topic's config, else the dynamic config
        of this controller's broker id, else the cluster default's (an empty name), else the
        static setting. A change to any of them is a metadata change, so the reconcile it
        triggers elects at once (KRaft waits for its periodic unclean.leader.election.interval.ms
        check, 5 minutes by default)."""
        record = image.topics.get(topic)
        layers = ((record.configs if record is not None else {}),
                  *(c.configs for c in (image.broker_configs.get(str(self._session.node_id)),
                                        image.broker_configs.get("")) if c is not None))
        for configs in layers:
            value = configs.get(UNCLEAN_CONFIG)
            if value is not None:
                return value.strip().lower() == "true"
        return self._unclean_default

    async def reconcile(self, image: MetadataImage, fenced: Collection[int] = ()) -> int:
        """Apply the election rules to every partition the image shows needing it; returns how
        many partition states were written. A write refused because our controller key is gone
        ends the pass and sets epoch to 0."""
        alive = image.live_broker_ids() - set(fenced)
        written = 0
        for (topic, index), state in sorted(image.partitions.items()):
            unclean = self.unclean_allowed(image, topic)
            if on_broker_change(state, alive, unclean) is None:
                continue
            try:
                new = await self._events.electing(
                    lambda rule: self._store.update_partition(topic, index, rule, [self._guard()]),
                    lambda s: on_broker_change(s, alive, unclean))
            except ClusterError as exc:
                if exc.code is ErrorCode.not_controller:
                    log.warning("%s", exc)
                    self.epoch = 0
                    return written
                log.warning("controller: %s-%d: %s", topic, index, exc)
                continue
            if new is not None:
                written += 1
                log.info("controller: %s-%d leader %d epoch %d isr %s", topic, index, new.leader,
                         new.leader_epoch, list(new.isr))
        return written
