"""The stored unit of the commitlog: a small header of ours, then the producer's batch.

Every partition's batches go into one commitlog, so each carries who it belongs to.
Byte layout (big-endian), one unit:

    +--------+------+------------+-------------------------------------------------+
    | offset | size | field      |                                                 |
    +--------+------+------------+-------------------------------------------------+
    |      0 |    4 | totalSize  | bytes of the whole unit, this field included    |
    |      4 |    4 | magic      | MESSAGE, TRUNCATE, START_AT or BLANK (below)    |
    |      8 |    4 | crc        | CRC32C of bytes 12 .. totalSize                 |
    |     12 |    8 | baseOffset | Kafka offset of the batch's first record        |
    |     20 |    8 | storeTime  | broker clock (ms) when the unit was appended    |
    |     28 |    4 | partition  |                                                 |
    |     32 |    2 | topicLen   | n                                               |
    |     34 |    n | topic      | UTF-8                                           |
    |   34+n |    - | batch      | record batch v2, exactly as stored by Kafka     |
    +--------+------+------------+-------------------------------------------------+

The batch is the producer's bytes with baseOffset and partitionLeaderEpoch
already rewritten (both outside the batch's own CRC), so a fetch sends
`batch` straight from the file. Our CRC covers our header after the CRC field
and the whole batch, so a torn or stale unit is recognised whatever part of it
is damaged.

Kinds of unit (the magic):
- MESSAGE: a batch, as above.
- TRUNCATE: no batch; `baseOffset` is where the partition's log ends after the
  cut (follower truncation: the base of the batch that held the offset asked
  for). Recovery replays it like a message, so batches removed by truncate_to
  never come back from a re-dispatch.
- START_AT: no batch; the partition's log was emptied and now starts and ends
  at `baseOffset` (truncate_fully_and_start_at: a follower whose end fell below
  the leader's log start). Recovery empties the queue and ends it there; the
  new log start is in the checkpoint before the unit can be lost (store.py).
- BLANK: the rest of a commitlog file is padding. Only totalSize (= bytes to
  the end of the file) and magic are written; a unit never spans two files.
  BLANK_MIN_SIZE bytes are always left free at a file's end for this marker.

Crash behaviour: units are written in commitlog order (several per pwritev, see
commitlog.py); after a crash the commitlog may end in a unit whose size, magic
or CRC do not check out, which recovery treats as the end of valid data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from wire.record_batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC, parse_header

# RocketMQ's MESSAGE_MAGIC_CODE and BLANK_MAGIC_CODE; TRUNCATE and START_AT are ours.
MESSAGE = 0xDAA320A7
TRUNCATE = 0xDAA320B1
START_AT = 0xDAA320B2
BLANK = 0xCBD43194

FIXED = struct.Struct(">IIIqqiH")  # totalSize .. topicLen
FIXED_SIZE = FIXED.size  # 34
PREFIX = struct.Struct(">II")  # totalSize, magic
BLANK_MIN_SIZE = PREFIX.size
CRC_START = 12
MAX_TOPIC_BYTES = 0xFFFF


@dataclass(frozen=True, slots=True)
class UnitHeader:
    size: int  # totalSize
    magic: int
    topic: str
    partition: int
    base_offset: int
    store_time: int
    header_size: int  # 34 + len(topic): where the batch starts inside the unit

    @property
    def batch_size(self) -> int:
        return self.size - self.header_size


def header_size_for(topic: str) -> int:
    return FIXED_SIZE + len(topic.encode())


def _head(magic: int, topic: str, partition: int, base_offset: int, store_time: int, body) -> bytearray:
    """Our header for a unit holding `body`, its CRC already covering the body."""
    name = topic.encode()
    if len(name) > MAX_TOPIC_BYTES:
        raise ValueError(f"topic name of {len(name)} bytes does not fit a unit header")
    head = bytearray(FIXED_SIZE + len(name))
    FIXED.pack_into(head, 0, len(head) + len(body), magic, 0, base_offset, store_time, partition, len(name))
    head[FIXED_SIZE:] = name
    struct.pack_into(">I", head, 8, crc32c.crc32c(body, crc32c.crc32c(memoryview(head)[CRC_START:])))
    return head


def message_parts(topic: str, partition: int, base_offset: int, store_time: int, batch) -> tuple:
    """A MESSAGE unit as (our header, the batch itself): the commitlog writes both with one
    pwritev, so the batch (up to max.message.bytes) is never copied to build the unit."""
    return _head(MESSAGE, topic, partition, base_offset, store_time, batch), batch


def encode_truncate(topic: str, partition: int, offset: int, store_time: int) -> bytearray:
    return _head(TRUNCATE, topic, partition, offset, store_time, b"")


def encode_start_at(topic: str, partition: int, offset: int, store_time: int) -> bytearray:
    return _head(START_AT, topic, partition, offset, store_time, b"")


def encode_blank(size: int) -> bytes:
    return PREFIX.pack(size, BLANK)


def peek_prefix(buf, pos: int) -> tuple[int, int] | None:
    """(totalSize, magic) at pos, or None if fewer than 8 bytes remain."""
    if len(buf) - pos < PREFIX.size:
        return None
    return PREFIX.unpack_from(buf, pos)


def parse_unit(buf, pos: int, room: int) -> UnitHeader | None:
    """The MESSAGE, TRUNCATE or START_AT unit at `pos`, fully checked, or None if it is not a valid one.

    `room` is how many bytes the unit may occupy (to the end of its file); `buf`
    must hold the whole unit if it is to be accepted. Checked: size within room
    and buffer, magic, CRC, topic UTF-8, and for a message that the batch's own
    length field and magic agree with the unit.
    """
    if len(buf) - pos < FIXED_SIZE:
        return None
    total, magic, crc, base_offset, store_time, partition, topic_len = FIXED.unpack_from(buf, pos)
    if magic not in (MESSAGE, TRUNCATE, START_AT) or total < FIXED_SIZE + topic_len or total > room:
        return None
    if pos + total > len(buf):
        return None
    view = memoryview(buf)
    if crc32c.crc32c(view[pos + CRC_START : pos + total]) != crc:
        return None
    try:
        topic = bytes(view[pos + FIXED_SIZE : pos + FIXED_SIZE + topic_len]).decode()
    except UnicodeDecodeError:
        return None
    header = UnitHeader(total, magic, topic, partition, base_offset, store_time, FIXED_SIZE + topic_len)
    if magic == MESSAGE:
        start = pos + header.header_size
        if header.batch_size < HEADER_SIZE:
            return None
        batch = parse_header(buf, start)
        if batch.magic != MAGIC or batch.batch_length + LOG_OVERHEAD != header.batch_size:
            return None
        if batch.base_offset != base_offset:
            return None
    elif header.batch_size:
        return None
    return header
