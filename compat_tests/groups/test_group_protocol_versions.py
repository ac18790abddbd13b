"""Every advertised version of the consumer-group APIs, exercised over a raw socket.

FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
DescribeGroups, ListGroups and DeleteGroups. Each test drives a real group through the
classic protocol with the version under test for its own API and reference versions for the
others, and checks the outcome Kafka defines: generations, leaders, assignments handed back,
the error codes that fence stale members (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
REBALANCE_IN_PROGRESS), and the state seen afterwards through a second API.

The module's broker runs with no initial rebalance delay, so a one-member group completes
its join at once instead of waiting the 3 s a new group waits for more members.
"""

from __future__ import annotations

import uuid

from compat_tests.helpers.group_requests import (
    DESCRIBE, JOIN, LEAVE, MEMBER_ID_REQUIRED, NONE, OFFSETS_BY_TOPIC_ID, SESSION_MS, commit, fetch_committed,
    heartbeat, join, join_values, new_group, stable_member, sync)
from compat_tests.helpers.raw_kafka import Client, build_request
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic

UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
UNKNOWN_TOPIC_ID = 100
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69


BROKER_ARGS = [
    "--group-initial-rebalance-delay-ms", "0", "--offsets-topic-partitions", "3"]


# --- driving a member through the protocol ---------------------------------------------------


def send_join(client: Client, group: str, version: int, protocols) -> int:
    """Start a new member's join whose reply comes only when the rebalance completes: returns
    the correlation id to receive it by. On v4+ the member first gets its id (MEMBER_ID_REQUIRED)."""
    member_id = ""
    if version >= 4:
        r = client.request(11, version, **join_values(group, protocols=protocols))
        assert r.error_code == MEMBER_ID_REQUIRED
        member_id = r.member_id
    return client.send(build_request(11, version, **join_values(group, member_id=member_id,
                                                                protocols=protocols)))


def leave(client: Client, group: str, member_id: str, version: int = LEAVE):
    return client.request(13, version, group_id=group, member_id=member_id,
                          members=[{"member_id": member_id, "group_instance_id": None, "reason": None}])


def describe(client: Client, group: str, version: int = DESCRIBE):
    (g,) = client.request(15, version, groups=[group], include_authorized_operations=False).groups
    assert g.group_id == group
    return g


# --- FindCoordinator -----------------------------------------------------------------------

@over_versions(10)
def test_find_coordinator(broker, client, version):
    (me,) = client.metadata([]).brokers
    groups = [new_group(), new_group()]
    if version < 4:
        r = client.request(10, version, key=groups[0], key_type=0)
        found = [(groups[0], r.error_code, r.node_id, r.host, r.port)]
    else:
        r = client.request(10, version, key_type=0, coordinator_keys=groups)
        found = [(c.key, c.error_code, c.node_id, c.host, c.port) for c in r.coordinators]
    assert found == [(g, NONE, me.node_id, broker.host, broker.port) for g in groups[:len(found)]]
    # The coordinator it names accepts the group's requests.
    member, generation = stable_member(client, groups[0])
    assert heartbeat(client, groups[0], generation, member) == NONE


# --- JoinGroup and SyncGroup ---------------------------------------------------------------

@over_versions(11)
def test_join_group_single_member(client, version):
    group = new_group()
    first = client.request(11, version, **join_values(group))
    if version >= 4:
        # KIP-394: a member without an id gets one and must come back with it.
        assert first.error_code == MEMBER_ID_REQUIRED and first.member_id
        assert first.generation_id == -1
        first = client.request(11, version, **join_values(group, member_id=first.member_id))
    assert first.error_code == NONE, first
    assert first.generation_id == 1
    assert first.leader == first.member_id
    assert first.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in first.members] == [(first.member_id, b"meta-range")]
    if version >= 7:
        assert first.protocol_type == "consumer"
    g = describe(client, group)
    assert g.group_state == "CompletingRebalance"
    assert [m.member_id for m in g.members] == [first.member_id]


@over_versions(11)
def test_join_group_errors(client, version):
    group = new_group()
    too_short = client.request(11, version, **join_values(group, session_ms=1_000))
    assert too_short.error_code == INVALID_SESSION_TIMEOUT
    member, _ = stable_member(client, group)
    unknown = client.request(11, version, **join_values(group, member_id="not-a-member"))
    assert unknown.error_code == UNKNOWN_MEMBER_ID
    other_type = client.request(11, version, **join_values(group, protocol_type="connect"))
    if version >= 4 and other_type.error_code == MEMBER_ID_REQUIRED:
        other_type = client.request(11, version, **join_values(group, member_id=other_type.member_id,
                                                               protocol_type="connect"))
    assert other_type.error_code == INCONSISTENT_GROUP_PROTOCOL
    assert describe(client, group).group_state == "Stable"
    assert [m.member_id for m in describe(client, group).members] == [member]


@over_versions(11)
def test_join_group_second_member_triggers_rebalance(broker, client, version):
    group = new_group()
    with Client.to(broker) as other:
        m1, gen1 = stable_member(client, group)
        # The newcomer's join waits until the existing member rejoins.
        cid = send_join(other, group, version, [("range", b"m2")])
        assert heartbeat(client, group, gen1, m1) == REBALANCE_IN_PROGRESS
        j1 = join(client, group, version, member_id=m1)
        j2 = other.recv(11, version, cid, timeout=SESSION_MS / 1000 + 5)
    assert (j1.error_code, j2.error_code) == (NONE, NONE)
    assert j1.generation_id == j2.generation_id == gen1 + 1
    assert j1.leader == j2.leader == m1, "the member that stayed leads the new generation"
    assert sorted((m.member_id, m.metadata) for m in j1.members) == sorted(
        [(m1, b"meta-range"), (j2.member_id, b"m2")])
    assert j2.members == (), "only the leader is sent the members' metadata"


@over_versions(11)
def test_join_group_picks_a_protocol_every_member_supports(broker, client, version):
    group = new_group()
    with Client.to(broker) as other:
        a = join(client, group, version, protocols=[("roundrobin", b"a"), ("range", b"a")])
        assert a.error_code == NONE and a.protocol_name == "roundrobin"
        assert sync(client, group, a.generation_id, a.member_id, [(a.member_id, b"x")],
                    protocol_name="roundrobin").error_code == NONE
        cid = send_join(other, group, version, [("range", b"b")])
        a2 = join(client, group, version, member_id=a.member_id,
                  protocols=[("roundrobin", b"a"), ("range", b"a")])
        b = other.recv(11, version, cid, timeout=SESSION_MS / 1000 + 5)
    assert a2.protocol_name == b.protocol_name == "range"
    # A member that supports none of the group's protocols is refused.
    lone = client.request(11, version, **join_values(group, protocols=[("sticky", b"c")]))
    if version >= 4 and lone.error_code == MEMBER_ID_REQUIRED:
        lone = client.request(11, version, **join_values(group, member_id=lone.member_id,
                                                         protocols=[("sticky", b"c")]))
    assert lone.error_code == INCONSISTENT_GROUP_PROTOCOL


@over_versions(14)
def test_sync_group(client, version):
    group = new_group()
    j = join(client, group)
    stale = sync(client, group, j.generation_id + 7, j.member_id, version=version)
    assert stale.error_code == ILLEGAL_GENERATION
    stranger = sync(client, group, j.generation_id, "stranger", version=version)
    assert stranger.error_code == UNKNOWN_MEMBER_ID
    s = sync(client, group, j.generation_id, j.member_id, [(j.member_id, b"\x00\x01assignment")],
             version=version)
    assert s.error_code == NONE and s.assignment == b"\x00\x01assignment"
    if version >= 5:
        assert (s.protocol_type, s.protocol_name) == ("consumer", "range")
    g = describe(client, group)
    assert g.group_state == "Stable"
    assert [m.member_assignment for m in g.members] == [b"\x00\x01assignment"]


# --- Heartbeat and LeaveGroup --------------------------------------------------------------

@over_versions(12)
def test_heartbeat(client, version):
    group = new_group()
    member, generation = stable_member(client, group)
    assert heartbeat(client, group, generation, member, version) == NONE
    assert heartbeat(client, group, generation + 1, member, version) == ILLEGAL_GENERATION
    assert heartbeat(client, group, generation, "ghost", version) == UNKNOWN_MEMBER_ID
    assert heartbeat(client, new_group(), 1, "ghost", version) == UNKNOWN_MEMBER_ID
    assert describe(client, group).group_state == "Stable"


@over_versions(13)
def test_leave_group(client, version):
    group = new_group()
    member, generation = stable_member(client, group)
    r = leave(client, group, member, version)
    assert r.error_code == NONE
    if version >= 3:
        assert [(m.member_id, m.error_code) for m in r.members] == [(member, NONE)]
    g = describe(client, group)
    assert (g.group_state, g.members) == ("Empty", ())
    assert heartbeat(client, group, generation, member) == UNKNOWN_MEMBER_ID
    again = leave(client, group, member, version)
    if version >= 3:
        assert again.error_code == NONE
        assert [(m.member_id, m.error_code) for m in again.members] == [(member, UNKNOWN_MEMBER_ID)]
    else:
        assert again.error_code == UNKNOWN_MEMBER_ID


# --- OffsetCommit and OffsetFetch -----------------------------------------------------------

@over_versions(8)
def test_offset_commit_by_member_and_fencing(client, version):
    group, topic = new_group(), unique_topic("commit")
    client.create_topic(topic, 2)
    member, generation = stable_member(client, group)
    ok = commit(client, group, {(topic, 0): 5, (topic, 1): 9}, generation, member, version)
    assert ok == {(topic, 0): NONE, (topic, 1): NONE}
    stale = commit(client, group, {(topic, 0): 100}, generation + 1, member, version)
    assert stale == {(topic, 0): ILLEGAL_GENERATION}
    stranger = commit(client, group, {(topic, 0): 100}, generation, "ghost", version)
    assert stranger == {(topic, 0): UNKNOWN_MEMBER_ID}
    missing = commit(client, group, {(unique_topic("nowhere"), 0): 1}, generation, member, version)
    assert list(missing.values()) == [UNKNOWN_TOPIC_ID if version >= OFFSETS_BY_TOPIC_ID
                                      else UNKNOWN_TOPIC_OR_PARTITION]
    assert fetch_committed(client, group, [(topic, 0), (topic, 1)]) == {
        (topic, 0): (5, "m5"), (topic, 1): (9, "m9")}


@over_versions(8)
def test_offset_commit_while_the_group_rebalances(broker, client, version):
    """Kafka's classic coordinator decides by the committing member's state: before it rejoins
    (PreparingRebalance) it may still commit what it consumed in its generation; once it
    rejoined but has no assignment yet (CompletingRebalance) REBALANCE_IN_PROGRESS; with the
    generation it had before rejoining ILLEGAL_GENERATION; after it left UNKNOWN_MEMBER_ID.
    Clients rely on these to stop committing partitions they are losing."""
    group, topic = new_group(), unique_topic("commit-rebalance")
    client.create_topic(topic, 1)
    tp = (topic, 0)
    with Client.to(broker) as other:
        m1, gen1 = stable_member(client, group)
        cid = send_join(other, group, JOIN, [("range", b"m2")])
        assert describe(client, group).group_state == "PreparingRebalance"
        assert commit(client, group, {tp: 1}, gen1, m1, version) == {tp: NONE}
        j1 = join(client, group, member_id=m1)
        j2 = other.recv(11, JOIN, cid, timeout=SESSION_MS / 1000 + 5)
        gen2 = j1.generation_id
        assert describe(client, group).group_state == "CompletingRebalance"
        assert commit(client, group, {tp: 2}, gen2, m1, version) == {tp: REBALANCE_IN_PROGRESS}
        assert commit(other, group, {tp: 2}, gen2, j2.member_id, version) == {tp: REBALANCE_IN_PROGRESS}
        assert commit(client, group, {tp: 2}, gen1, m1, version) == {tp: ILLEGAL_GENERATION}
        assert sync(client, group, gen2, m1, [(m1, b"a"), (j2.member_id, b"b")]).error_code == NONE
        assert commit(other, group, {tp: 3}, gen2, j2.member_id, version) == {tp: NONE}
        assert leave(other, group, j2.member_id).error_code == NONE
        assert commit(other, group, {tp: 4}, gen2, j2.member_id, version) == {tp: UNKNOWN_MEMBER_ID}
    assert fetch_committed(client, group, [tp]) == {tp: (3, "m3")}


@over_versions(8)
def test_offset_commit_without_membership(client, version):
    """Generation -1 and no member id: the admin/standalone commit Kafka allows for a group with
    no members, refused while the group has a generation running."""
    group, topic = new_group(), unique_topic("standalone")
    client.create_topic(topic, 1)
    assert commit(client, group, {(topic, 0): 42}, version=version) == {(topic, 0): NONE}
    assert fetch_committed(client, group, [(topic, 0)]) == {(topic, 0): (42, "m42")}
    assert describe(client, group).group_state == "Empty"
    stable_member(client, group)
    assert commit(client, group, {(topic, 0): 43}, version=version) != {(topic, 0): NONE}
    assert fetch_committed(client, group, [(topic, 0)]) == {(topic, 0): (42, "m42")}


@over_versions(9)
def test_offset_fetch(client, version):
    group, topic = new_group(), unique_topic("fetch")
    client.create_topic(topic, 3)
    assert commit(client, group, {(topic, 0): 7, (topic, 2): 11}) == {(topic, 0): NONE, (topic, 2): NONE}
    named = fetch_committed(client, group, [(topic, 0), (topic, 1), (topic, 2)], version)
    # A partition without a commit answers offset -1, no error.
    assert named == {(topic, 0): (7, "m7"), (topic, 1): (-1, ""), (topic, 2): (11, "m11")} or \
        named == {(topic, 0): (7, "m7"), (topic, 1): (-1, None), (topic, 2): (11, "m11")}
    if version >= 2:
        assert fetch_committed(client, group, None, version, topics_of_group=[topic]) == {
            (topic, 0): (7, "m7"), (topic, 2): (11, "m11")}
    assert fetch_committed(client, new_group(), [(topic, 0)], version)[(topic, 0)][0] == -1


@over_versions(8, lo=OFFSETS_BY_TOPIC_ID)
def test_offset_commit_by_topic_id(client, version):
    """Kafka's OffsetCommitRequestTest.testOffsetCommitWithUnknownTopicId: the partitions of an id
    the broker does not know (never created, or its topic deleted) answer UNKNOWN_TOPIC_ID, and
    the other topics of the request are committed."""
    group, topic, gone = new_group(), unique_topic("commit-id"), unique_topic("commit-gone")
    client.create_topic(topic, 2)
    gone_id = client.create_topic(gone, 1)
    r = client.request(20, 6, topics=[{"name": gone, "topic_id": None}], timeout=10_000)
    assert r.responses[0].error_code == NONE
    ids = {topic: client.topic_id(topic), gone: gone_id, "never": uuid.uuid4()}
    got = commit(client, group, {(topic, 0): 3, (gone, 0): 4, ("never", 0): 5, ("never", 1): 6, (topic, 1): 7},
                 version=version, ids=ids)
    assert got == {(topic, 0): NONE, (topic, 1): NONE, (gone, 0): UNKNOWN_TOPIC_ID,
                   ("never", 0): UNKNOWN_TOPIC_ID, ("never", 1): UNKNOWN_TOPIC_ID}
    assert fetch_committed(client, group, None, topics_of_group=[topic]) == {
        (topic, 0): (3, "m3"), (topic, 1): (7, "m7")}


@over_versions(9, lo=OFFSETS_BY_TOPIC_ID)
def test_offset_fetch_by_topic_id(client, version):
    """An id the broker does not know answers UNKNOWN_TOPIC_ID and no offset on each partition
    asked; the group's other topics answer as usual, by id."""
    group, topic = new_group(), unique_topic("fetch-id")
    topic_id = client.create_topic(topic, 2)
    assert commit(client, group, {(topic, 1): 9}) == {(topic, 1): NONE}
    stranger = uuid.uuid4()
    r = client.request(9, version, require_stable=False, groups=[{
        "group_id": group, "member_id": None, "member_epoch": -1, "topics": [
            {"topic_id": stranger, "partition_indexes": [0, 1]},
            {"topic_id": topic_id, "partition_indexes": [0, 1]}]}])
    (g,) = r.groups
    assert g.error_code == NONE
    got = {(t.topic_id, p.partition_index): (p.error_code, p.committed_offset) for t in g.topics for p in t.partitions}
    assert got == {(stranger, 0): (UNKNOWN_TOPIC_ID, -1), (stranger, 1): (UNKNOWN_TOPIC_ID, -1),
                   (topic_id, 0): (NONE, -1), (topic_id, 1): (NONE, 9)}


# --- DescribeGroups, ListGroups, DeleteGroups ------------------------------------------------

@over_versions(15)
def test_describe_groups(client, version):
    stable, empty, unknown = new_group(), new_group(), new_group()
    member, _ = stable_member(client, stable)
    m2, _ = stable_member(client, empty)
    assert leave(client, empty, m2).error_code == NONE
    r = client.request(15, version, groups=[stable, empty, unknown], include_authorized_operations=False)
    by_id = {g.group_id: g for g in r.groups}
    assert list(by_id) == [stable, empty, unknown]
    s = by_id[stable]
    assert (s.error_code, s.group_state, s.protocol_type, s.protocol_data) == (NONE, "Stable", "consumer", "range")
    (m,) = s.members
    assert (m.member_id, m.client_id, m.member_metadata, m.member_assignment) == (
        member, "twinlog-raw", b"meta-range", b"all-of-it")
    assert m.client_host.lstrip("/") == "127.0.0.1"
    assert (by_id[empty].group_state, by_id[empty].members) == ("Empty", ())
    # Kafka describes a group it does not know as Dead, without an error; from v6 (KIP-1043) still
    # Dead, with GROUP_ID_NOT_FOUND and a message beside it.
    u = by_id[unknown]
    if version >= 6:
        assert (u.error_code, u.error_message, u.group_state) == (
            GROUP_ID_NOT_FOUND, f"Group {unknown} not found.", "Dead")
        assert s.error_message is None
    else:
        assert (u.error_code, u.group_state) == (NONE, "Dead")


@over_versions(16)
def test_list_groups(client, version):
    stable, empty = new_group(), new_group()
    stable_member(client, stable)
    m, _ = stable_member(client, empty)
    leave(client, empty, m)
    values = {"states_filter": [], "types_filter": []}
    r = client.request(16, version, **values)
    assert r.error_code == NONE
    listed = {g.group_id: g for g in r.groups}
    assert {stable, empty} <= set(listed)
    assert listed[stable].protocol_type == "consumer"
    if version >= 4:
        assert (listed[stable].group_state, listed[empty].group_state) == ("Stable", "Empty")
        only_empty = client.request(16, version, states_filter=["Empty"], types_filter=[])
        names = {g.group_id for g in only_empty.groups}
        assert empty in names and stable not in names
    if version >= 5:
        assert listed[stable].group_type.lower() == "classic"
        consumer_type = client.request(16, version, states_filter=[], types_filter=["consumer"])
        assert stable not in {g.group_id for g in consumer_type.groups}


@over_versions(42)
def test_delete_groups(client, version):
    busy, idle, unknown = new_group(), new_group(), new_group()
    topic = unique_topic("deleted-offsets")
    client.create_topic(topic, 1)
    stable_member(client, busy)
    m, generation = stable_member(client, idle)
    assert commit(client, idle, {(topic, 0): 3}, generation, m) == {(topic, 0): NONE}
    leave(client, idle, m)
    r = client.request(42, version, groups_names=[busy, idle, unknown])
    assert {g.group_id: g.error_code for g in r.results} == {
        busy: NON_EMPTY_GROUP, idle: NONE, unknown: GROUP_ID_NOT_FOUND}
    assert describe(client, idle).group_state == "Dead"
    assert fetch_committed(client, idle, [(topic, 0)])[(topic, 0)][0] == -1
    assert describe(client, busy).group_state == "Stable"

