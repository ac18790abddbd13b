"""Every advertised version of CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), over a raw
socket, against a broker with --authorizer: a binding created is described (exactly, and through
a MATCH filter) and deleted, per version; Kafka's refusals: INVALID_REQUEST for a bad binding
(alone in its request), CLUSTER_AUTHORIZATION_FAILED for a user without ALTER/DESCRIBE on the
cluster (SASL PLAIN user bob), SECURITY_DISABLED from a broker without an authorizer.

User:ANONYMOUS (the PLAINTEXT listener) is the super user that manages the ACLs.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers.acl_broker import running_acl_broker
from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from wire.sasl_plain import plain_client_token

NONE, CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, SECURITY_DISABLED = 0, 31, 42, 54
TOPIC, GROUP, CLUSTER = 2, 3, 4
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
ALL_OPS, READ, WRITE, DESCRIBE = 2, 3, 4, 8
DENY, ALLOW = 2, 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    users = tmp_path_factory.mktemp("acl-versions") / "users.jaas"
    users.write_text('user_bob="bob-secret";\n')
    with running_acl_broker(users) as proc:
        yield proc


def _binding(name: str, pattern=LITERAL, op=WRITE, permission=ALLOW, principal="User:alice"):
    return dict(resource_type=TOPIC, resource_name=name, resource_pattern_type=pattern, principal=principal,
                host="*", operation=op, permission_type=permission)


def _filter(name=None, pattern=ANY, principal=None, op=ANY, rtype=ANY):
    return dict(resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
                principal_filter=principal, host_filter=None, operation=op, permission_type=ANY)


def _described(c, version, **f) -> set[tuple]:
    r = c.request(29, version, **_filter(**f))
    assert r.error_code == NONE, r
    return {(res.resource_type, res.resource_name, res.pattern_type, a.principal, a.host, a.operation,
             a.permission_type) for res in r.resources for a in res.acls}


@over_versions(30)
def test_create_acls(broker, version):
    name = f"c{version}-{uuid.uuid4().hex[:6]}."
    with Client.to(broker) as c:
        r = c.request(30, version, creations=[_binding(name, PREFIXED), _binding(name + "x", op=READ, permission=DENY)])
        assert [x.error_code for x in r.results] == [NONE, NONE]
        assert _described(c, 3, name=name + "x", pattern=MATCH) == {
            (TOPIC, name, PREFIXED, "User:alice", "*", WRITE, ALLOW),
            (TOPIC, name + "x", LITERAL, "User:alice", "*", READ, DENY)}
        bad = c.request(30, version, creations=[_binding(name, principal="alice"), _binding("", pattern=LITERAL)])
        assert [x.error_code for x in bad.results] == [INVALID_REQUEST, INVALID_REQUEST]
        assert "principal" in bad.results[0].error_message


@over_versions(29)
def test_describe_acls(broker, version):
    name = f"d{version}-{uuid.uuid4().hex[:6]}"
    with Client.to(broker) as c:
        assert c.request(30, 3, creations=[_binding(name), _binding(name, op=DESCRIBE, principal="User:bob")]
                         ).results[0].error_code == NONE
        assert _described(c, version, name=name, pattern=LITERAL) == {
            (TOPIC, name, LITERAL, "User:alice", "*", WRITE, ALLOW),
            (TOPIC, name, LITERAL, "User:bob", "*", DESCRIBE, ALLOW)}
        assert _described(c, version, name=name, principal="User:bob") == {
            (TOPIC, name, LITERAL, "User:bob", "*", DESCRIBE, ALLOW)}
        assert _described(c, version, name=name, rtype=GROUP) == set()


@over_versions(31)
def test_delete_acls(broker, version):
    name = f"x{version}-{uuid.uuid4().hex[:6]}"
    with Client.to(broker) as c:
        c.request(30, 3, creations=[_binding(name), _binding(name, op=READ)])
        r = c.request(31, version, filters=[_filter(name=name, op=READ), _filter(name="nothing-" + name)])
        assert [f.error_code for f in r.filter_results] == [NONE, NONE]
        gone = r.filter_results[0].matching_acls
        assert [(m.error_code, m.resource_name, m.pattern_type, m.principal, m.operation, m.permission_type)
                for m in gone] == [(NONE, name, LITERAL, "User:alice", READ, ALLOW)]
        assert r.filter_results[1].matching_acls == ()
        assert _described(c, 3, name=name) == {(TOPIC, name, LITERAL, "User:alice", "*", WRITE, ALLOW)}


def test_a_user_without_cluster_rights_is_refused(broker):
    with Client("127.0.0.1", broker.sasl_port) as c:
        assert c.request(17, 1, mechanism="PLAIN").error_code == NONE
        assert c.request(36, 2, auth_bytes=plain_client_token("bob", "bob-secret")).error_code == NONE
        assert c.request(30, 3, creations=[_binding("t")]).results[0].error_code == CLUSTER_AUTHORIZATION_FAILED
        assert c.request(29, 3, **_filter()).error_code == CLUSTER_AUTHORIZATION_FAILED
        r = c.request(31, 3, filters=[_filter()])
        assert r.filter_results[0].error_code == CLUSTER_AUTHORIZATION_FAILED
    with Client.to(broker) as c:
        assert _described(c, 3, name="t") == set()


def test_security_disabled_without_an_authorizer(tmp_path):
    proc = BrokerProcess(workdir=tmp_path)
    try:
        proc.start()
        with Client.to(proc) as c:
            assert c.request(30, 3, creations=[_binding("t")]).results[0].error_code == SECURITY_DISABLED
            assert c.request(29, 3, **_filter()).error_code == SECURITY_DISABLED
            assert c.request(31, 3, filters=[_filter()]).filter_results[0].error_code == SECURITY_DISABLED
    finally:
        proc.cleanup()
