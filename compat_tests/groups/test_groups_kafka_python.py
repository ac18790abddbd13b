"""Consumer groups through kafka-python (3.0.12): KafkaConsumer(group_id=...) and KafkaAdminClient.

The scenarios live in group_scenarios.py; this module supplies kafka-python's member (a
subscribed KafkaConsumer with manual commits, 6 s session, 1 s heartbeat) and the admin checks.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers import group_scenarios as gs
from compat_tests.helpers.kafka_python_group_members import make_member
from compat_tests.helpers.topics import admin_client

BROKER_ARGS = gs.GROUP_BROKER_ARGS  # the module broker: a short rebalance delay

pytestmark = pytest.mark.timeout(120)

FACTORY = f"{__name__}:make_member"


def test_three_members_share_six_partitions_exactly_once(broker):
    gs.scenario_three_members_exactly_once(broker.bootstrap, make_member, "kp-g3")


def test_clean_leave_moves_partitions_without_redelivering_committed(broker):
    gs.scenario_clean_leave(broker.bootstrap, make_member, "kp-leave")


def test_killed_member_partitions_move_after_session_timeout(broker):
    gs.scenario_member_killed(broker.bootstrap, make_member, FACTORY, "kp-kill")


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_committed_offsets_survive_broker_restart(broker_factory, how):
    gs.scenario_resume_after_restart(broker_factory(*gs.GROUP_BROKER_ARGS), make_member, f"kp-restart-{how}", how)


def test_admin_list_describe_offsets_delete(broker):
    topic, group, members, produced, _ = gs.stable_group_with_commits(broker.bootstrap, make_member, "kp-admin")
    admin = admin_client(broker.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert group in listed, listed
        assert listed[group]["protocol_type"] == "consumer"
        assert listed[group].get("group_state", "Stable") == "Stable", listed[group]

        desc = admin.describe_groups([group])[group]
        assert desc["error"] is None and desc["group_state"] == "Stable", desc
        assert desc["protocol_type"] == "consumer" and desc["protocol_data"] in ("range", "roundrobin"), desc
        assert sorted(m["client_id"] for m in desc["members"]) == sorted(m.name for m in members)
        assigned = {}
        for m in desc["members"]:
            assert m["member_metadata"]["topics"] == [topic] and m["client_host"].endswith("127.0.0.1"), m
            parts = [p for t in m["member_assignment"]["assigned_partitions"] if t["topic"] == topic
                     for p in t["partitions"]]
            assert len(parts) == 3, m
            assigned[m["client_id"]] = set(parts)
        assert assigned == {m.name: m.assignment() for m in members}

        offsets = admin.list_group_offsets(group)[group]
        assert {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic} == gs.end_offsets(produced)

        assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}
        gs.close_all(members)
        desc = admin.describe_groups([group])[group]
        assert desc["group_state"] == "Empty" and desc["members"] == [], desc
        # Offsets outlive the members.
        assert len(admin.list_group_offsets(group)[group]) == gs.PARTITIONS

        assert admin.delete_groups([group]) == {group: "OK"}
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert admin.list_group_offsets(group)[group] == {}
        assert admin.describe_groups([group])[group]["group_state"] == "Dead"
        assert admin.delete_groups([group]) == {group: "GroupIdNotFoundError"}
    finally:
        gs.close_all(members)
        admin.close()
