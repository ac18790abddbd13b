"""A faster death signal than the session lease: a crashed broker's port refuses connections.

The lease (broker.session.timeout.ms, 9 s by default) is the only signal that covers every
failure — a hung process, a lost network, a dead host — but it makes a crash cost 9 s of
leaderlessness. A process that died, though, leaves a sign at once: the kernel closes its
sockets (our open connection to it ends) and its listening port answers the next connect with
a refusal (ECONNREFUSED). A process that is alive but stopped, slow or cut off shows neither:
its kernel still accepts, or the connect times out. So:

  - each broker holds one idle TCP connection to each peer it watches: the controller watches
    every other broker, every other broker watches the controller (whose death they must
    notice without a controller to tell them), and while no controller is known, everyone;
  - when that connection ends or cannot be made, it connects again at once; a refusal, and a
    second refusal CONFIRM_INTERVAL_S later, prove the process gone: the watcher revokes the
    peer's lease by its id (the broker_epoch of the registration it watched; any etcd client
    may revoke any lease). etcd deletes the peer's registration — and the controller key, if the
    peer held it — and the controller elects new leaders from the ISR at once (controller.py);
  - anything but a refusal (a timeout, an unreachable host) proves nothing and leaves the
    decision to the lease.

Safety does not rest on this: a broker whose lease is gone refuses acks=all at the latest when
its own session timer runs out (broker_session.py), and leader epochs fence the rest. Revoking
the lease of a broker that was in fact alive would cost it a re-registration, nothing more; a
lease of an incarnation that already re-registered no longer exists, and revoking it fails
harmlessly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from replica.cancellation import cancel_and_wait
from broker.cluster.etcd_layout import BrokerRegistration
from broker.cluster.metadata_image import MetadataChange, MetadataImage

log = logging.getLogger(__name__)

CONFIRM_INTERVAL_S = 0.2  # between the refusals that prove a peer dead
REFUSALS_TO_CONFIRM = 2
CONNECT_TIMEOUT_S = 2.0
RETRY_AFTER_FAILURE_S = 1.0  # after a connect failed other than by a refusal

Revoke = Callable[[BrokerRegistration], Awaitable[None]]


def watched_peers(image: MetadataImage, node_id: int) -> dict[int, BrokerRegistration]:
    """Whom `node_id` watches: every other broker while it is the controller or no controller
    is known, else only the controller."""
    controller = image.controller.node_id if image.controller is not None else None
    return {b: reg for b, reg in image.brokers.items()
            if b != node_id and (controller in (None, node_id) or b == controller)}


Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def connect_or_confirm_refusal(host: str, port: int) -> Streams | None:
    """Connect until a connection holds (its streams) or the port refused REFUSALS_TO_CONFIRM
    times in a row, CONFIRM_INTERVAL_S apart (None)."""
    refusals = 0
    while True:
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
        except ConnectionRefusedError:
            refusals += 1
            if refusals >= REFUSALS_TO_CONFIRM:
                return None
            await asyncio.sleep(CONFIRM_INTERVAL_S)
        except (OSError, asyncio.TimeoutError):
            refusals = 0  # unreachable or silent: not a proof, the lease decides
            await asyncio.sleep(RETRY_AFTER_FAILURE_S)


class PeerLiveness:
    def __init__(self, node_id: int, revoke: Revoke, listener_name: str | None = None) -> None:
        self.node_id = node_id
        self._revoke = revoke
        self._listener_name = listener_name  # the inter-broker listener: where peers are watched
        self._watchers: dict[tuple[int, int], asyncio.Task] = {}  # (node, broker_epoch) -> task

    async def on_metadata(self, image: MetadataImage, change: MetadataChange) -> None:
        """A metadata listener: start and stop watchers to match the image (no I/O here)."""
        wanted = {(b, reg.broker_epoch): reg for b, reg in watched_peers(image, self.node_id).items()}
        for key in [k for k in self._watchers if k not in wanted]:
            self._watchers.pop(key).cancel()
        for key, reg in wanted.items():
            if key not in self._watchers:
                self._watchers[key] = asyncio.create_task(self._watch(reg), name=f"peer-liveness-{key[0]}")

    async def _watch(self, peer: BrokerRegistration) -> None:
        # It sends nothing, so it needs no SASL login: a listener answers a connect the same
        # way whatever its security protocol, and that is all a refusal is about.
        address = (self._listener_name and peer.endpoint(self._listener_name)) or peer
        while (streams := await connect_or_confirm_refusal(address.host, address.port)) is not None:
            reader, writer = streams
            try:
                # a broker sends nothing unasked: this returns when the connection ends (the
                # process died, or it closed us as idle after connections.max.idle.ms)
                await reader.read()
            except OSError:
                pass
            finally:
                writer.close()
        log.warning("broker %d (%s:%d) refuses connections: revoking its lease %x", peer.node_id, address.host,
                    address.port, peer.broker_epoch)
        try:
            await self._revoke(peer)
        except Exception as exc:  # gone already: it re-registered, or etcd expired it
            log.info("revoking lease %x of broker %d: %r", peer.broker_epoch, peer.node_id, exc)

    async def close(self) -> None:
        await cancel_and_wait(self._watchers.values())
        self._watchers.clear()
