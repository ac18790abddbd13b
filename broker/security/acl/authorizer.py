"""The authorization decision: may this principal, from this host, do this operation on this
resource? Pure logic over a set of ACL bindings — no files, no requests.

Kafka's rules (StandardAuthorizerData.authorize, AclAuthorizer before it):
- a super user (super.users) may do anything;
- the ACLs that apply to a resource are the LITERAL ones naming it, the LITERAL `*` ones of its
  type, and the PREFIXED ones whose name starts it;
- of those, a binding applies to the request when its principal is the principal or `User:*`
  and its host is the client's address or `*`;
- an applying DENY whose operation is the operation or ALL refuses, whatever else allows;
- else an applying ALLOW whose operation is the operation, ALL, or one that implies it
  (READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS) permits;
- else, when no ACL at all applies to the resource (whoever it names),
  allow.everyone.if.no.acl.found decides; otherwise it is refused.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from broker.security.acl.model import IMPLIED_BY, WILDCARD, WILDCARD_PRINCIPAL, AclBinding, Operation, PatternType, Permission, ResourceType


@dataclass(frozen=True)
class AuthorizerSettings:
    super_users: frozenset[str] = frozenset()  # super.users: principals, e.g. User:admin
    allow_everyone_if_no_acl_found: bool = False  # allow.everyone.if.no.acl.found


class Authorizer:
    def __init__(self, settings: AuthorizerSettings, acls: Iterable[AclBinding] = ()) -> None:
        self.settings = settings
        self._literal: dict[tuple[ResourceType, str], set[AclBinding]] = defaultdict(set)
        self._prefixed: dict[ResourceType, set[AclBinding]] = defaultdict(set)
        # PREFIXED bindings by (type, prefix), and the prefix lengths in use per type: a name's
        # prefixed ACLs are found with one lookup per length, not a scan of every prefix
        self._by_prefix: dict[tuple[ResourceType, str], list[AclBinding]] = defaultdict(list)
        self._prefix_lengths: dict[ResourceType, set[int]] = defaultdict(set)
        self.replace(acls)

    def replace(self, acls: Iterable[AclBinding]) -> None:
        self._literal.clear()
        self._prefixed.clear()
        self._by_prefix.clear()
        self._prefix_lengths.clear()
        for acl in acls:
            if acl.pattern_type is PatternType.PREFIXED:
                self._prefixed[acl.resource_type].add(acl)
                self._by_prefix[(acl.resource_type, acl.resource_name)].append(acl)
                self._prefix_lengths[acl.resource_type].add(len(acl.resource_name))
            else:
                self._literal[(acl.resource_type, acl.resource_name)].add(acl)

    def _applying(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        found = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found.extend(self._literal.get((resource_type, WILDCARD), ()))
        for length in self._prefix_lengths.get(resource_type, ()):
            if length <= len(name):
                found.extend(self._by_prefix.get((resource_type, name[:length]), ()))
        return found

    def authorize(self, principal: str, host: str, operation: Operation, resource_type: ResourceType,
                  name: str) -> bool:
        if principal in self.settings.super_users:
            return True
        acls = self._applying(resource_type, name)
        if not acls:
            return self.settings.allow_everyone_if_no_acl_found
        allowing = IMPLIED_BY.get(operation, frozenset({operation}))
        allowed = False
        for acl in acls:
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.host not in (host, WILDCARD):
                continue
            if acl.permission is Permission.DENY:
                if acl.operation in (operation, Operation.ALL):
                    return False
            elif acl.operation is Operation.ALL or acl.operation in allowing:
                allowed = True
        return allowed

    def authorize_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type could be allowed (Kafka's authorizeByResourceType,
        which lets an idempotent producer with WRITE on any topic in without IDEMPOTENT_WRITE):
        first Kafka's probe of a made-up name (super users, allow.everyone.if.no.acl.found), then
        an applying ALLOW binding of the operation whose own resource no applying DENY covers."""
        if self.authorize(principal, host, operation, resource_type, _PROBE_NAME):
            return True
        bindings = [a for (rtype, _), s in self._literal.items() if rtype is resource_type for a in s]
        bindings.extend(self._prefixed.get(resource_type, ()))
        applying = [a for a in bindings if a.principal in (principal, WILDCARD_PRINCIPAL)
                    and a.host in (host, WILDCARD) and a.operation in (operation, Operation.ALL)]
        denies = [a for a in applying if a.permission is Permission.DENY]
        for allow in applying:
            if allow.permission is Permission.ALLOW and not any(_covers(d, allow) for d in denies):
                return True
        return False


_PROBE_NAME = "hardcode"  # the literal name StandardAuthorizer.authorizeByResourceType asks about first


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether every name `allow` applies to is also refused by `deny`."""
    if deny.pattern_type is PatternType.LITERAL:
        if deny.resource_name == WILDCARD:
            return True
        return allow.pattern_type is PatternType.LITERAL and allow.resource_name == deny.resource_name
    return allow.resource_name.startswith(deny.resource_name) and (
        allow.pattern_type is PatternType.PREFIXED or allow.resource_name != WILDCARD)
