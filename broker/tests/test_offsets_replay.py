"""Start-up replay of `__consumer_offsets` (offsets_store.replay, offsets_replay.load) over a log that
holds batches and records it cannot read, on both storage engines.

Each bad batch sits between two good commits in the one partition: replay must log one warning
naming the partition and offset, skip exactly the bad batch (all of it, never half a batch),
and load the commits on both sides of it.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time

import crc32c
import pytest

from broker.broker import Broker
from wire.error_codes import ErrorCode
from broker.settings.config_from_settings import config_with
from broker.groups import offsets_log, offsets_replay
from broker.coordinator.clock import ManualClock
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group_timers import GroupTimers
from broker.groups.committed_offset import CommittedOffset
from broker.groups.offsets_store import OffsetsStore
from broker.groups.tests.group_broker import offsets_store
from broker.storage.modes import MODES
from wire.batch_builder import build_batch

_HEADER = struct.Struct(">qiibIhiqqqhii")  # record_batch.py draws the layout
GZIP = 1


def _varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _crc_valid_batch(records: bytes, count: int, codec: int = 0) -> bytearray:
    """A batch whose header and CRC are right whatever `records` holds: what a client could
    produce, and what a log can hold."""
    batch = bytearray(_HEADER.size) + records
    _HEADER.pack_into(batch, 0, 0, len(batch) - 12, -1, 2, 0, codec, count - 1, 0, 0, -1, -1, -1, count)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


def _commit(group: str, offset: int) -> tuple[bytes, bytes]:
    return (offsets_log.offset_key(group, "t", 0),
            offsets_log.offset_value(CommittedOffset(offset, -1, "", 1)))


async def _append(store: OffsetsStore, group: str, offset: int) -> ErrorCode:
    """A plain commit of the group, written as the groups' shard writes its records."""
    topic = await store.ensure_topic()
    assert topic is not None
    partition = topic.partitions[offsets_log.partition_for(group, len(topic.partitions))]
    assert partition is not None
    return await store.append_records(partition, [offsets_log.KeyValue(*_commit(group, offset))])


def _record(key: bytes, value: bytes) -> bytes:
    """One record of a batch v2 (batch_builder's layout), so a test can follow it with a bad one."""
    body = b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key + _varint(len(value)) + value + _varint(0)
    return _varint(len(body)) + body


# (name, batch, whether the warning is about the whole batch)
BAD = [
    ("record claims 16,777,215 bytes", _crc_valid_batch(_varint(16_777_215) + bytes(16), 1), True),
    ("gzip records that do not decompress", _crc_valid_batch(b"not gzip at all", 1, GZIP), True),
    ("a readable commit, then a record claiming 16,777,215 bytes",
     _crc_valid_batch(_record(*_commit("half", 7)) + _varint(16_777_215) + bytes(16), 2), True),
    ("key of an unknown version", build_batch([(b"\x00\x09junk", b"v")], 1), False),
    ("group id that is not UTF-8",
     build_batch([(b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x00", b"v")], 1), False),
    ("offset value cut short", build_batch([(_commit("short", 3)[0], b"\x00\x03\x00")], 1), False),
]


def _broker(data_dir, mode: str) -> Broker:
    """A real single broker on a temp dir (no listener: OffsetsStore needs its topics only)."""
    return Broker(config_with(data_dir=str(data_dir), storage_mode=mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, bad, whole_batch", BAD, ids=[b[0] for b in BAD])
def test_replay_skips_what_it_cannot_read_and_loads_the_rest(tmp_path, caplog, mode, name, bad, whole_batch):
    broker = _broker(tmp_path, mode)
    store = offsets_store(broker, 1, ManualClock())
    assert asyncio.run(_append(store, "before", 50)) is ErrorCode.none
    partition = store.topic().partitions[store.partition_index("before")]
    bad_offset = partition.log_end_offset
    # Planted in the log itself (the one the store already holds open for the partition), below
    # the produce path's checks (which now refuse such records), as an older broker or a damaged
    # disk left them.
    plog = broker.storage.store(mode).open_partition(offsets_log.TOPIC, partition.index, partition.config)
    plog.append(bytearray(bad), 0, int(time.time() * 1000))
    assert asyncio.run(_append(store, "after", 60)) is ErrorCode.none
    broker.storage.close()

    reopened = _broker(tmp_path, mode)
    reopened_store = offsets_store(reopened, 1, ManualClock())
    coord = GroupCoordinator(reopened_store, GroupTimers(reopened_store.partition_index, ManualClock()), 0)
    with caplog.at_level(logging.WARNING, logger="broker.groups"):
        offsets_replay.load(coord, reopened_store.replay())
    reopened.storage.close()

    assert set(coord.groups) == {"before", "after"}
    assert coord.groups["before"].offsets[("t", 0)].offset == 50
    assert coord.groups["after"].offsets[("t", 0)].offset == 60
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING and r.name.startswith("broker.groups")]
    assert len(warnings) == 1, warnings
    where = f"in partition 0 at offsets {bad_offset}-" if whole_batch else f"in partition 0 at offset {bad_offset}:"
    assert where in warnings[0] and "__consumer_offsets" in warnings[0], warnings
    assert not any(r.exc_info for r in caplog.records)
