"""Reads and compare-and-swap writes of the cluster's etcd keys (layout in etcd_layout.py).

Every write of a partition state goes through `update_partition`: read the key, let a pure
rule (leader_election.py) decide the next state from what was read, and write it in a
transaction that succeeds only if the key's mod revision is still the one read. A lost race
re-reads and decides again, so the rule always judges the state it replaces. `Guard`s add
conditions on other keys — the writer still holds the controller key, or its broker
registration — which fence a controller or a leader whose etcd session is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import aetcd

from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import AclList, EtcdLayout, PartitionState, ScramUser

log = logging.getLogger(__name__)

# Each failed attempt means another writer succeeded, so the cluster progresses; the bound only
# stops a writer that keeps losing from spinning forever.
MAX_CAS_ATTEMPTS = 100


@dataclass(frozen=True)
class Guard:
    """The transaction applies only while `key` is the incarnation created at `create_revision`;
    otherwise the write is refused with ClusterError(code, message)."""

    key: bytes
    create_revision: int
    code: str
    message: str


class EtcdStore:
    def __init__(self, client: aetcd.Client, layout: EtcdLayout) -> None:
        self.client = client
        self.layout = layout

    async def load(self) -> tuple[list[tuple[bytes, bytes, int]], int]:
        """Every key under the prefix as (key, value, mod_revision), and the store revision
        they were read at (a watch from revision + 1 misses nothing)."""
        result = await self.client.get_prefix(self.layout.prefix)
        return [(kv.key, kv.value, kv.mod_revision) for kv in result], result.header.revision

    async def transaction(self, compare: list, success: list, failure: Sequence = ()):
        return await self.client.transaction(compare=compare, success=success, failure=list(failure))

    def _guard_compares(self, guards: Sequence[Guard]) -> list:
        return [self.client.transactions.create(g.key) == g.create_revision for g in guards]

    def _check_guards(self, guards: Sequence[Guard], responses: list) -> None:
        """After a failed transaction whose failure branch read each guard key: raise for the
        first guard that no longer holds."""
        for guard, found in zip(guards, responses):
            if not found or found[0][1].create_revision != guard.create_revision:
                raise ClusterError(guard.code, guard.message)

    async def update_partition(self, topic: str, index: int,
                               decide: Callable[[PartitionState], PartitionState | None],
                               guards: Sequence[Guard] = ()) -> PartitionState | None:
        """Compare-and-swap one partition state; returns what was written, or None when
        `decide` wanted no change. `decide` may raise ClusterError to refuse."""
        key = self.layout.partition_key(topic, index)
        tx = self.client.transactions
        for _ in range(MAX_CAS_ATTEMPTS):
            current = await self.client.get(key)
            if current is None:
                raise ClusterError("unknown_topic_or_partition",
                                   f"This server does not host this topic-partition: {topic}-{index}.")
            _, state = self.layout.decode(key, current.value)
            wanted = decide(state)
            if wanted is None:
                return None
            ok, responses = await self.transaction(
                compare=[tx.mod(key) == current.mod_revision, *self._guard_compares(guards)],
                success=[tx.put(key, self.layout.encode(wanted))],
                failure=[tx.get(g.key) for g in guards])
            if ok:
                return wanted
            self._check_guards(guards, responses)
            log.debug("partition %s-%d changed under us; re-reading", topic, index)
        raise ClusterError("unknown_server_error",
                           f"Gave up changing {topic}-{index} after {MAX_CAS_ATTEMPTS} lost races.")

    async def update_scram_user(self, user: str, decide: Callable[[dict], dict]) -> ScramUser | None:
        """Compare-and-swap one user's SCRAM credentials: `decide(mechanism -> fields)` gives
        the new map; an empty one deletes the key. Returns what was written (None: deleted)."""
        key = self.layout.scram_key(user)
        tx = self.client.transactions
        for _ in range(MAX_CAS_ATTEMPTS):
            current = await self.client.get(key)
            unchanged = tx.mod(key) == current.mod_revision if current is not None else tx.version(key) == 0
            before = self.layout.decode(key, current.value)[1].credentials if current is not None else {}
            wanted = ScramUser(user, decide(dict(before)))
            write = tx.put(key, self.layout.encode(wanted)) if wanted.credentials else tx.delete(key)
            ok, _ = await self.transaction(compare=[unchanged], success=[write])
            if ok:
                return wanted if wanted.credentials else None
        raise ClusterError("unknown_server_error",
                           f"Gave up changing the SCRAM credentials of {user} after {MAX_CAS_ATTEMPTS} lost races.")

    async def update_acls(self, decide: Callable[[tuple[dict, ...]], tuple[dict, ...]]) -> AclList:
        """Compare-and-swap the cluster's ACL list: `decide(current entries)` gives the new
        ones (called again after a lost race). Returns what was written."""
        key = self.layout.acls_key
        tx = self.client.transactions
        for _ in range(MAX_CAS_ATTEMPTS):
            current = await self.client.get(key)
            unchanged = tx.mod(key) == current.mod_revision if current is not None else tx.version(key) == 0
            before = self.layout.decode(key, current.value)[1].entries if current is not None else ()
            wanted = AclList(decide(before))
            ok, _ = await self.transaction(compare=[unchanged], success=[tx.put(key, self.layout.encode(wanted))])
            if ok:
                return wanted
        raise ClusterError("unknown_server_error", f"Gave up changing the ACLs after {MAX_CAS_ATTEMPTS} lost races.")

    async def allocate_producer_ids(self, size: int) -> int:
        """Reserve [start, start + size) for the caller alone; returns start."""
        key = self.layout.producer_ids_key
        tx = self.client.transactions
        for _ in range(MAX_CAS_ATTEMPTS):
            current = await self.client.get(key)
            start = int(current.value) if current is not None else 0
            unchanged = tx.mod(key) == current.mod_revision if current is not None else tx.version(key) == 0
            ok, _ = await self.transaction(compare=[unchanged],
                                           success=[tx.put(key, self.layout.encode(start + size))])
            if ok:
                return start
        raise ClusterError("unknown_server_error",
                           f"Gave up allocating producer ids after {MAX_CAS_ATTEMPTS} lost races.")
