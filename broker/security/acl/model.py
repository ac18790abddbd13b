"""Kafka's ACL vocabulary with its wire codes, one ACL binding, and the filters that
DescribeAcls / DeleteAcls match bindings with.

The codes are Kafka's (org.apache.kafka.common.resource.ResourceType, PatternType,
acl.AclOperation, acl.AclPermissionType); UNKNOWN (0) and ANY (1) appear only in filters.
Names on the wire and in the ACL file are the upper-case names below.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2  # filters only: literal, wildcard or prefix bindings that would apply to the name
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"  # a LITERAL resource name matching every name; also the any-principal / any-host value
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name, as Kafka's

# An ALLOW of the key grants these too (Kafka's AuthorizerUtils / StandardAuthorizer): whoever
# may read, write, delete or alter a resource may see it; whoever may alter configs may read them.
IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE,
                                   Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}


class InvalidAcl(ValueError):
    """A binding CreateAcls must refuse (INVALID_REQUEST), with Kafka's reason."""


@dataclass(frozen=True, order=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def validate(self) -> None:
        """Kafka's checks before an ACL is stored (AclControlManager.validateNewAcl)."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAcl(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (Operation.UNKNOWN, Operation.ANY):
            raise InvalidAcl(f"Invalid operation {self.operation.name}")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise InvalidAcl(f"Invalid permissionType {self.permission.name}")
        if not self.resource_name:
            raise InvalidAcl("Resource name should not be empty")
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if not self.principal.startswith("User:") or len(self.principal) == len("User:"):
            raise InvalidAcl(f"Could not parse principal from `{self.principal}` (no colon is present "
                             "separating the principal type from the principal name)")
        if not self.host:
            raise InvalidAcl("Host should not be empty")

    def to_json(self) -> dict:
        return {"resource_type": self.resource_type.name, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type.name, "principal": self.principal, "host": self.host,
                "operation": self.operation.name, "permission": self.permission.name}

    @classmethod
    def from_json(cls, d: dict) -> "AclBinding":
        return cls(ResourceType[d["resource_type"]], d["resource_name"], PatternType[d["pattern_type"]],
                   d["principal"], d["host"], Operation[d["operation"]], Permission[d["permission"]])


@dataclass(frozen=True)
class AclFilter:
    """DescribeAcls' and DeleteAcls' filter: None for a null string (any), ANY for an enum."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    def matches(self, acl: AclBinding) -> bool:
        return (self.resource_type in (ResourceType.ANY, acl.resource_type)
                and self._resource_matches(acl)
                and self.principal in (None, acl.principal)
                and self.host in (None, acl.host)
                and self.operation in (Operation.ANY, acl.operation)
                and self.permission in (Permission.ANY, acl.permission))

    def _resource_matches(self, acl: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type is PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(acl.resource_name)
        if self.pattern_type not in (PatternType.ANY, acl.pattern_type):
            return False
        return self.resource_name in (None, acl.resource_name)
