"""A broker's liveness in etcd: its registration key under a lease that it keeps alive.

The lease's TTL is Kafka's broker.session.timeout.ms (9000 by default); a keep-alive goes out
every TTL/3. While keep-alives succeed, `brokers/<node_id>` exists and the broker counts as
alive; if they stop (crash, SIGSTOP, network loss) etcd deletes the key when the lease runs out
and the controller moves this broker's leadership elsewhere. A crashed broker's key goes
sooner: its peers see its port refuse connections, and once a majority of the brokers does,
the lease is revoked (peer_liveness.py, fencing.py).

What rests on the lease being ours (the controller's duties, fencing votes) must stop before
etcd can expire it. etcd counts the TTL from when a keep-alive *arrives*; we count it from when
we *sent* it, which is earlier, so `has_session()` turns False no later than etcd can expire
the lease (clock rates aside). Leading partitions does not rest on it (member.py says why). Listeners hear every
flip, from the timer, without waiting for the next failed keep-alive.

A broker whose lease etcd did expire registers again under a new lease (a new broker_epoch):
to the controller that is a broker that left and came back. A broker that restarts before its
previous lease ran out revokes that lease first, so its old incarnation is fenced at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable

from wire.error_codes import ErrorCode
from replica.cancellation import cancel_and_wait
from broker.cluster.etcd_layout import BrokerRegistration, Endpoint
from broker.cluster.etcd_store import EtcdStore, Guard

log = logging.getLogger(__name__)

DEFAULT_SESSION_TIMEOUT_MS = 9000  # Kafka's broker.session.timeout.ms


class BrokerSession:
    def __init__(self, store: EtcdStore, node_id: int, host: str, port: int,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS, endpoints: tuple[Endpoint, ...] = ()) -> None:
        self._store = store
        self.node_id = node_id
        self.host = host
        self.port = port
        self.endpoints = endpoints  # every listener's advertised address
        # etcd leases count whole seconds
        self.ttl_seconds = max(1, math.ceil(session_timeout_ms / 1000))
        self.lease_id = 0
        self.registration_revision = 0  # create revision of our brokers/<id> key
        self._alive = False
        self._valid_until = 0.0
        self._expiry_timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task | None = None
        self._listeners: list[Callable[[bool], None]] = []

    def has_session(self) -> bool:
        return self._alive and asyncio.get_running_loop().time() < self._valid_until

    def add_listener(self, listener: Callable[[bool], None]) -> None:
        """`listener(alive)` is called on every change of has_session()."""
        self._listeners.append(listener)

    def registration_guard(self) -> Guard:
        """Fences a write to this broker's current registration: refused once the session it
        was made in is gone (Kafka's STALE_BROKER_EPOCH)."""
        return Guard(self._store.layout.broker_key(self.node_id), self.registration_revision,
                     ErrorCode.stale_broker_epoch, f"Broker {self.node_id} lost its session (epoch {self.lease_id}).")

    async def open(self) -> None:
        await self._establish()
        self._task = asyncio.create_task(self._keep_alive(), name=f"etcd-session-{self.node_id}")

    async def close(self, revoke: bool = True) -> None:
        """Stop keep-alives; `revoke` ends the lease now (a clean shutdown: the controller moves
        leadership at once instead of after the TTL)."""
        if self._task is not None:
            await cancel_and_wait([self._task])
            self._task = None
        if revoke and self.lease_id:
            try:
                await self._store.client.revoke_lease(self.lease_id)
            except Exception as exc:  # etcd unreachable: the lease will expire on its own
                log.warning("could not revoke lease %x of broker %d: %r", self.lease_id, self.node_id, exc)
        self._set_alive(False)

    async def announce_shutdown(self) -> bool:
        """Kafka's controlled shutdown request: rewrite our registration, same lease, with
        shutting_down set, so the controller moves our leaderships and ISR places elsewhere
        while we still serve. False if our registration is no longer the one we made."""
        client, layout = self._store.client, self._store.layout
        tx = client.transactions
        key = layout.broker_key(self.node_id)
        registration = self._registration(self.lease_id, shutting_down=True)
        ok, _ = await self._store.transaction(
            compare=[tx.create(key) == self.registration_revision],
            success=[tx.put(key, layout.encode(registration), lease=self.lease_id)])
        return ok

    async def _establish(self) -> None:
        client, layout = self._store.client, self._store.layout
        tx = client.transactions
        key = layout.broker_key(self.node_id)
        sent = asyncio.get_running_loop().time()
        lease = await client.lease(self.ttl_seconds)
        registration = layout.encode(self._registration(lease.id))
        while True:
            ok, responses = await self._store.transaction(
                compare=[tx.version(key) == 0],
                success=[tx.put(key, registration, lease=lease.id), tx.get(key)],
                failure=[tx.get(key)])
            if ok:
                self.lease_id = lease.id
                self.registration_revision = responses[1][0][1].create_revision
                break
            previous = responses[0][0][1] if responses[0] else None
            if previous is not None and previous.lease:
                log.warning("broker %d: revoking lease %x of its previous registration", self.node_id, previous.lease)
                try:
                    await client.revoke_lease(previous.lease)
                except Exception as exc:  # already expired between our read and the revoke
                    log.info("revoking lease %x: %r", previous.lease, exc)
            elif previous is not None:  # a key without a lease would never go away on its own
                await client.delete(key)
        log.info("broker %d registered in etcd, lease %x, ttl %d s", self.node_id, self.lease_id, self.ttl_seconds)
        self._renewed(sent, lease.ttl)

    def _registration(self, lease_id: int, shutting_down: bool = False) -> BrokerRegistration:
        return BrokerRegistration(self.node_id, self.host, self.port, lease_id, shutting_down, self.endpoints)

    async def _keep_alive(self) -> None:
        interval = self.ttl_seconds / 3
        pause = interval
        while True:
            await asyncio.sleep(pause)
            # after a failure, try again well before the session can run out
            pause = interval / 3
            sent = asyncio.get_running_loop().time()
            try:
                reply = await self._store.client.refresh_lease(self.lease_id)
                if reply is not None and reply.TTL > 0:
                    self._renewed(sent, reply.TTL)
                    pause = interval
                    continue
                log.warning("broker %d: etcd expired lease %x; registering again", self.node_id, self.lease_id)
                self._set_alive(False)
                await self._establish()
                pause = interval
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("broker %d: etcd keep-alive failed: %r", self.node_id, exc)

    def _renewed(self, sent: float, ttl: int) -> None:
        loop = asyncio.get_running_loop()
        self._valid_until = sent + min(ttl, self.ttl_seconds)
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
        self._expiry_timer = loop.call_at(self._valid_until, self._expire)
        self._set_alive(True)

    def _expire(self) -> None:
        self._expiry_timer = None
        if asyncio.get_running_loop().time() >= self._valid_until:
            log.warning("broker %d: no etcd keep-alive for %d s; session lost", self.node_id, self.ttl_seconds)
            self._set_alive(False)

    def _set_alive(self, alive: bool) -> None:
        if alive == self._alive:
            return
        self._alive = alive
        if not alive and self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        for listener in self._listeners:
            try:
                listener(alive)
            except Exception:
                log.exception("session listener %r failed", listener)
