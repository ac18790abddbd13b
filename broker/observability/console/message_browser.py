"""The message browser: the records of one partition from an offset, a timestamp or the end.

Reading is split as the event loop needs it. On the loop (`read_batches`, through
broker_state.read_on_loop): the start offset is found (the time index for a timestamp, the HW
less the count for "the end") and at most READ_BYTES of whole batches are copied, through the
partition's own read path, the one Fetch serves consumers from, so both layouts answer alike.
Off the loop (`decode`, in the HTTP thread): the batches are decompressed and their records
turned into what the page shows (record_display.py). A consumer's view: records below the high
watermark only, control batches (transaction markers) left out.

A partition hosted on another broker of a cluster is not read from here: the answer names the
broker that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from replica.readable_partition import FetchIsolation
from segment.log import OffsetOutOfRange
from wire.record_batch import TIMESTAMP_TYPE_BIT, iter_batches
from wire.records import InvalidRecords, iter_records

from broker.observability.console.record_display import record_row
from broker.observability.console.broker_state import RequestRefused

READ_BYTES = 1024 * 1024  # the most one browse copies off the log on the loop
MAX_RECORDS = 500
DEFAULT_RECORDS = 50
FROM_OFFSET, FROM_TIMESTAMP, FROM_END = "offset", "timestamp", "end"
ISOLATION = FetchIsolation.HIGH_WATERMARK  # what a read_uncommitted consumer sees


@dataclass(frozen=True)
class BrowseQuery:
    topic: str
    partition: int
    start: str  # FROM_OFFSET, FROM_TIMESTAMP or FROM_END
    position: int  # the offset, the timestamp (ms), or unused for FROM_END
    limit: int

    @classmethod
    def parse(cls, query: dict[str, list[str]]) -> "BrowseQuery":
        """From the page's query string; RequestRefused(400) naming what is wrong."""
        def one(name: str, default: str | None = None) -> str:
            value = query.get(name, [default])[0]
            if value is None or value == "":
                raise RequestRefused(400, f"give {name}=")
            return value
        start = one("from", FROM_END)
        if start not in (FROM_OFFSET, FROM_TIMESTAMP, FROM_END):
            raise RequestRefused(400, f"from={start!r}: give offset, timestamp or end")
        try:
            partition = int(one("partition", "0"))
            position = int(one("position", "0")) if start != FROM_END else 0
            limit = int(one("limit", str(DEFAULT_RECORDS)))
        except ValueError:
            raise RequestRefused(400, "partition, position and limit are integers") from None
        if partition < 0 or position < 0 or not 1 <= limit <= MAX_RECORDS:
            raise RequestRefused(400, f"partition and position must be >= 0, limit 1..{MAX_RECORDS}")
        return cls(one("topic"), partition, start, position, limit)


@dataclass(frozen=True)
class RawRead:
    """What read_batches copies on the loop: whole batches from `start_offset` on."""
    start_offset: int
    high_watermark: int
    log_start_offset: int
    layout: str
    batches: list[bytes]


async def read_batches(broker, q: BrowseQuery) -> RawRead:
    topic = broker.topics.topics.get(q.topic)
    if topic is None:
        raise RequestRefused(404, f"unknown topic {q.topic!r}")
    if q.partition >= len(topic.partitions):
        raise RequestRefused(404, f"topic {q.topic!r} has {len(topic.partitions)} partitions")
    partition = topic.partitions[q.partition]
    if partition is None:
        placement = broker.view.placement(q.topic, q.partition, None)
        holders = ", ".join(str(r) for r in placement.replicas) if placement else "another broker"
        raise RequestRefused(409, f"partition {q.partition} of {q.topic!r} is hosted on broker {holders}: "
                                  "browse it in that broker's console")
    hw, log_start = partition.high_watermark, partition.log_start_offset
    if q.start == FROM_END:
        start = max(log_start, hw - q.limit)
    elif q.start == FROM_TIMESTAMP:
        found = partition.fetch_offset_for_timestamp(q.position, ISOLATION)
        start = found[0] if found is not None else hw
    else:
        start = max(q.position, log_start)
    batches, position, copied = [], start, 0
    while position < min(hw, start + q.limit) and copied < READ_BYTES:
        try:
            regions = partition.read(position, READ_BYTES - copied, ISOLATION)
        except OffsetOutOfRange:  # retention deleted it meanwhile
            break
        if not regions:
            break
        for region in regions:
            data = region if isinstance(region, bytes) else partition.read_bytes(region)
            for _pos, header in iter_batches(data):
                position = max(position, header.last_offset + 1)
            batches.append(data)
            copied += len(data)
    return RawRead(start, hw, log_start, topic.mode_of(q.partition), batches)


def decode(q: BrowseQuery, raw: RawRead) -> dict:
    """The page's answer: records at or after the start offset, below the HW, at most q.limit."""
    rows = []
    for data in raw.batches:
        for pos, header in iter_batches(data):
            if header.is_control or len(rows) >= q.limit:
                continue
            stamp = "LogAppendTime" if header.attributes & TIMESTAMP_TYPE_BIT else "CreateTime"
            try:
                for record in iter_records(memoryview(data)[pos:pos + header.size]):
                    if raw.start_offset <= record.offset < raw.high_watermark and len(rows) < q.limit:
                        rows.append(record_row(q.partition, record, stamp))
            except InvalidRecords as exc:
                rows.append({"partition": q.partition, "offset": header.base_offset,
                             "error": f"batch at offset {header.base_offset} cannot be read: {exc}"})
    return {"topic": q.topic, "partition": q.partition, "layout": raw.layout, "start_offset": raw.start_offset,
            "high_watermark": raw.high_watermark, "log_start_offset": raw.log_start_offset, "records": rows}
