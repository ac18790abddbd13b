"""Share groups (KIP-932, Kafka's queues) with the real Java client's KafkaShareConsumer
(kafka-clients 4.3.0), each member a ShareCheck JVM (java_share_members.py) acknowledging every
record explicitly, in both storage layouts.

What share groups promise, each test one promise: members sharing one partition get each record
once between them; a record a member holds without acknowledging goes to another member once its
lock runs out; a REJECTed record is never delivered again; a record RELEASEd delivery.count.limit
times is archived; a broker restart redelivers exactly what was not acknowledged, counted; and the
Java Admin (java_share_members.ShareAdmin) lists, alters and deletes a share group's offsets and
deletes the group, as Kafka lets it only while the group is empty, and still finds an idle group
after a restart (kill -9 or SIGTERM).
Per-group configs (KIP-932's group configs, set with the Java Admin's incrementalAlterConfigs on
resource type GROUP) are checked against the broker's bounds, survive a restart and bind the
group's share-partitions: its own delivery limit, and read_committed (only committed
transactional records, up to the last stable offset).
The record lock is 8 s here (not Kafka's 30 s, so the redelivery test is short; long enough that a
member on a loaded machine acknowledges before it runs out), the delivery limit Kafka's 5.
"""

from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Producer

from compat_tests.helpers.java_client import JavaClient
from compat_tests.helpers.java_share_members import (
    DELIVERY_LIMIT, LOCK_MS, ShareAdmin, accepted, assert_a_released_record_is_archived_at_two_deliveries,
    assert_no_failures, produce, wait_until)
from compat_tests.helpers.topics import create_topic, unique_topic

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def admin(sbroker, tmp_path):
    """The Java Admin (ClientCheck's JVM; it opens an Admin per call, so it outlives a broker restart)."""
    with JavaClient(sbroker.bootstrap, log_dir=tmp_path) as java:
        yield java


def alter_group(admin: JavaClient, group: str, **configs: str) -> dict:
    """IncrementalAlterConfigs SET of a group's configs (names with "_" for "."): {ok, error}."""
    sets = {name.replace("_", "."): value for name, value in configs.items()}
    return admin.call("incrementalAlterConfigs", resources=[{"type": "group", "name": group, "set": sets}])[
        f"group:{group}"]


def test_members_sharing_one_partition_get_each_record_once(sbroker, members):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-split"), 1)
    group = unique_topic("share-split-g")
    ms = [members(sbroker.bootstrap, n, topic, group) for n in ("a", "b", "c")]
    values = [f"v-{i}" for i in range(60)]
    produce(sbroker.bootstrap, topic, values, one_per_batch=True)
    wait_until(lambda: set(accepted(ms)) == set(values), "every record accepted", ms)
    counts = accepted(ms)
    assert all(counts[v] == 1 for v in values), {v: c for v, c in counts.items() if c != 1}
    assert sum(1 for m in ms if m.records()) >= 2, "one member took every record:\n" + \
        "\n".join(m.describe() for m in ms)
    assert_no_failures(ms)


def test_records_held_past_their_lock_go_to_another_member(sbroker, members):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-lock"), 1)
    group = unique_topic("share-lock-g")
    values = [f"h-{i}" for i in range(10)]
    produce(sbroker.bootstrap, topic, values)
    holder = members(sbroker.bootstrap, "holder", topic, group, hold=True)
    held = {r[2] for r in holder.wait_for("held")["records"]}
    assert held, holder.describe()
    taker = members(sbroker.bootstrap, "taker", topic, group)
    wait_until(lambda: set(accepted([taker])) == set(values), "the taker accepted every record", [holder, taker])
    again = {r[2]: r[3] for r in taker.records() if r[2] in held}
    assert again and all(count >= 2 for count in again.values()), again
    assert holder.proc.poll() is None, "the holder left: this was its session, not its locks"
    assert_no_failures([taker])


def test_a_rejected_record_is_never_delivered_again(sbroker, members):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-reject"), 1)
    group = unique_topic("share-reject-g")
    produce(sbroker.bootstrap, topic, ["r-0", "bad", "r-1"])
    first = members(sbroker.bootstrap, "first", topic, group, actions={"bad": "reject"})
    wait_until(lambda: {"r-0", "r-1"} <= set(accepted([first])), "the first member took r-0, r-1", [first])
    first.close()
    second = members(sbroker.bootstrap, "second", topic, group)
    produce(sbroker.bootstrap, topic, ["after"])
    wait_until(lambda: "after" in accepted([second]), "the second member took 'after'", [second])
    delivered = [r for m in (first, second) for r in m.records() if r[2] == "bad"]
    assert [(r[3], r[4]) for r in delivered] == [(1, "reject")], delivered
    assert_no_failures([first, second])


def test_a_record_released_delivery_count_limit_times_is_archived(sbroker, members):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-limit"), 1)
    group = unique_topic("share-limit-g")
    produce(sbroker.bootstrap, topic, ["poison"])
    m = members(sbroker.bootstrap, "releaser", topic, group, actions={"poison": "release"})
    wait_until(lambda: sum(1 for r in m.records() if r[2] == "poison") >= DELIVERY_LIMIT,
               "poison delivered up to the limit", [m])
    produce(sbroker.bootstrap, topic, ["after"])
    wait_until(lambda: "after" in accepted([m]), "'after' accepted", [m])
    counts = [r[3] for r in m.records() if r[2] == "poison"]
    assert counts == list(range(1, DELIVERY_LIMIT + 1)), counts
    assert_no_failures([m])


def test_a_restart_redelivers_exactly_what_was_not_acknowledged(sbroker, members):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-restart"), 1)
    group = unique_topic("share-restart-g")
    done = [f"done-{i}" for i in range(20)]
    produce(sbroker.bootstrap, topic, done)
    acker = members(sbroker.bootstrap, "acker", topic, group)
    wait_until(lambda: set(accepted([acker])) == set(done), "the first 20 accepted", [acker])
    acker.close()
    pending = [f"pending-{i}" for i in range(10)]
    produce(sbroker.bootstrap, topic, pending)
    holder = members(sbroker.bootstrap, "holder", topic, group, hold=True)
    held = {r[2] for r in holder.wait_for("held")["records"]}
    assert held and held <= set(pending), holder.describe()
    sbroker.kill()  # SIGKILL: what the broker said it stored is all it has
    holder.stop()
    sbroker.start()
    after = members(sbroker.bootstrap, "after", topic, group)
    wait_until(lambda: set(accepted([after])) >= set(pending), "the pending records accepted after the restart",
               [after])
    got = after.records()
    assert not [r for r in got if r[2] in done], got
    assert all(r[3] == 2 for r in got if r[2] in held), got  # the delivery before the restart counted
    assert Counter(r[2] for r in got) == Counter(pending), got
    assert_no_failures([after])


def test_the_admin_lists_alters_and_deletes_offsets_and_deletes_the_group(sbroker, members, tmp_path):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-admin"), 2)
    group = unique_topic("share-admin-g")
    values = [f"a-{i}" for i in range(10)]
    produce(sbroker.bootstrap, topic, values)  # all to partition 0
    with ShareAdmin(sbroker.bootstrap, log_dir=tmp_path) as admin:
        first = members(sbroker.bootstrap, "first", topic, group)
        wait_until(lambda: set(accepted([first])) == set(values), "every record accepted", [first])
        # partition 1 was read (and its state begun) but never written by its leader: no leader epoch
        done = {f"{topic}:0": {"start": 10, "leaderEpoch": 0, "lag": 0},
                f"{topic}:1": {"start": 0, "leaderEpoch": None, "lag": 0}}
        wait_until(lambda: admin.call("listOffsets", group=group, partitions=None) == done, "the start moved past "
                   "every accepted record", [first])
        assert admin.call("describe", groups=[group]) == {group: {"state": "Stable", "members": 1}}
        refused = admin.call("alterOffsets", group=group, offsets=[[topic, 0, 4]])
        assert "GroupNotEmptyException" in refused[f"{topic}:0"], refused
        assert "GroupNotEmptyException" in admin.call("deleteGroups", groups=[group])[group]
        first.close()
        assert admin.call("describe", groups=[group]) == {group: {"state": "Empty", "members": 0}}

        # back to offset 4: the next member gets 4..9 again, each a first delivery
        assert admin.call("alterOffsets", group=group, offsets=[[topic, 0, 4]]) == {f"{topic}:0": None}
        assert admin.call("listOffsets", group=group, partitions=[[topic, 0]]) == \
            {f"{topic}:0": {"start": 4, "leaderEpoch": None, "lag": 6}}  # a new state, no leader's write yet
        second = members(sbroker.bootstrap, "second", topic, group)
        wait_until(lambda: set(accepted([second])) == set(values[4:]), "records 4..9 accepted again", [second])
        assert all(r[3] == 1 for r in second.records()), second.records()
        second.close()

        # the topic's state deleted: the next member starts over at share.auto.offset.reset (earliest)
        assert admin.call("deleteOffsets", group=group, topics=[topic]) == {topic: None}
        assert admin.call("listOffsets", group=group, partitions=None) == {}
        third = members(sbroker.bootstrap, "third", topic, group)
        wait_until(lambda: set(accepted([third])) == set(values), "every record accepted from the start", [third])
        third.close()

        assert admin.call("deleteGroups", groups=[group]) == {group: None}
        assert "GroupIdNotFoundException" in admin.call("describe", groups=[group])[group]
        assert admin.call("listOffsets", group=group, partitions=None) == {}
        assert "GroupIdNotFoundException" in admin.call("deleteGroups", groups=[group])[group]
        assert_no_failures([first, second, third])


def test_group_configs_are_checked_kept_across_a_restart_and_described(sbroker, admin):
    group = unique_topic("share-configs-g")
    assert alter_group(admin, group, share_delivery_count_limit="2", share_isolation_level="read_committed") == \
        {"ok": True}
    refused = alter_group(admin, group, share_record_lock_duration_ms="1000")
    assert not refused["ok"] and refused["error"].startswith("org.apache.kafka.common.errors.InvalidConfigurationException"), refused
    assert "group.share.min.record.lock.duration.ms" in refused["error"], refused
    unknown = alter_group(admin, group, share_fetch_magic="1")
    assert "Unknown group config name: share.fetch.magic" in unknown["error"], unknown
    sbroker.kill()
    sbroker.start()
    described = admin.call("describeConfigs", resources=[{"type": "group", "name": group}])[f"group:{group}"]
    assert described["ok"], described
    configs = described["configs"]
    assert (configs["share.delivery.count.limit"]["value"], configs["share.delivery.count.limit"]["source"]) == \
        ("2", "DYNAMIC_GROUP_CONFIG")
    assert configs["share.isolation.level"]["value"] == "read_committed"
    lock = configs["share.record.lock.duration.ms"]
    assert (lock["value"], lock["source"]) == (str(LOCK_MS), "STATIC_BROKER_CONFIG"), lock


def test_a_groups_own_delivery_limit_archives_a_released_record_sooner(sbroker, members, admin):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-glimit"), 1)
    group = unique_topic("share-glimit-g")
    assert alter_group(admin, group, share_delivery_count_limit="2")["ok"]
    assert_a_released_record_is_archived_at_two_deliveries(sbroker.bootstrap, topic, group, members)


def test_a_read_committed_group_gets_committed_records_only_up_to_the_lso(sbroker, members, admin):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-rc"), 1)
    group = unique_topic("share-rc-g")
    assert alter_group(admin, group, share_isolation_level="read_committed")["ok"]
    txn = Producer({"bootstrap.servers": sbroker.bootstrap, "transactional.id": unique_topic("share-rc-tid"),
                    "client.id": "compat-share-rc"})
    txn.init_transactions(60)

    def transaction(values: list[str]) -> None:
        txn.begin_transaction()
        for v in values:
            txn.produce(topic, value=v.encode(), partition=0)
        txn.flush(30)

    aborted, committed, plain = [f"aborted-{i}" for i in range(5)], [f"committed-{i}" for i in range(5)], ["plain"]
    transaction(aborted)
    txn.abort_transaction(60)
    transaction(committed)
    txn.commit_transaction(60)
    produce(sbroker.bootstrap, topic, plain)
    transaction(["open"])  # left open: the last stable offset stays before it
    m = members(sbroker.bootstrap, "rc", topic, group)
    wait_until(lambda: set(accepted([m])) >= set(committed + plain), "committed and plain records accepted", [m])
    assert "open" not in accepted([m]), m.records()
    txn.commit_transaction(60)
    wait_until(lambda: "open" in accepted([m]), "the open transaction's record, once committed", [m])
    delivered = Counter(r[2] for r in m.records())
    assert delivered == Counter(committed + plain + ["open"]), delivered  # never an aborted one
    assert_no_failures([m])


def test_record_limit_acquisition_hands_out_part_of_a_batch(sbroker, members):
    """ShareFetch v2's record-limit mode (KIP-1206): a member asking for 3 records gets 3 of a
    10-record batch, not the whole batch; the other 7 go to the next member."""
    topic = create_topic(sbroker.bootstrap, unique_topic("share-rlimit"), 1)
    group = unique_topic("share-rlimit-g")
    values = [f"r-{i}" for i in range(10)]
    produce(sbroker.bootstrap, topic, values)  # one batch (linger 20 ms)
    holder = members(sbroker.bootstrap, "limited", topic, group, hold=True,
                     config={"share.acquire.mode": "record_limit", "max.poll.records": "3"})
    held = [r[2] for r in holder.wait_for("held")["records"]]
    assert len(held) == 3, held
    taker = members(sbroker.bootstrap, "taker", topic, group)
    wait_until(lambda: set(accepted([taker])) >= set(values) - set(held), "the other 7 accepted", [holder, taker])
    # the holder's 3 reach the taker only once their lock ran out (a slow start on a loaded machine)
    assert all(r[3] >= 2 for r in taker.records() if r[2] in held), taker.records()
    assert_no_failures([taker])


@pytest.mark.parametrize("stop", ["kill", "stop"])
def test_an_idle_group_is_still_there_for_the_admin_after_a_restart(sbroker, members, tmp_path, stop):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-idle"), 1)
    group = unique_topic("share-idle-g")
    values = [f"i-{i}" for i in range(10)]
    produce(sbroker.bootstrap, topic, values)
    only = members(sbroker.bootstrap, "only", topic, group)
    wait_until(lambda: set(accepted([only])) == set(values), "every record accepted", [only])
    done = {f"{topic}:0": {"start": 10, "leaderEpoch": 0, "lag": 0}}
    with ShareAdmin(sbroker.bootstrap, log_dir=tmp_path) as admin:
        wait_until(lambda: admin.call("listOffsets", group=group, partitions=None) == done,
                   "the start moved past every accepted record", [only])
    only.close()
    getattr(sbroker, stop)()
    sbroker.start()
    with ShareAdmin(sbroker.bootstrap, log_dir=tmp_path) as admin:
        assert admin.call("describe", groups=[group]) == {group: {"state": "Empty", "members": 0}}
        assert admin.call("listOffsets", group=group, partitions=None) == done
        assert admin.call("deleteGroups", groups=[group]) == {group: None}
        assert "GroupIdNotFoundException" in admin.call("describe", groups=[group])[group]
    assert_no_failures([only])
