"""A stopped broker's replica of a partition, read from its own files with its storage engine.

The fault checker compares replicas twice: through Fetch while the brokers run (each serves
its log up to its high watermark), and here, once they have stopped, from what each wrote to
disk up to its log end: the segment layout's `<topic>-<partition>/` segments, or the commitlog
layout's shared commitlog through the partition's consume queue. Opening the engine runs its
recovery, as the broker's next start would, so a torn tail is cut before the comparison.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.settings.config_from_settings import config_with
from broker.storage.modes import StorageModes
from compat_tests.raw_kafka import batch_header, split_batches
from segment.log import FileRegion

READ_BYTES = 1 << 20


def _bytes(region: FileRegion | bytes) -> bytes:
    return region if isinstance(region, bytes) else os.pread(region.fd, region.size, region.position)


def replica_file_bytes(data_dir: Path, storage_mode: str, topic: str, partition: int) -> bytes:
    """Every batch of the partition's log on disk, log start to log end."""
    modes = StorageModes(data_dir, storage_mode)
    try:
        plog = modes.store(storage_mode).open_partition(topic, partition, config_with(data_dir=data_dir).log_defaults)
        out, offset, end = bytearray(), plog.log_start_offset, plog.log_end_offset
        while offset < end:
            batches, _ = split_batches(b"".join(_bytes(r) for r in plog.read(offset, READ_BYTES, end)))
            assert batches, f"{data_dir}: no batch at offset {offset} of {topic}-{partition} (log end {end})"
            out += b"".join(batches)
            last = batch_header(batches[-1])
            offset = last["base_offset"] + last["last_offset_delta"] + 1
        return bytes(out)
    finally:
        modes.close()
