"""Each API's own ACL check, over a raw socket (issue 17): a SASL user with no ACL at all (carol)
is refused by every handler with the error Kafka gives, and a user with ALL on topics prefixed
`d.` and READ on group `dg` (dave) is let through exactly there. The PLAINTEXT listener's
User:ANONYMOUS is the super user that sets things up and checks nothing changed.

TOPIC_AUTHORIZATION_FAILED 29, GROUP_AUTHORIZATION_FAILED 30, CLUSTER_AUTHORIZATION_FAILED 31,
TRANSACTIONAL_ID_AUTHORIZATION_FAILED 53.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers.acl_broker import running_acl_broker
from compat_tests.helpers.log_dirs import alter, dir_of, files_of, placement
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.txn_requests import describe as describe_transaction
from compat_tests.helpers.waiting import wait_until
from wire.sasl_plain import plain_client_token

NONE, TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH, TXN_ID_AUTH = 0, 29, 30, 31, 53
TOPIC, GROUP, TRANSACTIONAL_ID = 2, 3, 5
LITERAL, PREFIXED = 3, 4
ALL, READ, WRITE = 2, 3, 4
ALLOW = 3
CONFIG_TOPIC, CONFIG_BROKER = 2, 4


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    users = tmp_path_factory.mktemp("acl-handlers") / "users.jaas"
    users.write_text('user_carol="carol-secret" user_dave="dave-secret";\n')
    with running_acl_broker(users, "--group-initial-rebalance-delay-ms", "0") as proc:
        with Client.to(proc) as c:
            for name in ("t", "d.1"):
                c.create_topic(name)
                assert c.produce(name, 0, make_batch([b"x"])).error_code == NONE
            acl = dict(host="*", permission_type=ALLOW, principal="User:dave")
            r = c.request(30, 3, creations=[
                dict(resource_type=TOPIC, resource_name="d.", resource_pattern_type=PREFIXED, operation=ALL, **acl),
                dict(resource_type=GROUP, resource_name="dg", resource_pattern_type=LITERAL, operation=READ, **acl)])
            assert [x.error_code for x in r.results] == [NONE, NONE]
            _commit(c, "existing-group", "t")  # a group for ListGroups to hide
        yield proc


def _as(broker, user: str) -> Client:
    c = Client("127.0.0.1", broker.sasl_port)
    assert c.request(17, 1, mechanism="PLAIN").error_code == NONE
    assert c.request(36, 2, auth_bytes=plain_client_token(user, f"{user}-secret")).error_code == NONE
    return c


def _commit(c, group: str, topic: str):
    r = c.request(8, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                  topics=[dict(name=topic, partitions=[dict(partition_index=0, committed_offset=1,
                                                            committed_leader_epoch=-1, committed_metadata="")])])
    return r.topics[0].partitions[0].error_code


def _topic_codes(c, topic: str):
    """Every topic-level refusal carol can meet, as {api: error code}."""
    codes = {"produce": c.produce(topic, 0, make_batch([b"no"])).error_code,
             "fetch": c.fetch(topic, 0, 0).error_code,
             "list_offsets": c.list_offset(topic, 0, -1).error_code,
             "metadata": c.metadata([topic]).topics[0].error_code}
    codes["create_partitions"] = c.request(37, 3, topics=[dict(name=topic, count=2, assignments=None)],
                                           timeout=5000, validate_only=False).results[0].error_code
    codes["delete_records"] = c.request(21, 2, topics=[dict(name=topic, partitions=[
        dict(partition_index=0, offset=1)])], timeout=5000).topics[0].partitions[0].error_code
    codes["describe_configs"] = c.request(32, 4, resources=[dict(resource_type=CONFIG_TOPIC, resource_name=topic,
                                                                 configuration_keys=None)],
                                          include_synonyms=False, include_documentation=False).results[0].error_code
    codes["alter_configs"] = c.request(44, 1, resources=[dict(
        resource_type=CONFIG_TOPIC, resource_name=topic,
        configs=[dict(name="retention.ms", config_operation=0, value="100000")])],
        validate_only=True).responses[0].error_code
    return codes


def _delete_topic(c, topic: str):
    return c.request(20, 6, topics=[dict(name=topic, topic_id=None)], timeout=5000).responses[0].error_code


def test_a_user_without_acls_is_refused_everywhere(broker):
    with _as(broker, "carol") as c:
        assert set(_topic_codes(c, "t").values()) == {TOPIC_AUTH}, _topic_codes(c, "t")
        assert _delete_topic(c, "t") == TOPIC_AUTH
        assert "t" not in {t.name for t in c.metadata(None).topics}
        assert c.metadata(["carol-new"], allow_auto=True).topics[0].error_code == TOPIC_AUTH
        created = c.request(19, 7, topics=[dict(name="carol-made", num_partitions=1, replication_factor=1,
                                                assignments=[], configs=[])], validate_only=False, timeout=5000)
        assert created.topics[0].error_code == TOPIC_AUTH
        # groups
        assert _commit(c, "g", "t") == GROUP_AUTH
        assert c.request(10, 6, key_type=0, coordinator_keys=["g"]).coordinators[0].error_code == GROUP_AUTH
        joined = c.request(11, 9, group_id="g", session_timeout=10_000, rebalance_timeout=10_000, member_id="",
                           group_instance_id=None, protocol_type="consumer", reason=None,
                           protocols=[dict(name="range", metadata=b"")])
        assert joined.error_code == GROUP_AUTH
        fetched = c.request(9, 9, require_stable=False, groups=[dict(group_id="existing-group", member_id=None,
                                                                     member_epoch=-1, topics=None)])
        assert fetched.groups[0].error_code == GROUP_AUTH
        assert c.request(15, 5, groups=["existing-group"], include_authorized_operations=False
                         ).groups[0].error_code == GROUP_AUTH
        assert c.request(42, 2, groups_names=["existing-group"]).results[0].error_code == GROUP_AUTH
        assert c.request(16, 5, states_filter=[], types_filter=[]).groups == ()
        # the cluster
        assert c.request(22, 5, transactional_id=None, transaction_timeout=60_000, producer_id=-1,
                         producer_epoch=-1).error_code == CLUSTER_AUTH
        assert c.request(60, 1, include_cluster_authorized_operations=False, endpoint_type=1
                         ).error_code == CLUSTER_AUTH
        assert c.request(43, 2, election_type=0, topic_partitions=None, timeout=5000).error_code == CLUSTER_AUTH
        assert c.request(32, 4, resources=[dict(resource_type=CONFIG_BROKER, resource_name="", configuration_keys=None)],
                         include_synonyms=False, include_documentation=False).results[0].error_code == CLUSTER_AUTH
        assert c.request(35, 4, topics=None).error_code == CLUSTER_AUTH
        assert c.request(50, 0, users=None).error_code == CLUSTER_AUTH
        downgrade = [dict(feature="transaction.version", max_version_level=1, upgrade_type=2)]
        assert c.request(57, 2, timeout=5000, feature_updates=downgrade, validate_only=False
                         ).error_code == CLUSTER_AUTH
        relogin = [dict(name="sasl.kerberos.min.time.before.relogin", config_operation=0, value="58000")]
        assert c.request(44, 1, validate_only=False, resources=[
            dict(resource_type=CONFIG_BROKER, resource_name="", configs=relogin)]).responses[0].error_code == CLUSTER_AUTH
    with Client.to(broker) as admin:  # nothing carol asked for happened
        r = admin.request(18, 4, client_software_name="twinlog-compat", client_software_version="1")
        assert {f.name: f.max_version_level for f in r.finalized_features}["transaction.version"] == 2
        r = admin.request(32, 4, include_synonyms=False, include_documentation=False, resources=[
            dict(resource_type=CONFIG_BROKER, resource_name="", configuration_keys=None)])
        assert r.results[0].configs == ()
        assert admin.metadata(["carol-new", "carol-made"]).topics[0].error_code != NONE
        assert admin.log_end_offset("t") == 1
        assert admin.list_offset("t", 0, -2).offset == 0
        assert admin.request(16, 5, states_filter=[], types_filter=[]).groups != ()


def test_a_user_with_acls_is_let_through_where_they_allow(broker):
    with _as(broker, "dave") as c:
        codes = _topic_codes(c, "d.1")
        assert set(codes.values()) == {NONE}, codes
        assert c.log_end_offset("d.1") == 2  # the fixture's record and _topic_codes' produce
        assert {t.name for t in c.metadata(None).topics} == {"d.1"}
        assert set(_topic_codes(c, "t").values()) == {TOPIC_AUTH}
        assert _commit(c, "dg", "d.1") == NONE
        assert _commit(c, "dg", "t") == TOPIC_AUTH  # READ on the group, not on the topic
        assert [g.group_id for g in c.request(16, 5, states_filter=[], types_filter=[]).groups] == ["dg"]
        assert c.request(22, 5, transactional_id=None, transaction_timeout=60_000, producer_id=-1,
                         producer_epoch=-1).error_code == NONE  # WRITE on some topic stands for IDEMPOTENT_WRITE
        made = c.request(19, 7, topics=[dict(name="d.made", num_partitions=1, replication_factor=1, assignments=[],
                                             configs=[])], validate_only=False, timeout=5000)
        assert made.topics[0].error_code == NONE
        assert _delete_topic(c, "d.made") == NONE
        assert c.fetch("d.1", 0, 1).error_code == NONE  # DeleteRecords above moved the log start to 1


def test_write_txn_markers_needs_cluster_action(broker):
    """Kafka's handleWriteTxnMarkersRequest: CLUSTER_ACTION on the cluster, or every partition is refused."""
    marker = dict(producer_id=4242, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
                  topics=[dict(name="d.1", partition_indexes=[0])])
    with Client.to(broker) as admin:
        end = admin.log_end_offset("d.1")
        with _as(broker, "dave") as c:  # ALL on d.* topics is not enough
            r = c.request(27, 1, markers=[marker])
            assert r.markers[0].topics[0].partitions[0].error_code == CLUSTER_AUTH
        assert admin.log_end_offset("d.1") == end
        r = admin.request(27, 1, markers=[marker])  # the super user (a broker) writes it
        assert r.markers[0].topics[0].partitions[0].error_code == NONE
        assert admin.log_end_offset("d.1") == end + 1


def test_alter_replica_log_dirs_needs_alter_on_the_cluster(broker):
    """Kafka's handleAlterReplicaLogDirsRequest: without ALTER on the cluster every partition is
    refused, before its dir or topic is looked at; ALL on the topic is not enough."""
    here, there = dir_of(broker, "segment"), dir_of(broker, "commitlog")
    with _as(broker, "dave") as c:
        for version in (1, 2):
            assert alter(c, there, "d.1", (0, 5), version) == {0: CLUSTER_AUTH, 5: CLUSTER_AUTH}
            assert alter(c, "/no/such/dir", "d.1", (0,), version) == {0: CLUSTER_AUTH}
            assert alter(c, there, "no-such-topic", (0,), version) == {0: CLUSTER_AUTH}
    with Client.to(broker) as admin:  # the super user's move of another topic runs to its end...
        admin.create_topic("moved-by-admin")
        assert alter(admin, there, "moved-by-admin") == {0: NONE}
        wait_until(lambda: set(placement(admin, "moved-by-admin")) == {(there, False)}, "the admin's move")
        # ...and dave's asked-for move of d.1 never started
        assert placement(admin, "d.1") == {(here, False): 0}
    assert files_of(broker, "d.1") == {"segment": True, "commitlog": False}


def _init_txn(c, tid: str):
    return c.request(22, 5, transactional_id=tid, transaction_timeout=60_000, producer_id=-1, producer_epoch=-1)


def _add_partitions(c, tid: str, pid: int, epoch: int, topic: str) -> int:
    r = c.request(24, 3, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=epoch, v3_and_below_topics=[{"name": topic, "partitions": [0]}])
    return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def _add_offsets(c, tid: str, pid: int, epoch: int, group: str) -> int:
    return c.request(25, 4, transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group).error_code


def test_transactional_ids_are_checked_as_kafka_checks_them(broker):
    """WRITE on the transactional id for InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
    and a transactional Produce; DESCRIBE (implied by WRITE) for FindCoordinator and
    DescribeTransactions; ListTransactions lists only what the principal may describe; then topic
    WRITE for AddPartitionsToTxn and group READ for AddOffsetsToTxn."""
    with Client.to(broker) as admin:
        r = admin.request(30, 3, creations=[dict(resource_type=TRANSACTIONAL_ID, resource_name="dtx",
                                                 resource_pattern_type=LITERAL, operation=WRITE, host="*",
                                                 permission_type=ALLOW, principal="User:dave")])
        assert [x.error_code for x in r.results] == [NONE]
        hidden = _init_txn(admin, "admin-tx")
        assert _add_partitions(admin, "admin-tx", hidden.producer_id, hidden.producer_epoch, "t") == NONE
    with _as(broker, "carol") as c:
        assert c.request(10, 6, key_type=1, coordinator_keys=["dtx"]).coordinators[0].error_code == TXN_ID_AUTH
        assert _init_txn(c, "dtx").error_code == TXN_ID_AUTH
        assert _add_partitions(c, "admin-tx", hidden.producer_id, hidden.producer_epoch, "t") == TXN_ID_AUTH
        assert _add_offsets(c, "admin-tx", hidden.producer_id, hidden.producer_epoch, "dg") == TXN_ID_AUTH
        assert c.request(26, 4, transactional_id="admin-tx", producer_id=hidden.producer_id,
                         producer_epoch=hidden.producer_epoch, committed=False).error_code == TXN_ID_AUTH
        assert describe_transaction(c, "admin-tx").error_code == TXN_ID_AUTH
        assert c.request(66, 1, state_filters=[], producer_id_filters=[], duration_filter=-1).transaction_states == ()
        assert c.produce("t", 0, make_batch([b"x"]), transactional_id="admin-tx").error_code == TXN_ID_AUTH
    with _as(broker, "dave") as c:
        assert c.request(10, 6, key_type=1, coordinator_keys=["dtx"]).coordinators[0].error_code == NONE
        r = _init_txn(c, "dtx")
        assert r.error_code == NONE
        assert _add_partitions(c, "dtx", r.producer_id, r.producer_epoch, "t") == TOPIC_AUTH
        assert _add_partitions(c, "dtx", r.producer_id, r.producer_epoch, "d.1") == NONE
        assert _add_offsets(c, "dtx", r.producer_id, r.producer_epoch, "g") == GROUP_AUTH
        assert _add_offsets(c, "dtx", r.producer_id, r.producer_epoch, "dg") == NONE
        assert [s.transactional_id for s in c.request(66, 1, state_filters=[], producer_id_filters=[],
                                                      duration_filter=-1).transaction_states] == ["dtx"]
        assert c.request(26, 4, transactional_id="dtx", producer_id=r.producer_id, producer_epoch=r.producer_epoch,
                         committed=False).error_code == NONE
    with Client.to(broker) as admin:
        assert admin.request(26, 4, transactional_id="admin-tx", producer_id=hidden.producer_id,
                             producer_epoch=hidden.producer_epoch, committed=False).error_code == NONE


def _txn_commit(c, transactional_id: str, group: str, topic: str) -> int:
    r = c.request(28, 3, transactional_id=transactional_id, group_id=group, producer_id=4243, producer_epoch=0,
                  generation_id=-1, member_id="", group_instance_id=None,
                  topics=[dict(name=topic, partitions=[dict(partition_index=0, committed_offset=1,
                                                            committed_leader_epoch=-1, committed_metadata="")])])
    return r.topics[0].partitions[0].error_code


def test_txn_offset_commit_needs_the_transactional_id_the_group_and_the_topic(broker):
    """Kafka's handleTxnOffsetCommitRequest: WRITE on the transactional id, then READ on the group
    (else every partition is refused), then READ on each topic."""
    with Client.to(broker) as admin:
        r = admin.request(30, 3, creations=[dict(
            resource_type=TRANSACTIONAL_ID, resource_name="dt", resource_pattern_type=LITERAL, operation=WRITE,
            host="*", permission_type=ALLOW, principal="User:dave")])
        assert r.results[0].error_code == NONE
    with _as(broker, "carol") as c:
        assert _txn_commit(c, "dt", "dg", "d.1") == TXN_ID_AUTH
    with _as(broker, "dave") as c:
        assert _txn_commit(c, "other-id", "dg", "d.1") == TXN_ID_AUTH
        assert _txn_commit(c, "dt", "other-group", "d.1") == GROUP_AUTH
        assert _txn_commit(c, "dt", "dg", "t") == TOPIC_AUTH
        assert _txn_commit(c, "dt", "dg", "d.1") == NONE


def test_describe_producers_needs_read_on_the_topic(broker):
    def describe(c, topic: str) -> int:
        r = c.request(61, 0, topics=[dict(name=topic, partition_indexes=[0])])
        return r.topics[0].partitions[0].error_code

    with _as(broker, "carol") as c:
        assert describe(c, "t") == TOPIC_AUTH
    with _as(broker, "dave") as c:
        assert describe(c, "t") == TOPIC_AUTH
        assert describe(c, "d.1") == NONE


def _streams_join(c, group: str, source: str, member_id: str = "m-1"):
    """A StreamsGroupHeartbeat join whose topology reads `source` and keeps a `source`-prefixed changelog."""
    topology = dict(epoch=1, subtopologies=[dict(
        subtopology_id="0", source_topics=[source], source_topic_regex=[], repartition_sink_topics=[],
        state_changelog_topics=[dict(name=f"{source}-{group}-changelog", partitions=0, replication_factor=0,
                                     topic_configs=[])],
        repartition_source_topics=[], copartition_groups=[])])
    return c.request(88, 0, group_id=group, member_id=member_id, member_epoch=0, endpoint_information_epoch=0,
                     rebalance_timeout=30_000, topology=topology, active_tasks=[], standby_tasks=[], warmup_tasks=[],
                     process_id="p", client_tags=[], task_offsets=None, task_end_offsets=None)


def test_streams_groups_need_read_on_the_group_and_describe_on_the_topology_topics(broker):
    with _as(broker, "carol") as c:
        assert _streams_join(c, "dg", "d.1", member_id="").error_code == GROUP_AUTH, "ACLs before the request's checks"
        assert c.request(89, 0, group_ids=["dg"], include_authorized_operations=False
                         ).groups[0].error_code == GROUP_AUTH
    with _as(broker, "dave") as c:
        assert _streams_join(c, "dg", "t").error_code == TOPIC_AUTH
        first = _streams_join(c, "dg", "d.1")  # dave may create d.* topics: the changelog is created
        assert (first.error_code, [s.status_code for s in first.status]) == (NONE, [3])
        assert c.metadata(["d.1-dg-changelog"]).topics[0].error_code == NONE
