"""DescribeAcls' request and DeleteAcls' filters as an AclFilter, and bindings back into the
wire's grouping; shared by describe_acls.py and delete_acls.py."""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8

from broker.security.acl.model import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType


class InvalidFilter(ValueError):
    """A filter with an unknown code (INVALID_REQUEST)."""


def acl_filter(f: Any) -> AclFilter:
    """`f`: DescribeAcls' request or a DeleteAcls filter (kio's)."""
    try:
        parsed = AclFilter(ResourceType(f.resource_type_filter), f.resource_name_filter,
                           PatternType(f.pattern_type_filter), f.principal_filter, f.host_filter,
                           Operation(f.operation), Permission(f.permission_type))
    except ValueError as exc:
        raise InvalidFilter(f"Unknown code in ACL filter: {exc}") from None
    if 0 in (parsed.resource_type, parsed.pattern_type, parsed.operation, parsed.permission):  # each one's UNKNOWN
        raise InvalidFilter("ACL filter with an UNKNOWN element")
    return parsed


def wire_codes(acl: AclBinding) -> dict[str, Any]:
    return dict(resource_type=i8(acl.resource_type), resource_name=acl.resource_name,
                pattern_type=i8(acl.pattern_type), principal=acl.principal, host=acl.host,
                operation=i8(acl.operation), permission_type=i8(acl.permission))
