"""Reads and compare-and-swap writes of the cluster's etcd keys (layout in etcd_layout.py).

Every read-modify-write of one key goes through `compare_and_swap`: read the key, let a pure
rule decide the next value from what was read (for a partition state, leader_election.py),
and write it in a transaction that succeeds only if the key's mod revision is still the one
read (or the key still absent). A lost race re-reads and decides again, so the rule always
judges the value it replaces. `Guard`s add conditions on other keys — the writer still holds
the controller key, or its broker registration — which fence a controller or a leader whose
etcd session is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import aetcd

from wire.error_codes import ErrorCode
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import (AclList, BrokerConfigs, ClientQuotaList, DelegationTokenRecord, EtcdLayout,
                                        FinalizedFeatures, GroupConfigs, PartitionState, ScramUser)

log = logging.getLogger(__name__)

# Each failed attempt means another writer succeeded, so the cluster progresses; the bound only
# stops a writer that keeps losing from spinning forever.
MAX_CAS_ATTEMPTS = 100

T = TypeVar("T")


@dataclass(frozen=True)
class Swap(Generic[T]):
    """What one compare-and-swap attempt decided from the record it read: the etcd operations
    to apply while the key is unchanged (none: nothing to write), and the caller's answer."""

    writes: Sequence
    result: T


@dataclass(frozen=True)
class Guard:
    """The transaction applies only while `key` is the incarnation created at `create_revision`;
    otherwise the write is refused with ClusterError(code, message)."""

    key: bytes
    create_revision: int
    code: ErrorCode
    message: str


class EtcdStore:
    def __init__(self, client: aetcd.Client, layout: EtcdLayout) -> None:
        self.client = client
        self.layout = layout
        # The etcd revision the last compare_and_swap wrote at (or read, when it wrote nothing):
        # an image at this revision or later shows its result, or a change made after it.
        # Read on the caller's next line, before it awaits anything else.
        self.last_swap_revision = 0

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

    def unchanged(self, key: bytes, current) -> object:
        """The transaction compare that holds while `key` is as `current` (its KeyValue, None
        when absent) was read: same mod revision, or still absent."""
        tx = self.client.transactions
        return tx.mod(key) == current.mod_revision if current is not None else tx.version(key) == 0

    async def compare_and_swap(self, key: bytes, attempt: Callable[[Any], Swap[T]], doing: str,
                               guards: Sequence[Guard] = ()) -> T:
        """Read `key`, let `attempt(its record, or None when absent)` decide, and apply the
        writes it returns in a transaction that holds only while the key (and every guard) is
        as read; a lost race reads again and decides again, so `attempt` always judges the
        value it replaces. `attempt` may raise ClusterError to refuse. `doing` names the change
        in the error of a writer that lost MAX_CAS_ATTEMPTS races."""
        tx = self.client.transactions
        for _ in range(MAX_CAS_ATTEMPTS):
            current = await self.client.get(key)
            swap = attempt(self.layout.decode(key, current.value)[1] if current is not None else None)
            if not swap.writes:
                self.last_swap_revision = current.mod_revision if current is not None else 0
                return swap.result
            ok, responses = await self.transaction(
                compare=[self.unchanged(key, current), *self._guard_compares(guards)],
                success=list(swap.writes), failure=[tx.get(g.key) for g in guards])
            if ok:
                written = responses[0]
                self.last_swap_revision = getattr(written, written.WhichOneof("response")).header.revision
                return swap.result
            self._check_guards(guards, responses)
            log.debug("%s changed under us; re-reading", key.decode())
        raise ClusterError(ErrorCode.unknown_server_error, f"Gave up {doing} after {MAX_CAS_ATTEMPTS} lost races.")

    async def update_partition(self, topic: str, index: int,
                               decide: Callable[[PartitionState], PartitionState | None],
                               guards: Sequence[Guard] = ()) -> PartitionState | None:
        """Compare-and-swap one partition state; returns what was written, or None when
        `decide` wanted no change. `decide` may raise ClusterError to refuse."""
        key = self.layout.partition_key(topic, index)

        def attempt(state: PartitionState | None) -> Swap[PartitionState | None]:
            if state is None:
                raise ClusterError(ErrorCode.unknown_topic_or_partition,
                                   f"This server does not host this topic-partition: {topic}-{index}.")
            wanted = decide(state)
            if wanted is None:
                return Swap((), None)
            return Swap([self.client.transactions.put(key, self.layout.encode(wanted))], wanted)

        return await self.compare_and_swap(key, attempt, f"changing {topic}-{index}", guards)

    async def update_scram_user(self, user: str, decide: Callable[[dict], dict]) -> ScramUser | None:
        """Compare-and-swap one user's SCRAM credentials: `decide(mechanism -> fields)` gives
        the new map; an empty one deletes the key. Returns what was written (None: deleted)."""
        key = self.layout.scram_key(user)

        def attempt(current: ScramUser | None) -> Swap[ScramUser | None]:
            wanted = ScramUser(user, decide(dict(current.credentials) if current is not None else {}))
            return self._put_or_delete(key, wanted, bool(wanted.credentials))

        return await self.compare_and_swap(key, attempt, f"changing the SCRAM credentials of {user}")

    async def update_acls(self, decide: Callable[[tuple[dict, ...]], tuple[dict, ...]]) -> AclList:
        """Compare-and-swap the cluster's ACL list: `decide(current entries)` gives the new
        ones (called again after a lost race). Returns what was written."""
        key = self.layout.acls_key

        def attempt(current: AclList | None) -> Swap[AclList]:
            wanted = AclList(decide(current.entries if current is not None else ()))
            return Swap([self.client.transactions.put(key, self.layout.encode(wanted))], wanted)

        return await self.compare_and_swap(key, attempt, "changing the ACLs")

    async def update_client_quotas(self, decide: Callable[[tuple[dict, ...]], tuple[dict, ...]]) -> ClientQuotaList:
        """Compare-and-swap the cluster's client quotas, as update_acls. Returns what was written."""
        key = self.layout.client_quotas_key

        def attempt(current: ClientQuotaList | None) -> Swap[ClientQuotaList]:
            wanted = ClientQuotaList(decide(current.entries if current is not None else ()))
            return Swap([self.client.transactions.put(key, self.layout.encode(wanted))], wanted)

        return await self.compare_and_swap(key, attempt, "changing the client quotas")

    async def update_features(self, decide: Callable[[FinalizedFeatures | None], FinalizedFeatures]) -> FinalizedFeatures:
        """Compare-and-swap the cluster's finalized features: `decide(current)` gives the new
        record (or raises to refuse), called again after a lost race. Returns what was written."""
        key = self.layout.features_key

        def attempt(current: FinalizedFeatures | None) -> Swap[FinalizedFeatures]:
            wanted = decide(current)
            return Swap([self.client.transactions.put(key, self.layout.encode(wanted))], wanted)

        return await self.compare_and_swap(key, attempt, "changing the finalized features")

    async def update_group_configs(self, group: str, decide: Callable[[dict], dict]) -> GroupConfigs | None:
        """Compare-and-swap one group's config overrides: `decide(current)` gives the new ones
        (or raises to refuse); an empty map deletes the key. Returns what was written (None: deleted)."""
        key = self.layout.group_configs_key(group)

        def attempt(current: GroupConfigs | None) -> Swap[GroupConfigs | None]:
            wanted = GroupConfigs(group, decide(dict(current.configs) if current is not None else {}))
            return self._put_or_delete(key, wanted, bool(wanted.configs))

        return await self.compare_and_swap(key, attempt, f"changing the configs of group {group}")

    async def update_delegation_token(self, token_id: str, decide: Callable[[dict | None], dict | None]
                                      ) -> DelegationTokenRecord | None:
        """Compare-and-swap one delegation token: `decide(its fields, None when absent)` gives the
        new fields, or None to delete it (or to leave it absent). Returns what was written."""
        key = self.layout.delegation_token_key(token_id)

        def attempt(current: DelegationTokenRecord | None) -> Swap[DelegationTokenRecord | None]:
            wanted = decide(dict(current.info) if current is not None else None)
            if wanted is None and current is None:
                return Swap((), None)
            return self._put_or_delete(key, DelegationTokenRecord(token_id, wanted or {}), wanted is not None)

        return await self.compare_and_swap(key, attempt, f"changing delegation token {token_id}")
    async def update_broker_configs(self, name: str, decide: Callable[[dict], dict]) -> BrokerConfigs | None:
        """Compare-and-swap the dynamic configs of broker `name` ("" the cluster default), as
        update_group_configs does a group's. Returns what was written (None: deleted)."""
        key = self.layout.broker_configs_key(name)

        def attempt(current: BrokerConfigs | None) -> Swap[BrokerConfigs | None]:
            wanted = BrokerConfigs(name, decide(dict(current.configs) if current is not None else {}))
            return self._put_or_delete(key, wanted, bool(wanted.configs))

        return await self.compare_and_swap(key, attempt, f"changing the dynamic configs of broker {name!r}")

    def _put_or_delete(self, key: str, value, keep: bool) -> Swap:
        """An attempt's writes: `value` at `key`, or (`keep` false: nothing left) the key deleted."""
        tx = self.client.transactions
        return Swap([tx.put(key, self.layout.encode(value))], value) if keep else Swap([tx.delete(key)], None)

    async def allocate_producer_ids(self, size: int) -> int:
        """Reserve [start, start + size) for the caller alone; returns start."""
        key = self.layout.producer_ids_key

        def attempt(current: int | None) -> Swap[int]:
            start = current if current is not None else 0
            return Swap([self.client.transactions.put(key, self.layout.encode(start + size))], start)

        return await self.compare_and_swap(key, attempt, "allocating producer ids")
