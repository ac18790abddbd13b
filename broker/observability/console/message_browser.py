"""The message browser: the records of one partition from an offset, a timestamp or the end.

Reading is split as the event loop needs it. On the loop (`read_batches`, through
broker_state.read_on_loop): the start offset is found (the time index for a timestamp, the HW
less the count for "the end") and at most READ_BYTES of whole batches are copied, through the
partition's own read path, the one Fetch serves consumers from, so both layouts answer alike;
the loop is yielded after each read.
Off the loop (`decode`, in the HTTP thread): the batches are decompressed and their records
turned into what the page shows (`shown`, below). A consumer's view: records below the high
watermark only, control batches (transaction markers) left out.

A partition hosted on another broker of a cluster is not read from here: the answer names the
broker that holds it.

How a key, value or header value is shown (`shown`): a value is user data of any shape, which
the page must neither break on nor run. JSON objects and arrays are pretty-printed, other UTF-8
is text as it came, anything else binary (a hex preview and base64), each cut at DISPLAY_BYTES;
`kind` says which, so the page needs no guessing of its own and writes the text with
textContent, never as markup.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from typing import Any

from replica.partition import Partition
from replica.readable_partition import FetchIsolation
from segment.storage_errors import OffsetOutOfRange, StorageError
from wire.record_batch import TIMESTAMP_TYPE_BIT, iter_batches
from wire.records import InvalidRecords, Record, iter_records

from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.observability.console.broker_state import RequestRefused

READ_BYTES = 1024 * 1024  # the most one browse copies off the log on the loop
MAX_RECORDS = 500
DEFAULT_RECORDS = 50
FROM_OFFSET, FROM_TIMESTAMP, FROM_END = "offset", "timestamp", "end"
ISOLATION = FetchIsolation.HIGH_WATERMARK  # what a read_uncommitted consumer sees
DISPLAY_BYTES = 16 * 1024  # the most of one key, value or header value sent to the page
HEX_PREVIEW_BYTES = 64
MAX_JSON_DEPTH = 64  # deeper documents are shown as text: pretty-printing them costs recursion


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


async def read_batches(topics: TopicLookup, view: ClusterView, q: BrowseQuery) -> RawRead:
    topic = topics.topics.get(q.topic)
    if topic is None:
        raise RequestRefused(404, f"unknown topic {q.topic!r}")
    if q.partition >= len(topic.partitions):
        raise RequestRefused(404, f"topic {q.topic!r} has {len(topic.partitions)} partitions")
    partition = topic.partitions[q.partition]
    if partition is None:
        placement = view.placement(q.topic, q.partition, None)
        holders = ", ".join(str(r) for r in placement.replicas) if placement else "another broker"
        raise RequestRefused(409, f"partition {q.partition} of {q.topic!r} is hosted on broker {holders}: "
                                  "browse it in that broker's console")
    assert isinstance(partition, Partition)  # a hosted replica (key-lookup topics' views are not in topics)
    hw, log_start = partition.high_watermark, partition.log_start_offset
    if q.start == FROM_END:
        start = max(log_start, hw - q.limit)
    elif q.start == FROM_TIMESTAMP:
        found = partition.fetch_offset_for_timestamp(q.position, ISOLATION)
        start = found[0] if found is not None else hw
    else:
        start = max(q.position, log_start)
    batches: list[bytes] = []
    position, copied = start, 0
    while position < min(hw, start + q.limit) and copied < READ_BYTES:
        try:
            regions = partition.read(position, READ_BYTES - copied, ISOLATION)
        except (OffsetOutOfRange, StorageError):  # retention or a deletion got there first
            break
        before = position
        for region in regions:
            data = region if isinstance(region, bytes) else partition.read_bytes(region)
            for _pos, header in iter_batches(data):
                position = max(position, header.last_offset + 1)
            batches.append(data)
            copied += len(data)
        if position == before:  # nothing more below the HW
            break
        await asyncio.sleep(0)  # each read is one bounded copy: other clients get the loop between
    return RawRead(start, hw, log_start, topic.mode_of(q.partition), batches)


def decode(q: BrowseQuery, raw: RawRead) -> dict[str, Any]:
    """The page's answer: records at or after the start offset, below the HW, at most q.limit."""
    rows: list[dict[str, Any]] = []
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


def shown(data: bytes | None) -> dict[str, Any]:
    """{kind: null|json|text|binary, text, size, cut}: `size` is the whole field's, `cut` says
    that only the first DISPLAY_BYTES are in `text`."""
    if data is None:
        return {"kind": "null", "text": None, "size": 0, "cut": False}
    cut = len(data) > DISPLAY_BYTES
    head = data[:DISPLAY_BYTES]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # a cut may split a multi-byte character at the very end: that is still text
        if not (cut and exc.start >= len(head) - 3):
            return _binary(head, len(data), cut)
        text = head[:exc.start].decode("utf-8")
    if not cut:
        pretty = _pretty_json(text)
        if pretty is not None:
            return {"kind": "json", "text": pretty, "size": len(data), "cut": False}
    return {"kind": "text", "text": text, "size": len(data), "cut": cut}


def _binary(head: bytes, size: int, cut: bool) -> dict[str, Any]:
    preview = " ".join(f"{b:02x}" for b in head[:HEX_PREVIEW_BYTES])
    return {"kind": "binary", "text": preview + (" …" if len(head) > HEX_PREVIEW_BYTES else ""),
            "base64": base64.b64encode(head).decode(), "size": size, "cut": cut}


def _pretty_json(text: str) -> str | None:
    """Indented JSON when `text` is a JSON object or array (a bare number or string is shown as
    it came), else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or _nesting(stripped) > MAX_JSON_DEPTH:
        return None
    try:
        return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def _nesting(text: str) -> int:
    """An upper bound of the document's depth (brackets inside strings count too)."""
    depth = deepest = 0
    for ch in text:
        if ch in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "}]":
            depth -= 1
    return deepest


def record_row(partition: int, record: Record, timestamp_type: str) -> dict[str, Any]:
    return {"partition": partition, "offset": record.offset, "timestamp": record.timestamp,
            "timestamp_type": timestamp_type, "key": shown(record.key), "value": shown(record.value),
            "headers": [{"name": name, "value": shown(value)} for name, value in record.headers]}
