"""Client quota entities, their keys, and Kafka's rules for altering and describing them.

An entity is a set of (type, name) pairs: `user`, `client-id`, both, or `ip`; a name of None is
the type's default entity (kafka-configs' `--entity-default`). Here it is a tuple of pairs sorted
by type, so it can key a dict and compares equal however the request ordered its components.

The checks are Kafka 4.3's: AlterClientQuotas as the controller's ClientQuotaControlManager,
DescribeClientQuotas as the broker's ClientQuotasImage.describe. Every refusal is
INVALID_REQUEST with Kafka's message, except a filter naming an unknown entity type, which Kafka
answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from wire.error_codes import ErrorCode
from broker.quotas.ip_hosts import address

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# The keys each kind of entity takes, with whether the value must be whole (Kafka's LONG / INT
# config types) and the largest it may be; request_percentage and controller_mutation_rate are
# DOUBLE. QuotaConfig.userAndClientQuotaConfigs / ipConfigs.
_LONG_MAX = 2 ** 63 - 1
_INT_MAX = 2 ** 31 - 1
USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: (True, _LONG_MAX, "a LONG"),
    CONSUMER_BYTE_RATE: (True, _LONG_MAX, "a LONG"),
    REQUEST_PERCENTAGE: (False, None, None),
    CONTROLLER_MUTATION_RATE: (False, None, None),
}
IP_KEYS = {CONNECTION_CREATION_RATE: (True, _INT_MAX, "an INT")}

Entity = tuple[tuple[str, str | None], ...]

# DescribeClientQuotas' match types
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class QuotaRequestError(Exception):
    """A request Kafka refuses: `code` is the error, the message Kafka's."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def entity_of(pairs) -> Entity:
    return tuple(sorted(pairs))


def describe_entity(entity: Entity) -> str:
    """As Kafka's ClientQuotaEntity.toString names it in messages."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def hosts_to_resolve(entries) -> set[str]:
    """The ip entity names that are not addresses: Kafka takes them if they resolve
    (InetAddress.getByName), which the handler asks off the event loop (ip_hosts.py)."""
    return {d.entity_name for e in entries for d in e.entity
            if d.entity_type == IP and d.entity_name and address(d.entity_name) is None}


def check_entity(pairs: list[tuple[str, str | None]], unresolved: set[str]) -> dict:
    """The keys an entity may set, or QuotaRequestError (validateEntity + configKeysForEntityType)."""
    if not pairs:
        raise QuotaRequestError(ErrorCode.invalid_request, "Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for entity_type, name in pairs:
        if entity_type in seen:
            raise QuotaRequestError(ErrorCode.invalid_request,
                                    f"Invalid client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in ENTITY_TYPES:
            raise QuotaRequestError(ErrorCode.invalid_request, f"Unhandled client quota entity type: {entity_type}")
        seen[entity_type] = name
        if name is not None and name == "":
            raise QuotaRequestError(ErrorCode.invalid_request, f"Empty {entity_type} not supported")
    if IP in seen:
        if USER in seen or CLIENT_ID in seen:
            raise QuotaRequestError(ErrorCode.invalid_request, "Invalid quota entity combination, IP entity should"
                                                       "not be combined with User or ClientId")
        if seen[IP] in unresolved:
            raise QuotaRequestError(ErrorCode.invalid_request, f"{seen[IP]} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_CLIENT_KEYS


def check_value(keys: dict, key: str, value: float) -> None:
    """validateQuotaKeyValue: a known key, above 0, whole where the key's type is integral."""
    spec = keys.get(key)
    if spec is None:
        raise QuotaRequestError(ErrorCode.invalid_request, f"Invalid configuration key {key}")
    if not value > 0.0:
        raise QuotaRequestError(ErrorCode.invalid_request, f"Quota {key} must be greater than 0")
    integral, largest, type_name = spec
    if not integral:
        return
    if value > largest:
        raise QuotaRequestError(ErrorCode.invalid_request, f"Proposed value for {key} is too large for {type_name}.")
    if abs(value % 1.0) > 1e-6:
        raise QuotaRequestError(ErrorCode.invalid_request, f"{key} cannot be a fractional value.")


@dataclass(frozen=True)
class QuotaFilter:
    """A DescribeClientQuotas filter: names each exact (None = the default entity) or any."""

    exact: dict[str, str | None]
    any_of: frozenset[str]
    strict: bool

    def matches(self, entity: Entity) -> bool:
        names = dict(entity)
        if self.strict and len(names) != len(self.exact) + len(self.any_of):
            return False
        if any(t not in names or names[t] != n for t, n in self.exact.items()):
            return False
        return all(t in names for t in self.any_of)


def parse_filter(components, strict: bool) -> QuotaFilter:
    """ClientQuotasImage.describe's checks of a filter's components."""
    exact: dict[str, str | None] = {}
    any_of: set[str] = set()
    for c in components:
        entity_type, match_type, match = c.entity_type, c.match_type, c.match
        if not entity_type:
            raise QuotaRequestError(ErrorCode.invalid_request, "Invalid empty entity type.")
        if entity_type in exact or entity_type in any_of:
            raise QuotaRequestError(ErrorCode.invalid_request,
                                    f"Entity type {entity_type} cannot appear more than once in the filter.")
        if entity_type not in ENTITY_TYPES:
            raise QuotaRequestError(ErrorCode.unsupported_version, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaRequestError(ErrorCode.invalid_request,
                                        "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaRequestError(ErrorCode.invalid_request,
                                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaRequestError(ErrorCode.invalid_request,
                                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            any_of.add(entity_type)
        else:
            raise QuotaRequestError(ErrorCode.invalid_request, f"Unknown match type {match_type}")
    named = set(exact) | any_of
    if IP in named and (USER in named or CLIENT_ID in named):
        raise QuotaRequestError(ErrorCode.invalid_request, "Invalid entity filter component combination. IP filter "
                                                   "component should not be used with user or clientId filter "
                                                   "component.")
    return QuotaFilter(exact, frozenset(any_of), strict)


def plan_alteration(current: dict[Entity, dict[str, float]], entries: Iterable[Any],
                    unresolved: set[str]) -> tuple[dict[Entity, tuple[ErrorCode, str | None]],
                                               dict[Entity, dict[str, float]]]:
    """AlterClientQuotas' entries against the current quotas: ({entity: (code, message)} in the
    order entities were first named, the quotas after the valid entries). Kafka's
    ClientQuotaControlManager answers once per entity: an entry whose entity already has a result
    (named twice, or a key given twice in it) gets "Ignoring duplicate entity", and what an
    earlier entry of that entity changed still applies."""
    results: dict[Entity, tuple[ErrorCode, str | None]] = {}
    after = {e: dict(q) for e, q in current.items()}
    for entry in entries:
        pairs = [(d.entity_type, d.entity_name) for d in entry.entity]
        entity = entity_of(pairs)
        ops: dict[str, float | None] = {}
        for op in entry.ops:
            if op.key in ops:
                results[entity] = (ErrorCode.invalid_request, "duplicate key")  # replaced just below, as Kafka does
            ops[op.key] = None if op.remove else op.value
        if entity in results:
            results[entity] = (ErrorCode.invalid_request, f"Ignoring duplicate entity {describe_entity(entity)}")
            continue
        try:
            keys = check_entity(pairs, unresolved)
            wanted = dict(after.get(entity, {}))
            for key, value in ops.items():
                if value is None:
                    wanted.pop(key, None)
                else:
                    check_value(keys, key, value)
                    wanted[key] = float(value)
        except QuotaRequestError as exc:
            results[entity] = (exc.code, exc.message)
            continue
        if wanted:
            after[entity] = wanted
        else:
            after.pop(entity, None)
        results[entity] = (ErrorCode.none, None)
    return results, after
