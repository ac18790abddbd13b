"""The ACL checks a handler makes of the request it serves: may its principal, from its host, do
this operation on this resource. RequestAuthorizer (broker/security/acl/checks.py) answers them
from the ACLs in force, reading the principal from the connection's RequestContext; with the
authorizer off every check allows."""

from __future__ import annotations

from typing import Iterable, Protocol

from wire.error_codes import ErrorCode

from broker.security.acl.model import Operation, ResourceType


class AccessChecks(Protocol):
    @property
    def enabled(self) -> bool:
        """Whether an authorizer is configured (ACLs are checked at all)."""

    def allowed(self, operation: Operation, resource_type: ResourceType, name: str) -> bool: ...

    def cluster_allowed(self, operation: Operation) -> bool: ...

    def topic_allowed(self, operation: Operation, name: str) -> bool: ...

    def group_allowed(self, operation: Operation, group_id: str) -> bool: ...

    def transactional_id_allowed(self, operation: Operation, transactional_id: str) -> bool: ...

    def allowed_on_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows the operation (Kafka's authorizeByResourceType)."""

    def denied_names(self, operation: Operation, resource_type: ResourceType, names: Iterable[str]) -> frozenset[str]:
        """The names the request may not do `operation` on."""

    def config_refusal(self, operation: Operation, config_resource_type: int, name: str) -> ErrorCode | None:
        """The error a config request on this resource gets from the ACLs, None if allowed."""
