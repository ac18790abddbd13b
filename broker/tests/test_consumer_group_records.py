"""Consumer group records of __consumer_offsets: Kafka's layouts, round-tripped, and
garbage refused with BadRecord alone."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from broker.groups.offsets_log import BadRecord
from broker.groups.consumer import records
from broker.groups.consumer.consumer_group import ClassicMetadata, MemberMetadata, SubscribedTopic
from broker.groups.consumer.reconciliation import CurrentAssignment, MemberState

text = st.text(max_size=12)
uuids = st.uuids()
assignments = st.dictionaries(uuids, st.frozensets(st.integers(0, 2**31 - 1), min_size=1, max_size=5), max_size=3)
i32 = st.integers(-2**31, 2**31 - 1)


@given(st.sampled_from(sorted(records.TYPES)), text, text)
def test_keys_round_trip(record_type, group, member):
    member_id = member if record_type in records.MEMBER_KEYED else None
    assert records.decode_key(records.key(record_type, group, member_id)) == (record_type, group, member_id)


def test_key_layout_is_kafkas():
    assert records.key(5, "g", "m") == b"\x00\x05\x00\x01g\x00\x01m"
    assert records.key(3, "g") == b"\x00\x03\x00\x01g"


def test_epoch_value_layout_is_kafkas():
    # version 0 | int32 epoch | no tagged fields
    assert records.epoch_value(7) == b"\x00\x00\x00\x00\x00\x07\x00"


@given(i32)
def test_epochs_round_trip(epoch):
    assert records.decode_epoch(records.epoch_value(epoch)) == epoch


classic = st.none() | st.builds(ClassicMetadata, i32, st.lists(st.tuples(text, st.binary())).map(tuple))


@given(st.builds(MemberMetadata, st.none() | text, st.none() | text, text, text, st.lists(text).map(tuple),
                 st.none() | text, i32, st.none() | text, classic))
def test_member_metadata_round_trips(m):
    assert records.decode_member_metadata(records.member_metadata_value(m)) == m


@given(st.lists(st.builds(SubscribedTopic, uuids, text, st.integers(0, 10_000)), max_size=4, unique_by=lambda t: t.name))
def test_partition_metadata_round_trips(topics):
    decoded = records.decode_partition_metadata(records.partition_metadata_value(topics))
    assert sorted(decoded, key=lambda t: t.name) == sorted(topics, key=lambda t: t.name)


@given(assignments)
def test_target_member_round_trips(a):
    assert records.decode_target_member(records.target_member_value(a)) == a


@given(st.builds(CurrentAssignment, st.sampled_from(list(MemberState)), i32, i32, assignments, assignments))
def test_current_assignment_round_trips(c):
    assert records.decode_current_assignment(records.current_assignment_value(c)) == c


@given(st.binary(max_size=64))
def test_garbage_raises_bad_record_only(raw):
    for decode in (records.decode_key, records.decode_epoch, records.decode_member_metadata,
                   records.decode_partition_metadata, records.decode_target_member,
                   records.decode_current_assignment):
        try:
            decode(raw)
        except BadRecord:
            pass


def test_a_classic_members_metadata_is_tagged_field_0():
    """Kafka's ClassicMemberMetadata: tag 0 after the fields every member has, so a reader that
    does not know it skips it."""
    plain = MemberMetadata(client_id="c", client_host="h", subscribed_topic_names=("t",))
    mixed = MemberMetadata(client_id="c", client_host="h", subscribed_topic_names=("t",),
                           classic=ClassicMetadata(10_000, (("range", b"\x00\x01"),)))
    tagged = records.member_metadata_value(mixed)
    struct = b"\x00\x00\x27\x10" + b"\x02" + b"\x06range" + b"\x03\x00\x01" + b"\x00" + b"\x00"
    assert tagged == records.member_metadata_value(plain)[:-1] + b"\x01\x00" + bytes([len(struct)]) + struct
