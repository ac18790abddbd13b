"""`twinlog dump FILE...`: the files of either layout as readable lines, as kafka-dump-log prints them.

It reads the files directly (no broker needed, and a stopped broker's files are fine). The kind
of each file comes from its name and folder, or --type:

    log         <base>.log of a segment (also a compacted commitlog generation, .compacted):
                record batches end to end; one line per batch, with -r one per record
    index       <base>.index: relative offset u32 | position u32 (8 bytes an entry)
    timeindex   <base>.timeindex: timestamp i64 | relative offset u32 (12 bytes)
    commitlog   commitlog/<20 digits>: units (segment/rocket/unit_format.py) up to the BLANK
                padding or the zeros past the last write; with -r each batch's records
    queue       consumequeue/<topic>/<partition>/<first entry>: 20-byte entries, and
                <first entry>.time, its 20-byte time entries (segment/rocket/consume_queue.py)
    keyindex    index/<20 digits>: the IndexFile header and its entries (segment/rocket/index_file.py)

A torn or corrupt tail is printed as such and ends the file's walk, as the broker's recovery
would cut it there. A progress bar runs on stderr over files of more than 16 MiB when stderr
is a terminal.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import click

KINDS = ("log", "index", "timeindex", "commitlog", "queue", "keyindex")
_PROGRESS_MIN_BYTES = 16 << 20


def kind_of(path: Path) -> str | None:
    suffix, parent = path.suffix, path.parent.name
    if suffix in (".log", ".compacted"):
        return "log"
    if suffix in (".index", ".timeindex"):
        return suffix[1:]
    if "consumequeue" in path.parts and path.name.split(".")[0].isdigit():
        return "queue"
    if parent == "commitlog":
        return "commitlog"
    if parent == "index":
        return "keyindex"
    return None


@click.command("dump")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--type", "kind", type=click.Choice(KINDS), default=None, help="The kind of file (default: from its name).")
@click.option("--print-records", "-r", is_flag=True, help="Each record of each batch (offset, key, value, headers).")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None, help="Stop after this many bytes of each file.")
def dump_command(files, kind, print_records, max_bytes) -> None:
    """Print segment, index, commitlog, consume-queue or key-index FILES as readable lines."""
    from rich.console import Console

    show_progress = Console(stderr=True).is_terminal
    for path in files:
        file_kind = kind or kind_of(path)
        if file_kind is None:
            raise click.ClickException(f"{path}: cannot tell its kind from its name; give --type")
        click.echo(f"Dumping {path} ({file_kind})")
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                click.echo("(empty)")
                continue
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                view = memoryview(data)[:max_bytes or size]
                try:
                    with _Progress(len(view) if show_progress and len(view) > _PROGRESS_MIN_BYTES else 0) as progress:
                        for line in _DUMPERS[file_kind](view, path, print_records, progress):
                            click.echo(line)
                finally:
                    view.release()


class _Progress:
    """A rich progress bar over a file's bytes; does nothing for total 0."""

    def __init__(self, total: int) -> None:
        self.total, self._bar, self._task = total, None, None

    def __enter__(self) -> "_Progress":
        if self.total:
            from rich.console import Console
            from rich.progress import Progress

            self._bar = Progress(console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("dumping", total=self.total)
        return self

    def at(self, position: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=position)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()


def _base_offset(path: Path) -> int:
    stem = path.name.split(".")[0]
    return int(stem) if stem.isdigit() else 0


def _batch_lines(data, pos: int, end: int, print_records: bool, prefix: str = "", progress: _Progress | None = None):
    """kafka-dump-log's lines for the batches in data[pos:end]; stops at a torn or corrupt one."""
    from wire.record_batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC, crc_matches, parse_header
    from wire.records import InvalidRecords, iter_records

    codecs = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    while pos < end:
        if end - pos < HEADER_SIZE:
            yield f"{prefix}torn tail: {end - pos} byte(s) at position {pos}, shorter than a batch header"
            return
        h = parse_header(data, pos)
        if h.magic != MAGIC or h.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + h.size > end:
            if not any(data[pos:min(end, pos + HEADER_SIZE)]):
                return  # zeros: preallocated space past the last write
            yield f"{prefix}torn or corrupt batch at position {pos}: magic {h.magic} batchLength {h.batch_length}"
            return
        valid = crc_matches(data, pos, h.size)
        yield (f"{prefix}baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.record_count} "
               f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} producerId: {h.producer_id} "
               f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
               f"isTransactional: {str(h.is_transactional).lower()} isControl: {str(h.is_control).lower()} "
               f"position: {pos} {'LogAppendTime' if h.attributes & 0x08 else 'CreateTime'}: {h.max_timestamp} "
               f"size: {h.size} magic: {h.magic} compresscodec: {codecs.get(h.compression, h.compression)} "
               f"crc: {h.crc} isvalid: {str(valid).lower()}")
        if print_records and valid:
            try:
                for r in iter_records(data[pos:pos + h.size]):
                    yield (f"{prefix}| offset: {r.offset} CreateTime: {r.timestamp} "
                           f"keySize: {-1 if r.key is None else len(r.key)} "
                           f"valueSize: {-1 if r.value is None else len(r.value)} "
                           f"headerKeys: [{','.join(name for name, _v in r.headers)}] "
                           f"key: {_text(r.key)} payload: {_text(r.value)}")
            except InvalidRecords as exc:
                yield f"{prefix}| records do not decode: {exc}"
        pos += h.size
        if progress is not None:
            progress.at(pos)


def _text(data) -> str:
    return "null" if data is None else bytes(data).decode("utf-8", "backslashreplace")


def _dump_log(data, path: Path, print_records: bool, progress: _Progress):
    return _batch_lines(data, 0, len(data), print_records, progress=progress)


def _dump_index(data, path: Path, _records: bool, progress: _Progress):
    import struct

    base, entry = _base_offset(path), struct.Struct(">II")
    for i, (rel, position) in enumerate(entry.iter_unpack(data[:len(data) - len(data) % entry.size])):
        if i and rel == 0 and position == 0:
            return  # the unused, preallocated rest
        yield f"offset: {base + rel} position: {position}"
        progress.at(i * entry.size)


def _dump_timeindex(data, path: Path, _records: bool, progress: _Progress):
    import struct

    base, entry = _base_offset(path), struct.Struct(">qI")
    for i, (timestamp, rel) in enumerate(entry.iter_unpack(data[:len(data) - len(data) % entry.size])):
        if timestamp == 0 and rel == 0:
            return
        yield f"timestamp: {timestamp} offset: {base + rel}"
        progress.at(i * entry.size)


def _dump_commitlog(data, path: Path, print_records: bool, progress: _Progress):
    from segment.rocket import unit_format as uf

    names = {uf.MESSAGE: "MESSAGE", uf.TRUNCATE: "TRUNCATE", uf.START_AT: "START_AT"}
    base, pos, end = _base_offset(path), 0, len(data)
    while pos < end:
        prefix = uf.peek_prefix(data, pos)
        if prefix is None or prefix == (0, 0):
            return  # zeros: the sparse rest of the file, never written
        if prefix[1] == uf.BLANK:
            yield f"phys: {base + pos} BLANK size: {prefix[0]} (padding to the end of the file)"
            return
        unit = uf.parse_unit(data, pos, end - pos)
        if unit is None:
            yield f"phys: {base + pos} torn or corrupt unit (size {prefix[0]}, magic {prefix[1]:#x}): the log ends here"
            return
        yield (f"phys: {base + pos} {names[unit.magic]} size: {unit.size} topic: {unit.topic} "
               f"partition: {unit.partition} baseOffset: {unit.base_offset} storeTime: {unit.store_time}")
        if unit.magic == uf.MESSAGE:
            start = pos + unit.header_size
            yield from _batch_lines(data, start, pos + unit.size, print_records, prefix="  ")
        pos += unit.size
        progress.at(pos)


def _dump_queue(data, path: Path, _records: bool, progress: _Progress):
    from segment.rocket.queue_file import ENTRY, TIME

    first = _base_offset(path)
    if path.name.endswith(".time"):
        for i, (max_ts, running, last_delta) in enumerate(TIME.iter_unpack(data[:len(data) - len(data) % TIME.size])):
            yield f"entry: {first + i} maxTimestamp: {max_ts} runningMaxTimestamp: {running} lastOffsetDelta: {last_delta}"
        return
    for i, (phys, size, base_offset) in enumerate(ENTRY.iter_unpack(data[:len(data) - len(data) % ENTRY.size])):
        if size == 0:
            return
        yield f"entry: {first + i} phys: {phys} size: {size} baseOffset: {base_offset}"
        progress.at(i * ENTRY.size)


def _dump_keyindex(data, path: Path, _records: bool, progress: _Progress):
    from segment.rocket.index_file import ENTRY, HEADER, HEADER_SIZE, SLOT

    begin_ts, end_ts, begin_phys, end_phys, slots, count = HEADER.unpack_from(data, 0)
    yield (f"beginTimestamp: {begin_ts} endTimestamp: {end_ts} beginPhysOffset: {begin_phys} "
           f"endPhysOffset: {end_phys} hashSlotCount: {slots} indexCount: {count}")
    entries = HEADER_SIZE + slots * SLOT.size
    for k in range(1, count + 1):
        at = entries + ENTRY.size * (k - 1)
        if at + ENTRY.size > len(data):
            yield f"entry {k}: past the end of the file"
            return
        key_hash, phys, time_diff, previous = ENTRY.unpack_from(data, at)
        yield f"entry: {k} keyHash: {key_hash} phys: {phys} timeDiff: {time_diff}s previous: {previous}"
        progress.at(at)


_DUMPERS = {"log": _dump_log, "index": _dump_index, "timeindex": _dump_timeindex, "commitlog": _dump_commitlog,
            "queue": _dump_queue, "keyindex": _dump_keyindex}
