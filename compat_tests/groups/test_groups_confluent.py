"""Consumer groups through confluent-kafka (librdkafka): Consumer(group.id=...) and AdminClient.

The scenarios live in group_scenarios.py; this module supplies confluent-kafka's member (a
subscribed Consumer with manual commits, 6 s session, 1 s heartbeat) and the admin checks.
"""

from __future__ import annotations

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from compat_tests.helpers import group_scenarios as gs
from compat_tests.helpers.confluent_group_members import make_member

BROKER_ARGS = gs.GROUP_BROKER_ARGS  # the module broker: a short rebalance delay

pytestmark = pytest.mark.timeout(120)

FACTORY = f"{__name__}:make_member"
ADMIN_TIMEOUT = 15


def test_three_members_share_six_partitions_exactly_once(broker):
    gs.scenario_three_members_exactly_once(broker.bootstrap, make_member, "ck-g3")


def test_clean_leave_moves_partitions_without_redelivering_committed(broker):
    gs.scenario_clean_leave(broker.bootstrap, make_member, "ck-leave")


def test_killed_member_partitions_move_after_session_timeout(broker):
    gs.scenario_member_killed(broker.bootstrap, make_member, FACTORY, "ck-kill")


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_committed_offsets_survive_broker_restart(broker_factory, how):
    gs.scenario_resume_after_restart(broker_factory(*gs.GROUP_BROKER_ARGS), make_member, f"ck-restart-{how}", how)


def _one(futures: dict, key):
    assert set(futures) == {key}, futures
    return futures[key].result(timeout=ADMIN_TIMEOUT)


def _listed(admin: AdminClient) -> dict:
    result = admin.list_consumer_groups(request_timeout=ADMIN_TIMEOUT).result(timeout=ADMIN_TIMEOUT)
    assert not result.errors, result.errors
    return {g.group_id: g for g in result.valid}


def _offsets(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    got = _one(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                 request_timeout=ADMIN_TIMEOUT), group)
    assert got.group_id == group
    assert all(tp.error is None for tp in got.topic_partitions), got.topic_partitions
    return {(tp.topic, tp.partition): tp.offset for tp in got.topic_partitions}


def test_admin_list_describe_offsets_delete(broker):
    topic, group, members, produced, _ = gs.stable_group_with_commits(broker.bootstrap, make_member, "ck-admin")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "compat-confluent-admin"})
    try:
        listed = _listed(admin)
        assert group in listed, sorted(listed)
        assert listed[group].state == ConsumerGroupState.STABLE and not listed[group].is_simple_consumer_group

        desc = _one(admin.describe_consumer_groups([group], request_timeout=ADMIN_TIMEOUT), group)
        assert desc.state == ConsumerGroupState.STABLE, desc.state
        assert desc.partition_assignor in ("range", "roundrobin") and not desc.is_simple_consumer_group
        assert desc.coordinator.id == 1 and desc.coordinator.port == broker.port, desc.coordinator
        assert sorted(m.client_id for m in desc.members) == sorted(m.name for m in members)
        assigned = {m.client_id: {tp.partition for tp in m.assignment.topic_partitions if tp.topic == topic}
                    for m in desc.members}
        assert assigned == {m.name: m.assignment() for m in members}
        assert all(len(a) == 3 for a in assigned.values()), assigned

        assert _offsets(admin, group) == {(topic, p): end for p, end in gs.end_offsets(produced).items()}

        with pytest.raises(KafkaException) as refused:
            _one(admin.delete_consumer_groups([group], request_timeout=ADMIN_TIMEOUT), group)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP, refused.value

        gs.close_all(members)
        desc = _one(admin.describe_consumer_groups([group], request_timeout=ADMIN_TIMEOUT), group)
        assert desc.state == ConsumerGroupState.EMPTY and desc.members == [], desc
        assert _listed(admin)[group].state == ConsumerGroupState.EMPTY
        assert len(_offsets(admin, group)) == gs.PARTITIONS  # offsets outlive the members

        _one(admin.delete_consumer_groups([group], request_timeout=ADMIN_TIMEOUT), group)
        assert group not in _listed(admin)
        assert all(o < 0 for o in _offsets(admin, group).values())
        desc = _one(admin.describe_consumer_groups([group], request_timeout=ADMIN_TIMEOUT), group)
        assert desc.state == ConsumerGroupState.DEAD, desc.state
        with pytest.raises(KafkaException) as gone:
            _one(admin.delete_consumer_groups([group], request_timeout=ADMIN_TIMEOUT), group)
        assert gone.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND, gone.value
    finally:
        gs.close_all(members)
