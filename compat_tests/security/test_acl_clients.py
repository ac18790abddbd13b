"""ACLs with real clients over SASL_PLAINTEXT (issue 17): one broker with --authorizer and
super user admin; PLAIN users alice, bob and admin. admin sets the ACLs up through kafka-python's
KafkaAdminClient (create_acls), as an operator would:

    alice  WRITE + READ on topics prefixed `a.`, DESCRIBE on topic `b` (she sees it, may not
           write it), READ on group `alice-group`
    bob    READ on topics prefixed `a.` and nothing else (no group, no `b`)

Checked: alice's produce to `a.*` succeeds and to `b` ends in TOPIC_AUTHORIZATION_FAILED with
kafka-python, confluent-kafka (librdkafka), aiokafka, kcat and the Java client; Metadata hides `b` from bob
(kafka-python, confluent-kafka, Java); bob's consumer gets GROUP_AUTHORIZATION_FAILED while
alice's consumes in her group; admin (super user) writes `b`; kafka-python's admin
describe_acls / delete_acls; the ACLs, and their effect, survive a restart.
The module's broker runs in the segment layout: authorization does not touch storage.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers.acl_broker import running_acl_broker

JAAS = 'user_alice="alice-secret" user_bob="bob-secret" user_admin="admin-secret";\n'
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
A_TOPIC, B_TOPIC = "a.orders", "b"


def _kp(user: str) -> dict:
    return dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username=user,
                sasl_plain_password=PASSWORDS[user])


def _admin(broker, user="admin"):
    from kafka import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, **_kp(user))


def _acls():
    from kafka.admin import (
        ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType as P, ResourcePattern, ResourceType)

    def acl(user, op, rtype, name, pattern=P.LITERAL):
        return ACL(principal=f"User:{user}", host="*", operation=op, permission_type=ACLPermissionType.ALLOW,
                   resource_pattern=ResourcePattern(rtype, name, pattern))
    return [acl("alice", ACLOperation.WRITE, ResourceType.TOPIC, "a.", P.PREFIXED),
            acl("alice", ACLOperation.READ, ResourceType.TOPIC, "a.", P.PREFIXED),
            acl("alice", ACLOperation.DESCRIBE, ResourceType.TOPIC, B_TOPIC),
            acl("alice", ACLOperation.READ, ResourceType.GROUP, "alice-group"),
            acl("bob", ACLOperation.READ, ResourceType.TOPIC, "a.", P.PREFIXED)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kafka.admin import NewTopic
    users = tmp_path_factory.mktemp("acl-clients") / "users.jaas"
    users.write_text(JAAS)
    with running_acl_broker(users, super_users="User:admin", sasl_only=True) as proc:
        admin = _admin(proc)
        result = admin.create_acls(_acls())
        assert not result["failed"] and len(result["succeeded"]) == 5, result
        admin.create_topics([NewTopic(A_TOPIC, 1, 1), NewTopic(B_TOPIC, 1, 1)])
        admin.close()
        yield proc


def test_kafka_python_writes_a_prefix_not_b(broker):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **_kp("alice"))
    try:
        assert producer.send(A_TOPIC, b"ok").get(20).offset >= 0
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(B_TOPIC, b"refused").get(20)
    finally:
        producer.close(5)


def _confluent(user: str, **more) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": PASSWORDS[user], **more}


def test_confluent_kafka_writes_a_prefix_not_b(broker):
    from confluent_kafka import KafkaError, Producer
    reports = {}
    producer = Producer(_confluent("alice", **{"bootstrap.servers": broker.bootstrap}))
    for topic in (A_TOPIC, B_TOPIC):
        producer.produce(topic, b"v", on_delivery=lambda err, msg: reports.__setitem__(msg.topic(), err))
    assert producer.flush(20) == 0
    assert reports[A_TOPIC] is None
    assert reports[B_TOPIC].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, reports


def test_aiokafka_writes_a_prefix_not_b(broker):
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TopicAuthorizationFailedError

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="PLAIN", sasl_plain_username="alice",
                                    sasl_plain_password=PASSWORDS["alice"])
        await producer.start()
        try:
            assert (await producer.send_and_wait(A_TOPIC, b"ok")).offset >= 0
            with pytest.raises(TopicAuthorizationFailedError):
                await asyncio.wait_for(producer.send_and_wait(B_TOPIC, b"refused"), 20)
        finally:
            await producer.stop()
    asyncio.run(run())


def test_kcat_writes_a_prefix_not_b(broker):
    import shutil
    import subprocess
    exe = shutil.which("kcat")
    if exe is None:
        pytest.fail("kcat is not installed: run compat_tests/install_deps.sh")

    def produce(topic: str):
        return subprocess.run([exe, "-b", broker.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
                               "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice",
                               "-X", f"sasl.password={PASSWORDS['alice']}", "-t", topic, "-P"],
                              input=b"v\n", capture_output=True, timeout=60)
    assert produce(A_TOPIC).returncode == 0
    refused = produce(B_TOPIC)
    assert b"Topic authorization failed" in refused.stderr, refused.stderr


@pytest.fixture(scope="module")
def java(broker):
    from compat_tests.helpers.java_client import JavaClient
    client = JavaClient(broker.bootstrap)
    yield client
    client.close()


def _java_config(user: str) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                f'username="{user}" password="{PASSWORDS[user]}";'}


def test_java_writes_a_prefix_not_b(java):
    from compat_tests.helpers.java_client import b64
    record = [{"partition": 0, "timestamp": None, "key": None, "value": b64(b"v"), "headers": []}]
    ok = java.call("produce", topic=A_TOPIC, config={"acks": "all", **_java_config("alice")}, records=record)
    assert ok[0].get("offset") is not None, ok
    refused = java.call("produce", topic=B_TOPIC, config={"acks": "all", "max.block.ms": "10000",
                                                          **_java_config("alice")}, records=record)
    assert "TopicAuthorizationException" in str(refused[0].get("error")), refused


def test_metadata_hides_b(broker, java):
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, **_kp("bob"))
    try:
        assert A_TOPIC in consumer.topics() and B_TOPIC not in consumer.topics()
    finally:
        consumer.close()
    seen = AdminClient(_confluent("bob", **{"bootstrap.servers": broker.bootstrap})).list_topics(timeout=20).topics
    assert A_TOPIC in seen and B_TOPIC not in seen
    assert java.call("listTopics", config=_java_config("bob")) == [A_TOPIC]
    assert {A_TOPIC, B_TOPIC} <= set(java.call("listTopics", config=_java_config("admin")))


def test_consumer_without_group_read(broker):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError
    bob = KafkaConsumer(A_TOPIC, group_id="bob-group", bootstrap_servers=broker.bootstrap,
                        auto_offset_reset="earliest", **_kp("bob"))
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in range(20):
                bob.poll(500)
    finally:
        bob.close(autocommit=False)
    alice = KafkaConsumer(A_TOPIC, group_id="alice-group", bootstrap_servers=broker.bootstrap,
                          auto_offset_reset="earliest", consumer_timeout_ms=10_000, **_kp("alice"))
    try:
        assert next(iter(alice)).topic == A_TOPIC
        alice.commit()
    finally:
        alice.close()


def test_confluent_consumer_without_group_read(broker):
    from confluent_kafka import Consumer, KafkaError
    consumer = Consumer(_confluent("bob", **{"bootstrap.servers": broker.bootstrap, "group.id": "bob-group-2",
                                             "auto.offset.reset": "earliest"}))
    consumer.subscribe([A_TOPIC])
    try:
        codes = set()
        for _ in range(40):
            m = consumer.poll(0.5)
            if m is not None and m.error() is not None:
                codes.add(m.error().code())
                break
        assert KafkaError.GROUP_AUTHORIZATION_FAILED in codes, codes
    finally:
        consumer.close()


def test_super_user_bypasses(broker):
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **_kp("admin"))
    try:
        assert producer.send(B_TOPIC, b"admin may").get(20).offset >= 0
    finally:
        producer.close(5)


def test_kafka_python_describe_and_delete_acls(broker):
    from kafka.admin import (
        ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType as P, ResourcePattern, ResourcePatternFilter,
        ResourceType)
    from kafka.errors import NoError
    admin = _admin(broker)
    try:
        any_topic = ResourcePatternFilter(ResourceType.TOPIC, "a.orders", P.MATCH)
        acls, err = admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                                  permission_type=ACLPermissionType.ANY, resource_pattern=any_topic))
        assert err is NoError
        assert {(a.principal, a.operation) for a in acls} == {
            ("User:alice", ACLOperation.WRITE), ("User:alice", ACLOperation.READ), ("User:bob", ACLOperation.READ)}
        name = f"tmp-{uuid.uuid4().hex[:6]}"
        temp = ACLFilter(principal="User:carol", host="*", operation=ACLOperation.READ,
                         permission_type=ACLPermissionType.ALLOW,
                         resource_pattern=ResourcePattern(ResourceType.TOPIC, name, P.LITERAL))
        from kafka.admin import ACL
        assert admin.create_acls([ACL(temp.principal, "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                      temp.resource_pattern)])["succeeded"]
        deleted = admin.delete_acls([temp])
        assert len(deleted) == 1 and len(deleted[0][1]) == 1 and deleted[0][2] is NoError, deleted
    finally:
        admin.close()
    alice = _admin(broker, "alice")  # no ALTER on the cluster
    try:
        failed = alice.create_acls(_acls()[:1])["failed"]
        assert len(failed) == 1 and "ClusterAuthorization" in repr(failed[0]), failed
    finally:
        alice.close()


def test_acls_survive_a_restart(broker):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError
    broker.restart()
    admin = _admin(broker)
    try:
        from kafka.admin import (
            ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType as P, ResourcePatternFilter,
            ResourceType)
        acls, _ = admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                                permission_type=ACLPermissionType.ANY,
                                                resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, P.ANY)))
        assert len(acls) == 5
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **_kp("alice"))
    try:
        assert producer.send(A_TOPIC, b"after restart").get(20).offset >= 0
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(B_TOPIC, b"still refused").get(20)
    finally:
        producer.close(5)
