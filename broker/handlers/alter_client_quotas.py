"""AlterClientQuotas (API 49): set or remove quotas of user / client-id / ip entities.

One result per entity, Kafka's (ClientQuotaControlManager, broker/quotas/entities.py): an
entity's changes apply all or none; INVALID_REQUEST for an unknown key, a value not above 0, a
fraction where the key is integral, an ip that is neither an address nor resolves (a host name
that resolves holds its address's connections, broker/quotas/ip_hosts.py), an ip with a user or
client-id, an entity or key named twice. `remove` drops a key (a key not set is no error);
validate_only checks and stores nothing. ALTER_CONFIGS on the cluster is needed
(CLUSTER_AUTHORIZATION_FAILED for every entity otherwise). The answer comes once the change is
stored (broker/quotas/store.py) and this broker enforces it.
"""

from __future__ import annotations

from typing import Any, Iterable

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.quotas.entities import Entity, entity_of, hosts_to_resolve, plan_alteration
from broker.quotas.store import Quotas
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    entry_cls, entity_cls = nested(cls, "EntryData"), nested(cls, "EntityData")
    results: dict[Entity, tuple[ErrorCode, str | None]]
    if not ctx.authorizer.cluster_allowed(Operation.ALTER_CONFIGS):
        results = {entity_of((d.entity_type, d.entity_name) for d in e.entity):
                   (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.") for e in request.entries}
    else:
        # resolved now, off the event loop: this broker holds the host's address once it answers
        unresolved = {host for host in hosts_to_resolve(request.entries)
                      if await ctx.client_quotas.resolve_host(host) is None}
        results = await ctx.client_quotas.alter(lambda current: _planned(current, request.entries, unresolved),
                                                request.validate_only)
    entries = tuple(
        make(entry_cls, error_code=code, error_message=message,
             entity=tuple(make(entity_cls, entity_type=t, entity_name=n) for t, n in entity))
        for entity, (code, message) in results.items())
    return make(cls, throttle_time=NO_THROTTLE, entries=entries)


def _planned(current: Quotas, entries: Iterable[Any], unresolved: set[str]
             ) -> tuple[Quotas, dict[Entity, tuple[ErrorCode, str | None]]]:
    results, after = plan_alteration(current, entries, unresolved)
    return after, results
