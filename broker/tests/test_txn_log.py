"""`__transaction_state` records: Kafka's TransactionLogKey / TransactionLogValue bytes, both value versions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.txn import txn_log
from broker.txn.state import TxnState
from broker.txn.txn_log import BadRecord, TxnRecord

ONGOING = TxnRecord(producer_id=7, producer_epoch=3, timeout_ms=60_000, state=TxnState.ONGOING,
                    partitions=(("a", (0, 2)), ("b", (1,))), last_update_ms=1_700_000_000_123,
                    start_ms=1_700_000_000_001)


def test_key_is_version_0_and_the_id():
    assert txn_log.key("tx-1") == b"\x00\x00\x00\x04tx-1"
    assert txn_log.decode_key(b"\x00\x00\x00\x04tx-1") == "tx-1"


def test_value_v0_bytes_as_kafkas_schema_lays_them_out():
    expected = (struct.pack(">hqhib", 0, 7, 3, 60_000, 1)
                + struct.pack(">i", 2)
                + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 2)
                + struct.pack(">h", 1) + b"b" + struct.pack(">ii", 1, 1)
                + struct.pack(">qq", 1_700_000_000_123, 1_700_000_000_001))
    assert txn_log.value(ONGOING, version=0) == expected
    assert txn_log.decode_value(expected) == ONGOING


def test_value_v1_is_flexible_with_the_producer_ids_tagged():
    record = TxnRecord(7, 3, 60_000, TxnState.PREPARE_ABORT, (("a", (5,)),), 10, 9,
                       previous_producer_id=6, next_producer_id=-1, client_transaction_version=0)
    expected = (struct.pack(">hqhib", 1, 7, 3, 60_000, 3)
                + b"\x02"  # one topic (count + 1)
                + b"\x02a" + b"\x02" + struct.pack(">i", 5) + b"\x00"
                + struct.pack(">qq", 10, 9)
                + b"\x01" + b"\x00\x08" + struct.pack(">q", 6))  # one tagged field: 0 = previous producer id
    assert txn_log.value(record) == expected
    assert txn_log.decode_value(expected) == record


def test_empty_writes_null_partitions():
    empty = TxnRecord(7, 0, 1000, TxnState.EMPTY, (), 5, -1)
    assert txn_log.value(empty, version=0)[17:21] == struct.pack(">i", -1)
    assert txn_log.decode_value(txn_log.value(empty)) == empty
    assert txn_log.decode_value(txn_log.value(empty, version=0)) == empty


def test_ids_go_to_kafkas_partition():
    # Java: "tx-1".hashCode() = 3572520
    assert txn_log.partition_for("tx-1", 50) == 3572520 % 50 == 20


_records = st.builds(
    TxnRecord,
    producer_id=st.integers(0, 2**63 - 1), producer_epoch=st.integers(0, 32767),
    timeout_ms=st.integers(1, 2**31 - 1), state=st.sampled_from([s for s in TxnState if s is not TxnState.EMPTY]),
    partitions=st.dictionaries(st.text(min_size=1, max_size=20), st.sets(st.integers(0, 2**31 - 1), min_size=1,
                                                                       max_size=5), max_size=4).map(
        lambda d: txn_log.grouped((t, i) for t, ixs in d.items() for i in ixs)),
    last_update_ms=st.integers(0, 2**62), start_ms=st.integers(-1, 2**62),
    previous_producer_id=st.integers(-1, 2**62), next_producer_id=st.integers(-1, 2**62),
    client_transaction_version=st.integers(0, 2))


@given(_records)
def test_round_trip_v1(record):
    assert txn_log.decode_value(txn_log.value(record)) == record


@given(_records)
def test_round_trip_v0_drops_only_the_tagged_fields(record):
    back = txn_log.decode_value(txn_log.value(record, version=0))
    assert back == TxnRecord(record.producer_id, record.producer_epoch, record.timeout_ms, record.state,
                             record.partitions, record.last_update_ms, record.start_ms)


@given(st.binary(max_size=80))
def test_garbage_raises_only_bad_record(data):
    try:
        txn_log.decode_value(data)
        txn_log.decode_key(data)
    except BadRecord:
        pass


@pytest.mark.parametrize("cut", [1, 5, 20, 40])
def test_a_torn_value_is_a_bad_record(cut):
    with pytest.raises(BadRecord):
        txn_log.decode_value(txn_log.value(ONGOING)[:cut])
