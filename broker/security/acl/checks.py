"""The one call a handler makes to ask whether its request may do something.

The principal and client address come from the connection's RequestContext
(request_context.py). With the authorizer off (no ACL store, the default) every check is one
attribute test and returns True; handlers call these once per resource named in a request, never
per record. Handlers reach them as `ctx.authorizer` (broker/api/context.py).

A request with no RequestContext is the broker's own (none arrives over a listener without
one), and is allowed.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol

from wire.error_codes import ErrorCode
from wire.config_codes import ConfigResourceType

from broker.net.request_context import current_request
from broker.security.acl.authorizer import Authorizer
from broker.security.acl.model import CLUSTER_NAME, Operation, ResourceType


def _who() -> tuple[str, str] | None:
    context = current_request.get()
    if context is None:
        return None
    host = context.peer.rsplit(":", 1)[0].strip("[]")
    return context.principal, host


class AclSource(Protocol):
    """What holds the ACLs in force: the local file's store or etcd's (store.py, cluster_store.py)."""

    @property
    def authorizer(self) -> Authorizer: ...


# DescribeConfigs / AlterConfigs resource types: TOPIC is checked on the topic, GROUP on the
# group; BROKER and BROKER_LOGGER on the cluster (Kafka's ConfigHelper / AuthHelper).
_CONFIG_TOPIC, _CONFIG_BROKERS = ConfigResourceType.TOPIC, (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)


class RequestAuthorizer:
    """The ACL checks of the request being handled, against the store `acls()` returns (None: the
    authorizer is off and everything is allowed)."""

    def __init__(self, acls: Callable[[], AclSource | None]) -> None:
        self._acls = acls

    @property
    def enabled(self) -> bool:
        return self._acls() is not None

    def allowed(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        store = self._acls()
        if store is None:
            return True
        who = _who()
        return who is None or store.authorizer.authorize(who[0], who[1], operation, resource_type, name)

    def cluster_allowed(self, operation: Operation) -> bool:
        return self.allowed(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def topic_allowed(self, operation: Operation, name: str) -> bool:
        return self.allowed(operation, ResourceType.TOPIC, name)

    def group_allowed(self, operation: Operation, group_id: str) -> bool:
        return self.allowed(operation, ResourceType.GROUP, group_id)

    def transactional_id_allowed(self, operation: Operation, transactional_id: str) -> bool:
        return self.allowed(operation, ResourceType.TRANSACTIONAL_ID, transactional_id)

    def allowed_on_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows the operation (Kafka's authorizeByResourceType)."""
        store = self._acls()
        if store is None:
            return True
        who = _who()
        return who is None or store.authorizer.authorize_any(who[0], who[1], operation, resource_type)

    def denied_names(self, operation: Operation, resource_type: ResourceType, names: Iterable[str]) -> frozenset[str]:
        """The names the request may not do `operation` on; empty at once with the authorizer off."""
        if self._acls() is None:
            return frozenset()
        return frozenset(n for n in set(names) if not self.allowed(operation, resource_type, n))

    def config_refusal(self, operation: Operation, config_resource_type: int, name: str) -> ErrorCode | None:
        """The error a config request on this resource gets from the ACLs, None if allowed."""
        if self._acls() is None:
            return None
        if config_resource_type == _CONFIG_TOPIC:
            return None if self.topic_allowed(operation, name) else ErrorCode.topic_authorization_failed
        if config_resource_type == ConfigResourceType.GROUP:
            return None if self.group_allowed(operation, name) else ErrorCode.group_authorization_failed
        if config_resource_type in _CONFIG_BROKERS:
            return None if self.cluster_allowed(operation) else ErrorCode.cluster_authorization_failed
        return None
