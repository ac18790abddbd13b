"""The authorizer's decision against a plainly written oracle of Kafka's rules (Hypothesis), the
rules Kafka documents as examples, DescribeAcls/DeleteAcls filters, and the ACL file."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.security.acl.authorizer import Authorizer, AuthorizerSettings
from broker.security.acl.model import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from broker.security.acl.store import AclStore

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
O = Operation
NAMES = ["a", "a.", "a.b", "ab", "b", "*"]
PRINCIPALS = ["User:alice", "User:bob", "User:*"]
HOSTS = ["127.0.0.1", "10.0.0.1", "*"]
OPERATIONS = [o for o in Operation if o not in (O.UNKNOWN, O.ANY)]

bindings = st.builds(AclBinding, st.sampled_from([TOPIC, GROUP]), st.sampled_from(NAMES),
                     st.sampled_from([LITERAL, PREFIXED]), st.sampled_from(PRINCIPALS), st.sampled_from(HOSTS),
                     st.sampled_from(OPERATIONS), st.sampled_from([ALLOW, DENY]))


def oracle(acls, supers, allow_everyone, principal, host, op, rtype, name) -> bool:
    if principal in supers:
        return True
    on_resource = [a for a in acls if a.resource_type == rtype and (
        (a.pattern_type == LITERAL and a.resource_name in (name, "*"))
        or (a.pattern_type == PREFIXED and name[:len(a.resource_name)] == a.resource_name))]
    if not on_resource:
        return allow_everyone
    mine = [a for a in on_resource if a.principal in (principal, "User:*") and a.host in (host, "*")]
    if any(a.permission == DENY and a.operation in (op, O.ALL) for a in mine):
        return False
    implied = {op}
    if op == O.DESCRIBE:
        implied |= {O.READ, O.WRITE, O.DELETE, O.ALTER}
    if op == O.DESCRIBE_CONFIGS:
        implied.add(O.ALTER_CONFIGS)
    return any(a.permission == ALLOW and (a.operation == O.ALL or a.operation in implied) for a in mine)


@settings(max_examples=1500)
@given(st.lists(bindings, max_size=8), st.booleans(), st.booleans(), st.sampled_from(PRINCIPALS[:2]),
       st.sampled_from(HOSTS[:2]), st.sampled_from(OPERATIONS), st.sampled_from([TOPIC, GROUP]),
       st.sampled_from(NAMES[:5]))
def test_decision_matches_the_oracle(acls, alice_super, allow_everyone, principal, host, op, rtype, name):
    supers = frozenset({"User:alice"} if alice_super else ())
    authorizer = Authorizer(AuthorizerSettings(supers, allow_everyone), acls)
    assert authorizer.authorize(principal, host, op, rtype, name) == oracle(
        acls, supers, allow_everyone, principal, host, op, rtype, name)


def acl(name, op, permission=ALLOW, pattern=LITERAL, principal="User:alice", host="*", rtype=TOPIC):
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def test_kafka_examples():
    a = Authorizer(AuthorizerSettings(frozenset({"User:admin"})), [
        acl("a.", O.WRITE, pattern=PREFIXED),
        acl("a.secret", O.WRITE, DENY),
        acl("logs", O.READ, principal="User:*", host="10.0.0.1"),
        acl("g", O.READ, rtype=GROUP),
        acl("cfg", O.ALTER_CONFIGS),
    ])
    ok = lambda op, name, who="User:alice", host="127.0.0.1", rtype=TOPIC: a.authorize(who, host, op, rtype, name)
    assert ok(O.WRITE, "a.x") and not ok(O.WRITE, "b") and not ok(O.WRITE, "a")
    assert ok(O.DESCRIBE, "a.x")  # WRITE implies DESCRIBE
    assert not ok(O.READ, "a.x")  # ... but not READ
    assert not ok(O.WRITE, "a.secret") and ok(O.DESCRIBE, "a.secret")  # DENY WRITE leaves DESCRIBE
    assert ok(O.READ, "logs", "User:bob", "10.0.0.1") and not ok(O.READ, "logs", "User:bob", "127.0.0.1")
    assert ok(O.READ, "g", rtype=GROUP) and ok(O.DESCRIBE, "g", rtype=GROUP) and not ok(O.DELETE, "g", rtype=GROUP)
    assert ok(O.DESCRIBE_CONFIGS, "cfg") and not ok(O.ALTER, "cfg")
    assert ok(O.DELETE, "anything", "User:admin")  # super user
    assert not ok(O.READ, "nothing-names-this")  # allow.everyone.if.no.acl.found is false


def test_allow_everyone_only_where_no_acl_names_the_resource():
    a = Authorizer(AuthorizerSettings(allow_everyone_if_no_acl_found=True), [acl("t", O.READ, principal="User:bob")])
    assert a.authorize("User:alice", "h", O.WRITE, TOPIC, "other")
    assert not a.authorize("User:alice", "h", O.READ, TOPIC, "t")


def test_write_on_any_topic():
    assert Authorizer(AuthorizerSettings(), [acl("a.", O.WRITE, pattern=PREFIXED)]).authorize_any(
        "User:alice", "h", O.WRITE, TOPIC)
    assert not Authorizer(AuthorizerSettings(), [acl("a.", O.READ, pattern=PREFIXED)]).authorize_any(
        "User:alice", "h", O.WRITE, TOPIC)
    denied = [acl("a.", O.WRITE, pattern=PREFIXED), acl("a", O.WRITE, DENY, PREFIXED)]
    assert not Authorizer(AuthorizerSettings(), denied).authorize_any("User:alice", "h", O.WRITE, TOPIC)
    assert Authorizer(AuthorizerSettings(allow_everyone_if_no_acl_found=True)).authorize_any(
        "User:bob", "h", O.WRITE, TOPIC)


def _filter(name=None, pattern=PatternType.ANY, rtype=ResourceType.ANY, principal=None, op=O.ANY):
    return AclFilter(rtype, name, pattern, principal, None, op, Permission.ANY)


def test_filters():
    lit, pre, star = acl("a.b", O.READ), acl("a.", O.WRITE, pattern=PREFIXED), acl("*", O.READ)
    g = acl("a.b", O.READ, rtype=GROUP)
    all_ = [lit, pre, star, g]
    assert [x for x in all_ if _filter().matches(x)] == all_
    assert [x for x in all_ if _filter("a.b", PatternType.MATCH, TOPIC).matches(x)] == [lit, pre, star]
    assert [x for x in all_ if _filter("a.", PREFIXED).matches(x)] == [pre]
    assert [x for x in all_ if _filter("a.b").matches(x)] == [lit, g]
    assert [x for x in all_ if _filter(op=O.WRITE).matches(x)] == [pre]


def test_store_persists_and_deletes(tmp_path):
    async def run():
        store = AclStore(tmp_path, AuthorizerSettings())
        await store.create([acl("a.", O.WRITE, pattern=PREFIXED), acl("b", O.READ)])
        assert store.authorizer.authorize("User:alice", "h", O.WRITE, TOPIC, "a.1")
        reopened = AclStore(tmp_path, AuthorizerSettings())
        assert len(reopened.describe(_filter())) == 2
        assert reopened.authorizer.authorize("User:alice", "h", O.WRITE, TOPIC, "a.1")
        removed = await reopened.delete([_filter("b"), _filter("b")])
        assert removed == [[acl("b", O.READ)], [acl("b", O.READ)]]
        assert [a.resource_name for a in AclStore(tmp_path, AuthorizerSettings()).describe(_filter())] == ["a."]
        assert not (tmp_path / "acls.json.tmp").exists()
    asyncio.run(run())


def kafka_by_resource_type(acls, supers, allow_everyone, principal, host, op, rtype) -> bool:
    """StandardAuthorizer.authorizeByResourceType, transcribed: the probe of a made-up name,
    then denies and allows of the type collected, a literal `*` deny refusing at once."""
    if oracle(acls, supers, allow_everyone, principal, host, op, rtype, "hardcode"):
        return True
    deny = {LITERAL: set(), PREFIXED: set()}
    allow = {LITERAL: set(), PREFIXED: set()}
    wildcard_allow = False
    for a in acls:
        if a.resource_type != rtype or a.host not in (host, "*") or a.principal not in (principal, "User:*"):
            continue
        if a.operation not in (op, O.ALL):
            continue
        if a.permission == DENY:
            if a.pattern_type == LITERAL and a.resource_name == "*":
                return False
            deny[a.pattern_type].add(a.resource_name)
        elif a.pattern_type == LITERAL and a.resource_name == "*":
            wildcard_allow = True
        else:
            allow[a.pattern_type].add(a.resource_name)
    if wildcard_allow:
        return True
    for pattern, names in allow.items():
        for name in names:
            if pattern == LITERAL and name in deny[LITERAL]:
                continue
            if not any(name[:i] in deny[PREFIXED] for i in range(1, len(name) + 1)):
                return True
    return False


@settings(max_examples=1500)
@given(st.lists(bindings, max_size=8), st.booleans(), st.booleans(), st.sampled_from(PRINCIPALS[:2]),
       st.sampled_from(HOSTS[:2]), st.sampled_from(OPERATIONS), st.sampled_from([TOPIC, GROUP]))
def test_authorize_any_matches_kafkas_algorithm(acls, alice_super, allow_everyone, principal, host, op, rtype):
    supers = frozenset({"User:alice"} if alice_super else ())
    authorizer = Authorizer(AuthorizerSettings(supers, allow_everyone), acls)
    assert authorizer.authorize_any(principal, host, op, rtype) == kafka_by_resource_type(
        acls, supers, allow_everyone, principal, host, op, rtype)
