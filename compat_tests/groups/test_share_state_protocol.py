"""The share coordinator's RPCs (KIP-932: InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, the calls a share-partition's leader makes) over a raw socket at every served
version, and FindCoordinator's share key type: what is stored comes back, a write lies over what is
kept, the epochs fence as Kafka's share coordinator fences them, malformed input gets Kafka's error
codes, and the state survives a SIGKILL (it is records of `__share_group_state`, replayed).
NOT_COORDINATOR, from a broker that does not lead the key's partition, is test_cluster_share_groups.py's.
"""

from __future__ import annotations

import base64
import uuid

from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST = 0, 3, 42
FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH = 74, 124
INITIALIZE, READ, WRITE, FIND_COORDINATOR = 83, 84, 85, 10
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
SHARE_KEY_TYPE = 2


def new_key(client: Client) -> tuple[str, uuid.UUID]:
    topic_id = client.create_topic(unique_topic("ss"), partitions=2)
    return f"ssg-{uuid.uuid4().hex[:10]}", topic_id


def read(client: Client, group: str, topic_id, partition: int = 0, leader_epoch: int = 0, version: int = 0):
    r = client.request(READ, version, group_id=group, topics=[
        {"topic_id": topic_id, "partitions": [{"partition": partition, "leader_epoch": leader_epoch}]}])
    (t,) = r.results
    (p,) = t.partitions
    return p


def write(client: Client, group: str, topic_id, batches, start: int, state_epoch: int = 0, leader_epoch: int = 0,
          version: int = 0, partition: int = 0) -> int:
    r = client.request(WRITE, version, group_id=group, topics=[{"topic_id": topic_id, "partitions": [
        {"partition": partition, "state_epoch": state_epoch, "leader_epoch": leader_epoch, "start_offset": start,
         "state_batches": [{"first_offset": f, "last_offset": l, "delivery_state": s, "delivery_count": c}
                           for f, l, s, c in batches]}]}])
    return r.results[0].partitions[0].error_code


def initialize(client: Client, group: str, topic_id, state_epoch: int, start: int, version: int = 0) -> int:
    r = client.request(INITIALIZE, version, group_id=group, topics=[
        {"topic_id": topic_id, "partitions": [{"partition": 0, "state_epoch": state_epoch, "start_offset": start}]}])
    return r.results[0].partitions[0].error_code


def batches_of(p) -> list[tuple[int, int, int, int]]:
    return [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches]


@over_versions(READ)
def test_read_of_a_share_partition_never_written_is_uninitialized_and_bad_keys_are_refused(broker, client, version):
    group, topic_id = new_key(client)
    p = read(client, group, topic_id, version=version)
    assert (p.error_code, p.start_offset, p.state_epoch, batches_of(p)) == (NONE, -1, 0, [])
    assert read(client, group, uuid.uuid4(), version=version).error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert read(client, group, topic_id, partition=2, version=version).error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert read(client, group, topic_id, partition=-1, version=version).error_code == INVALID_REQUEST
    assert read(client, "", topic_id, version=version).error_code == INVALID_REQUEST


@over_versions(INITIALIZE)
def test_initialize_sets_the_start_and_fences_a_state_epoch_not_above_the_kept_one(broker, client, version):
    group, topic_id = new_key(client)
    assert initialize(client, group, topic_id, 1, 5, version) == NONE
    p = read(client, group, topic_id)
    assert (p.error_code, p.start_offset, p.state_epoch, batches_of(p)) == (NONE, 5, 1, [])
    assert initialize(client, group, topic_id, 1, 9, version) == FENCED_STATE_EPOCH
    assert initialize(client, group, topic_id, 2, 9, version) == NONE
    assert read(client, group, topic_id).start_offset == 9


@over_versions(WRITE)
def test_a_write_lies_over_what_is_kept_and_old_epochs_are_fenced(broker, client, version):
    group, topic_id = new_key(client)
    assert write(client, group, topic_id, [(0, 3, ACKNOWLEDGED, 1), (4, 9, AVAILABLE, 2)], 0,
                 state_epoch=1, leader_epoch=3, version=version) == NONE
    # the second write moves the start past 0..1 and changes 6..7; 2..3, 4..5 and 8..9 stay as kept
    assert write(client, group, topic_id, [(6, 7, ARCHIVED, 3)], 2, state_epoch=1, leader_epoch=3,
                 version=version) == NONE
    p = read(client, group, topic_id, leader_epoch=3)
    assert (p.error_code, p.start_offset, p.state_epoch) == (NONE, 2, 1)
    assert batches_of(p) == [(2, 3, ACKNOWLEDGED, 1), (4, 5, AVAILABLE, 2), (6, 7, ARCHIVED, 3), (8, 9, AVAILABLE, 2)]
    assert write(client, group, topic_id, [], -1, state_epoch=1, leader_epoch=2, version=version) == FENCED_LEADER_EPOCH
    assert write(client, group, topic_id, [], -1, state_epoch=0, leader_epoch=3, version=version) == FENCED_STATE_EPOCH
    assert write(client, group, topic_id, [(10, 10, 1, 1)], -1, state_epoch=1, leader_epoch=3,
                 version=version) == INVALID_REQUEST  # 1 is ACQUIRED: a lock is never stored
    assert read(client, group, topic_id, leader_epoch=2).error_code == FENCED_LEADER_EPOCH
    assert batches_of(read(client, group, topic_id, leader_epoch=3)) == batches_of(p)  # the refusals changed nothing


def test_the_state_outlives_a_sigkill(broker, client):
    group, topic_id = new_key(client)
    assert write(client, group, topic_id, [(7, 8, ACKNOWLEDGED, 1), (9, 9, AVAILABLE, 4)], 7, state_epoch=2,
                 leader_epoch=1) == NONE
    broker.kill()
    broker.start()
    with Client.to(broker) as again:
        p = read(again, group, topic_id, leader_epoch=1)
    assert (p.error_code, p.start_offset, p.state_epoch, batches_of(p)) == \
        (NONE, 7, 2, [(7, 8, ACKNOWLEDGED, 1), (9, 9, AVAILABLE, 4)])


@over_versions(FIND_COORDINATOR, lo=6)
def test_find_coordinator_names_the_share_coordinator_of_a_share_partition_key(broker, client, version):
    group, topic_id = new_key(client)
    kafka_uuid = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")  # Kafka's Uuid.toString
    good = f"{group}:{kafka_uuid}:1"
    r = client.request(FIND_COORDINATOR, version, key_type=SHARE_KEY_TYPE, coordinator_keys=[good, "g:nope:1"])
    answers = {c.key: (c.error_code, c.port) for c in r.coordinators}
    assert answers[good] == (NONE, broker.port)  # the one broker leads every partition
    assert answers["g:nope:1"][0] == INVALID_REQUEST


def test_find_coordinator_before_v6_has_no_share_key_type(broker, client):
    group, topic_id = new_key(client)
    r = client.request(FIND_COORDINATOR, 5, key_type=SHARE_KEY_TYPE, coordinator_keys=[f"{group}:x:0"])
    assert r.coordinators[0].error_code == INVALID_REQUEST

