"""Share groups (KIP-932) over a raw socket: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and
ShareAcknowledge at every served version, driven by hand the way KafkaShareConsumer drives them,
checking Kafka's outcomes: assignments (a partition shared when members outnumber partitions),
acquired ranges and delivery counts, acknowledgements, and the errors a broker gives a session
or member out of step (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, UNKNOWN_MEMBER_ID,
INVALID_RECORD_STATE, INVALID_REQUEST); and v2's record-limit acquisition (KIP-1206) and RENEW
acknowledgements (KIP-1222); and a group's share.auto.offset.reset of by_duration (KIP-1106):
the first fetch of a share-partition without state starts at the first record that new. After a
restart (kill -9 or SIGTERM) the group's members are replayed from `__consumer_offsets`: each
heartbeats at its old epoch and goes on with its assignment, no rebalance, and one that does not
come back is fenced at its session timeout, for good. What a real client sees is
test_share_groups_java.py's.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest

from compat_tests.helpers.raw_kafka import Client, make_batch, read_records
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.share_group_requests import (
    ACKNOWLEDGE, DESCRIBE, FETCH, GROUP_ID_NOT_FOUND, HEARTBEAT, INVALID_CONFIG, INVALID_REQUEST, LIST_GROUPS, NONE,
    UNKNOWN_MEMBER_ID, assigned, heartbeat, join, new_group, owned_by_member, partition_of)
from compat_tests.helpers.topics import unique_topic

SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, INVALID_RECORD_STATE = 122, 123, 121
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CONFIGS, GROUP_RESOURCE, SET = 44, 32, 32, 0
DAY_MS = 86_400_000

BROKER_ARGS = ["--share-auto-offset-reset", "earliest", "--group-share-record-lock-duration-ms", "30000"]


def share_fetch(client: Client, group: str, member: str, epoch: int, topic_id, acks=(), version: int = 1,
                partitions=(0,), max_records: int = 500, **v2):
    return client.request(FETCH, version, group_id=group, member_id=member, share_session_epoch=epoch, max_wait=0,
                          min_bytes=1, max_bytes=1 << 20, max_records=max_records, batch_size=500, **v2,
                          topics=[{"topic_id": topic_id, "partitions": [
                              {"partition_index": p, "acknowledgement_batches": list(acks)} for p in partitions]}],
                          forgotten_topics_data=[])


def acknowledge(client: Client, group: str, member: str, epoch: int, topic_id, acks, version: int = 1):
    return client.request(ACKNOWLEDGE, version, group_id=group, member_id=member, share_session_epoch=epoch,
                          topics=[{"topic_id": topic_id, "partitions": [
                              {"partition_index": 0, "acknowledgement_batches": list(acks)}]}])


def ack(first: int, last: int, *types: int) -> dict:
    return {"first_offset": first, "last_offset": last, "acknowledge_types": list(types)}


@over_versions(HEARTBEAT)
def test_heartbeat_assigns_shared_partitions_describes_and_leaves(broker, client, version):
    topic = unique_topic("sg-hb")
    topic_id = client.create_topic(topic, partitions=2)
    group = new_group()
    a = str(uuid.uuid4())
    first = heartbeat(client, group, a, 0, [topic], version)
    assert first.error_code == NONE and first.member_epoch > 0, first
    assert {(t.topic_id, p) for t in first.assignment.topic_partitions for p in t.partitions} == \
        {(topic_id, 0), (topic_id, 1)}
    epochs = {a: first.member_epoch}
    owned = {}
    for _ in range(2):  # three members on two partitions: each gets one, one partition is shared
        m = str(uuid.uuid4())
        joined = heartbeat(client, group, m, 0, [topic], version)
        assert joined.error_code == NONE, joined
        epochs[m] = joined.member_epoch
        owned[m] = {p for t in joined.assignment.topic_partitions for p in t.partitions}
    for m, epoch in epochs.items():
        r = heartbeat(client, group, m, epoch, None, version)
        assert r.error_code == NONE, r
        if r.assignment is not None:  # only when it changed since the member's last answer
            owned[m] = {p for t in r.assignment.topic_partitions for p in t.partitions}
    assert all(len(owned[m]) == 1 for m in epochs) and set().union(*owned.values()) == {0, 1}, owned
    (d,) = client.request(DESCRIBE, 1, group_ids=[group], include_authorized_operations=False).groups
    assert d.group_state == "Stable" and d.assignor_name == "simple" and len(d.members) == 3, d
    assert {m.member_id: {p for t in m.assignment.topic_partitions for p in t.partitions} for m in d.members} == owned
    listed = {g.group_id: g for g in client.request(LIST_GROUPS, 5, states_filter=[], types_filter=["share"]).groups}
    assert listed[group].group_type == "share" and listed[group].protocol_type == "share", listed
    assert heartbeat(client, group, str(uuid.uuid4()), 1, None, version).error_code == UNKNOWN_MEMBER_ID
    assert heartbeat(client, group, a, 0, None, version).error_code == INVALID_REQUEST  # a join names its topics
    left = heartbeat(client, group, a, -1, None, version)
    assert left.error_code == NONE and left.member_epoch == -1, left
    d, missing = client.request(DESCRIBE, 1, group_ids=[group, new_group()], include_authorized_operations=False).groups
    assert a not in {m.member_id for m in d.members} and len(d.members) == 2, d
    assert missing.error_code == GROUP_ID_NOT_FOUND, missing


@over_versions(FETCH)
def test_share_fetch_acquires_and_takes_acknowledgements(broker, client, version):
    topic = unique_topic("sg-fetch")
    topic_id = client.create_topic(topic)
    client.produced(topic, 0, make_batch([b"a", b"b", b"c"]))
    group = new_group()
    a, _ = join(client, group, topic)
    b, _ = join(client, group, topic)
    assert share_fetch(client, group, str(uuid.uuid4()), 0, topic_id, version=version).error_code == UNKNOWN_MEMBER_ID
    got = partition_of(share_fetch(client, group, a, 0, topic_id, version=version))
    assert got.error_code == NONE
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got.acquired_records] == [(0, 2, 1)]
    assert [v for _, _, _, v in read_records(bytes(got.records))] == [b"a", b"b", b"c"]
    other = share_fetch(client, group, b, 0, topic_id, version=version)
    assert all(not p.acquired_records for t in other.responses for p in t.partitions), other  # all held by a
    assert share_fetch(client, group, a, 7, topic_id, version=version).error_code == INVALID_SHARE_SESSION_EPOCH
    assert share_fetch(client, group, a, 0, topic_id, [ack(0, 0, ACCEPT)], version).error_code == INVALID_REQUEST
    # a's session is at epoch 1 still (refused requests do not move it): accept a, release b, reject c
    resp = share_fetch(client, group, a, 1, topic_id, [ack(0, 2, ACCEPT, RELEASE, REJECT)], version)
    p = partition_of(resp)
    assert resp.error_code == NONE and p.acknowledge_error_code == NONE, resp
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records] == [(1, 1, 2)], p
    again = partition_of(share_fetch(client, group, a, 2, topic_id, [ack(0, 0, ACCEPT)], version))
    assert again.acknowledge_error_code == INVALID_RECORD_STATE  # offset 0 is done with
    closing = share_fetch(client, group, a, -1, topic_id, [ack(1, 1, ACCEPT)], version)
    assert partition_of(closing).acknowledge_error_code == NONE
    assert share_fetch(client, group, a, 4, topic_id, version=version).error_code == SHARE_SESSION_NOT_FOUND


@over_versions(ACKNOWLEDGE)
def test_share_acknowledge_within_a_session(broker, client, version):
    topic = unique_topic("sg-ack")
    topic_id = client.create_topic(topic)
    client.produced(topic, 0, make_batch([b"x", b"y"]))
    group = new_group()
    a, _ = join(client, group, topic)
    b, _ = join(client, group, topic)
    assert acknowledge(client, group, a, 1, topic_id, [ack(0, 1, ACCEPT)], version).error_code == \
        SHARE_SESSION_NOT_FOUND
    assert acknowledge(client, group, a, 0, topic_id, [ack(0, 1, ACCEPT)], version).error_code == \
        INVALID_SHARE_SESSION_EPOCH
    assert [r.last_offset for r in partition_of(share_fetch(client, group, a, 0, topic_id)).acquired_records] == [1]
    share_fetch(client, group, b, 0, topic_id)
    not_yours = partition_of(acknowledge(client, group, b, 1, topic_id, [ack(0, 0, ACCEPT)], version))
    assert not_yours.error_code == INVALID_RECORD_STATE
    assert acknowledge(client, group, a, 3, topic_id, [ack(0, 0, ACCEPT)], version).error_code == \
        INVALID_SHARE_SESSION_EPOCH
    done = acknowledge(client, group, a, 1, topic_id, [ack(0, 0, ACCEPT)], version)
    assert done.error_code == NONE and partition_of(done).error_code == NONE, done
    # closing the session releases what a still holds (offset 1): b takes it, delivered twice
    assert acknowledge(client, group, a, -1, topic_id, [], version).error_code == NONE
    taken = partition_of(share_fetch(client, group, b, 2, topic_id))  # its acknowledge took epoch 1
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in taken.acquired_records] == [(1, 1, 2)]


@over_versions(DESCRIBE)
def test_describe_a_share_group_and_what_is_not_one(broker, client, version):
    topic = unique_topic("sg-describe")
    topic_id = client.create_topic(topic)
    group = new_group()
    member, epoch = join(client, group, topic)
    found, missing = client.request(DESCRIBE, version, group_ids=[group, new_group()],
                                    include_authorized_operations=False).groups
    assert found.error_code == NONE and found.group_state == "Stable" and found.group_epoch == epoch, found
    (m,) = found.members
    assert m.member_id == member and m.subscribed_topic_names == (topic,) and m.member_epoch == epoch
    assert [(t.topic_id, t.topic_name, t.partitions) for t in m.assignment.topic_partitions] == [(topic_id, topic, (0,))]
    assert missing.error_code == GROUP_ID_NOT_FOUND, missing
    assert heartbeat(client, group, member, -1).error_code == NONE
    (empty,) = client.request(DESCRIBE, version, group_ids=[group], include_authorized_operations=False).groups
    assert empty.error_code == NONE and empty.group_state == "Empty" and empty.members == (), empty


def test_v2_record_limit_and_renew(broker, client):
    topic = unique_topic("sg-v2")
    topic_id = client.create_topic(topic)
    client.produced(topic, 0, make_batch([b"a", b"b", b"c", b"d"]))
    group = new_group()
    a, _ = join(client, group, topic)
    b, _ = join(client, group, topic)
    limited = partition_of(share_fetch(client, group, a, 0, topic_id, version=2, max_records=2, share_acquire_mode=1))
    assert [(r.first_offset, r.last_offset) for r in limited.acquired_records] == [(0, 1)]  # not the whole batch
    assert share_fetch(client, group, a, 1, topic_id, version=2, share_acquire_mode=7).error_code == INVALID_REQUEST
    assert partition_of(acknowledge(client, group, a, 1, topic_id, [ack(0, 0, RENEW)], version=1)).error_code == \
        INVALID_REQUEST  # RENEW is v2's (the refusal is the partition's: the session moves on)
    renewed = acknowledge(client, group, a, 2, topic_id, [ack(0, 1, RENEW)], version=2)
    assert partition_of(renewed).error_code == NONE and renewed.acquisition_lock_timeout.total_seconds() == 30, renewed
    only_renew = share_fetch(client, group, a, 3, topic_id, [ack(0, 0, RENEW)], version=2, is_renew_ack=True)
    assert partition_of(only_renew).acknowledge_error_code == NONE and not partition_of(only_renew).acquired_records
    others = partition_of(share_fetch(client, group, b, 0, topic_id, version=2))
    assert [(r.first_offset, r.last_offset) for r in others.acquired_records] == [(2, 3)]  # 0 and 1 still a's
    done = acknowledge(client, group, a, 4, topic_id, [ack(0, 1, ACCEPT)], version=2)
    assert partition_of(done).error_code == NONE  # renewing kept them a's


def test_renew_is_refused_in_a_group_that_disables_it(broker, client):
    """share.renew.acknowledge.enable=false (KIP-1222's group config): a RENEW, in ShareAcknowledge
    or ShareFetch v2, is the partition's INVALID_RECORD_STATE, as Kafka's; nothing in it applied."""
    topic = unique_topic("sg-norenew")
    topic_id = client.create_topic(topic)
    client.produced(topic, 0, make_batch([b"a", b"b"]))
    group = new_group()
    assert set_group_config(client, group, "share.renew.acknowledge.enable", "1") == INVALID_CONFIG
    assert set_group_config(client, group, "share.renew.acknowledge.enable", "false") == NONE
    a, _ = join(client, group, topic)
    got = partition_of(share_fetch(client, group, a, 0, topic_id, version=2))
    assert [(r.first_offset, r.last_offset) for r in got.acquired_records] == [(0, 1)], got
    refused = acknowledge(client, group, a, 1, topic_id, [ack(0, 0, ACCEPT), ack(1, 1, RENEW)], version=2)
    assert partition_of(refused).error_code == INVALID_RECORD_STATE, refused
    only_renew = share_fetch(client, group, a, 2, topic_id, [ack(0, 1, RENEW)], version=2, is_renew_ack=True)
    assert partition_of(only_renew).acknowledge_error_code == INVALID_RECORD_STATE, only_renew
    done = acknowledge(client, group, a, 3, topic_id, [ack(0, 1, ACCEPT)], version=2)
    assert partition_of(done).error_code == NONE, done  # both still a's: the refused ACCEPT was not applied


def set_group_config(client: Client, group: str, name: str, value: str) -> int:
    r = client.request(INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
        {"resource_type": GROUP_RESOURCE, "resource_name": group,
         "configs": [{"name": name, "config_operation": SET, "value": value}]}])
    (result,) = r.responses
    return result.error_code


def test_by_duration_starts_at_the_first_record_that_new(broker, client):
    """Records a day old and records of now (CreateTime set by the producer): a group with
    share.auto.offset.reset by_duration:PT1H is handed only the new ones at its first fetch; on a
    partition whose records are all older it starts at the end, and gets the next record."""
    topic, old_only = unique_topic("sg-dur"), unique_topic("sg-dur-old")
    topic_id, old_only_id = client.create_topic(topic), client.create_topic(old_only)
    now = int(time.time() * 1000)
    for name in (topic, old_only):
        client.produced(name, 0, make_batch([b"old-0", b"old-1", b"old-2"], timestamps=[now - DAY_MS] * 3))
    client.produced(topic, 0, make_batch([b"new-0", b"new-1"], timestamps=[now, now]))
    group = new_group()
    assert set_group_config(client, group, "share.auto.offset.reset", "by_duration:-PT1H") == INVALID_CONFIG
    assert set_group_config(client, group, "share.auto.offset.reset", "by_duration:PT1H") == NONE
    member, _ = join(client, group, topic)
    got = partition_of(share_fetch(client, group, member, 0, topic_id))
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got.acquired_records] == [(3, 4, 1)], got
    assert [v for _, _, _, v in read_records(bytes(got.records))] == [b"new-0", b"new-1"]

    other = new_group()
    assert set_group_config(client, other, "share.auto.offset.reset", "by_duration:PT1H") == NONE
    member, _ = join(client, other, old_only)
    assert not partition_of(share_fetch(client, other, member, 0, old_only_id)).acquired_records
    client.produced(old_only, 0, make_batch([b"next"]))
    got = partition_of(share_fetch(client, other, member, 1, old_only_id))
    assert [(r.first_offset, r.last_offset) for r in got.acquired_records] == [(3, 3)], got


@pytest.mark.parametrize("stop", ["kill", "stop"])
def test_members_go_on_at_their_epochs_after_a_restart(broker, client, stop):
    topic = unique_topic("sg-members")
    topic_id = client.create_topic(topic, partitions=2)
    group = new_group()
    a, joined_at = join(client, group, topic)
    b, epoch = join(client, group, topic)
    caught_up = heartbeat(client, group, a, joined_at)
    assert caught_up.error_code == NONE and caught_up.member_epoch == epoch, caught_up
    group_epoch, before = owned_by_member(client, group)
    assert {m: e for m, (e, _) in before.items()} == {a: epoch, b: epoch}
    assert set().union(*(ps for _, ps in before.values())) == {(topic_id, 0), (topic_id, 1)}, before
    getattr(broker, stop)()
    broker.start()
    with Client.to(broker) as again:
        assert owned_by_member(again, group) == (group_epoch, before)
        for m in (a, b):
            r = heartbeat(again, group, m, epoch)
            assert (r.error_code, r.member_epoch) == (NONE, epoch), r
            assert assigned(r) == before[m][1], r  # its first answer from the new broker carries it
            r = heartbeat(again, group, m, epoch)
            assert (r.error_code, r.member_epoch, r.assignment) == (NONE, epoch, None), r
        assert owned_by_member(again, group) == (group_epoch, before)  # no rebalance


def test_a_member_that_does_not_come_back_is_fenced_at_its_session_timeout(broker_factory):
    """Its records are tombstoned: after another restart it is not replayed."""
    proc = broker_factory(*BROKER_ARGS, "--group-share-session-timeout-ms", "10000",
                          "--group-share-heartbeat-interval-ms", "1000")
    topic = unique_topic("sg-fenced")
    with Client.to(proc) as c:
        c.create_topic(topic, partitions=2)
        group = new_group()
        stays, joined_at = join(c, group, topic)
        goes, epoch = join(c, group, topic)
        assert heartbeat(c, group, stays, joined_at).member_epoch == epoch
    proc.kill()
    proc.start()
    with Client.to(proc) as c:
        deadline = time.monotonic() + 120
        while goes in owned_by_member(c, group)[1]:  # stays heartbeats meanwhile, goes never does
            assert time.monotonic() < deadline, "the member that did not come back was never fenced"
            r = heartbeat(c, group, stays, epoch)
            assert r.error_code == NONE, r
            epoch = r.member_epoch
            time.sleep(0.2)  # stays's heartbeat period while it waits for goes to be fenced
        assert heartbeat(c, group, stays, epoch).error_code == NONE
        group_epoch, after = owned_by_member(c, group)
        assert set(after) == {stays} and len(after[stays][1]) == 2, after  # both partitions are stays' now
    proc.kill()
    proc.start()
    with Client.to(proc) as c:
        assert owned_by_member(c, group) == (group_epoch, after)
        assert heartbeat(c, group, goes, epoch).error_code == UNKNOWN_MEMBER_ID


def group_config(client: Client, group: str, name: str) -> str | None:
    r = client.request(DESCRIBE_CONFIGS, 4, resources=[{"resource_type": GROUP_RESOURCE, "resource_name": group,
                                                       "configuration_keys": [name]}],
                       include_synonyms=False, include_documentation=False)
    (result,) = r.results
    assert result.error_code == NONE, result
    return next((e.value for e in result.configs if e.name == name), None)


def test_a_groups_heartbeat_interval_and_session_timeout_are_its_own(broker_factory):
    """share.heartbeat.interval.ms is what the group's heartbeat answers say, and a member silent
    for the group's share.session.timeout.ms is fenced, long before the broker's 45 s would; values
    outside the broker's group.share.{min,max}.* bounds are INVALID_CONFIG."""
    interval = datetime.timedelta(milliseconds=1234)
    proc = broker_factory(*BROKER_ARGS, "--group-share-min-session-timeout-ms", "3000",
                          "--group-share-min-heartbeat-interval-ms", "1000")
    topic = unique_topic("sg-own-timers")
    with Client.to(proc) as c:
        c.create_topic(topic, partitions=2)
        group = new_group()
        for name, value in (("share.session.timeout.ms", "2999"), ("share.session.timeout.ms", "60001"),
                            ("share.heartbeat.interval.ms", "999"), ("share.heartbeat.interval.ms", "15001"),
                            ("share.heartbeat.interval.ms", "45000")):
            assert set_group_config(c, group, name, value) == INVALID_CONFIG, (name, value)
        assert set_group_config(c, group, "share.heartbeat.interval.ms", "1234") == NONE
        assert set_group_config(c, group, "share.session.timeout.ms", "3000") == NONE
        assert group_config(c, group, "share.heartbeat.interval.ms") == "1234"
        assert group_config(c, group, "share.session.timeout.ms") == "3000"
        stays = str(uuid.uuid4())
        first = heartbeat(c, group, stays, 0, [topic])
        assert first.error_code == NONE and first.heartbeat_interval == interval, first
        epoch = first.member_epoch
        goes, _ = join(c, group, topic)
        joined = time.monotonic()
        deadline = joined + 120
        while goes in owned_by_member(c, group)[1]:  # stays heartbeats meanwhile, goes never does
            assert time.monotonic() < deadline, "the silent member was never fenced"
            r = heartbeat(c, group, stays, epoch)
            assert r.error_code == NONE and r.heartbeat_interval == interval, r
            epoch = r.member_epoch
            time.sleep(0.2)  # stays's heartbeat period, as above
        assert time.monotonic() - joined < 40, "fenced at the broker's session timeout, not the group's"
        assert heartbeat(c, group, goes, epoch).error_code == UNKNOWN_MEMBER_ID
