"""A faster death signal than the session lease: a crashed broker's port refuses connections.

The lease (broker.session.timeout.ms, 9 s by default) is the only signal that covers every
failure — a hung process, a lost network, a dead host — but it makes a crash cost 9 s of
leaderlessness. A process that died, though, leaves a sign at once: the kernel closes its
sockets (our open connection to it ends) and its listening port answers the next connect with
a refusal (ECONNREFUSED). A process that is alive but stopped, slow or cut off by a silent
firewall shows neither: its kernel still accepts, or the connect times out. So:

  - each broker holds one idle TCP connection to every other registered broker;
  - when that connection ends or cannot be made, it connects again at once; a refusal, and a
    second refusal CONFIRM_INTERVAL_S later, make the watcher *suspect* the peer: it votes
    (fencing.py), and keeps probing every RECHECK_S, withdrawing the vote once the port
    answers again;
  - anything but a refusal (a timeout, an unreachable host) is no evidence and leaves the
    decision to the lease.

A refusal is evidence, not proof: a link cut with a TCP reset refuses exactly like a dead
process. So no single watcher fences anybody: a broker's lease is revoked only once a majority
of the cluster suspects it (fencing.py), and a broker cut off from all its peers, which
suspects them all, fences none of them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import aetcd

from replica.cancellation import cancel_and_wait
from broker.cluster.etcd_layout import BrokerRegistration
from broker.cluster.metadata_image import MetadataChange, MetadataImage

log = logging.getLogger(__name__)

CONFIRM_INTERVAL_S = 0.2  # between the refusals that prove a peer dead
REFUSALS_TO_CONFIRM = 2
CONNECT_TIMEOUT_S = 2.0
RETRY_AFTER_FAILURE_S = 1.0  # after a connect failed other than by a refusal
RECHECK_S = 0.5  # between probes of a suspected peer, to withdraw the vote once it answers

# vote(peer, suspected): record or withdraw our suspicion of that incarnation (Fencing.vote)
Vote = Callable[[BrokerRegistration, bool], Awaitable[None]]


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
    def __init__(self, node_id: int, vote: Vote, listener_name: str | None = None) -> None:
        self.node_id = node_id
        self._vote = vote
        self._listener_name = listener_name  # the inter-broker listener: where peers are watched
        self._watchers: dict[tuple[int, int], asyncio.Task] = {}  # (node, broker_epoch) -> task
        self._suspected: dict[tuple[int, int], BrokerRegistration] = {}  # our votes standing
        self._withdrawals: set[asyncio.Task] = set()

    async def on_metadata(self, image: MetadataImage, change: MetadataChange) -> None:
        """A metadata listener: start and stop watchers to match the image (no I/O here)."""
        wanted = {(b, reg.broker_epoch): reg for b, reg in image.brokers.items() if b != self.node_id}
        for key in [k for k in self._watchers if k not in wanted]:
            self._watchers.pop(key).cancel()
            if (peer := self._suspected.pop(key, None)) is not None:  # that incarnation is gone
                task = asyncio.create_task(self._cast(peer, False), name=f"peer-liveness-withdraw-{key[0]}")
                self._withdrawals.add(task)
                task.add_done_callback(self._withdrawals.discard)
        for key, reg in wanted.items():
            if key not in self._watchers:
                self._watchers[key] = asyncio.create_task(self._watch(reg), name=f"peer-liveness-{key[0]}")

    async def _watch(self, peer: BrokerRegistration) -> None:
        # It sends nothing, so it needs no SASL login: a listener answers a connect the same
        # way whatever its security protocol, and that is all a refusal is about.
        address = (self._listener_name and peer.endpoint(self._listener_name)) or peer
        key = (peer.node_id, peer.broker_epoch)
        while True:
            streams = await connect_or_confirm_refusal(address.host, address.port)
            if streams is None:
                if key not in self._suspected:
                    log.warning("broker %d (%s:%d) refuses connections: suspecting it", peer.node_id,
                                address.host, address.port)
                    if await self._cast(peer, True):
                        self._suspected[key] = peer
                await asyncio.sleep(RECHECK_S)
                continue
            if key in self._suspected and await self._cast(peer, False):
                log.info("broker %d answers again: no longer suspected", peer.node_id)
                del self._suspected[key]
            reader, writer = streams
            try:
                # a broker sends nothing unasked: this returns when the connection ends (the
                # process died, or it closed us as idle after connections.max.idle.ms)
                await reader.read()
            except OSError:
                pass
            finally:
                writer.close()

    async def _cast(self, peer: BrokerRegistration, suspected: bool) -> bool:
        """Whether the vote reached etcd (if not, the watcher tries again on its next probe)."""
        try:
            await self._vote(peer, suspected)
            return True
        except aetcd.exceptions.ClientError as exc:
            log.info("broker %d: could not record suspicion %s of broker %d: %r", self.node_id, suspected,
                     peer.node_id, exc)
            return False

    async def close(self) -> None:
        await cancel_and_wait([*self._watchers.values(), *self._withdrawals])
        self._watchers.clear()
