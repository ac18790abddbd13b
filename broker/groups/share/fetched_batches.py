"""The record batches in what a partition read returned, each as its own region, with its header.

A share fetch hands out records batch by batch (a batch whose records are all acquired by others
is left out of the response), so the regions a read returns, each of which may hold many batches,
are cut at batch boundaries. Only the 61-byte headers are read (os.pread on the region's file, or
the bytes themselves); the records go out as stored.
"""

from __future__ import annotations

import os
from typing import Iterator

from segment.log import FileRegion
from wire.record_batch import HEADER_SIZE, BatchHeader, parse_header


def batches(regions: list[FileRegion]) -> Iterator[tuple[BatchHeader, object]]:
    """(header, region of that batch alone) for every whole batch in `regions`, in order."""
    for region in regions:
        if isinstance(region, FileRegion):
            pos, end = region.position, region.position + region.size
            while pos + HEADER_SIZE <= end:
                header = parse_header(os.pread(region.fd, HEADER_SIZE, pos))
                if pos + header.size > end:
                    break
                yield header, FileRegion(region.fd, pos, header.size, region.holder)
                pos += header.size
        else:
            data = memoryview(region)
            pos = 0
            while pos + HEADER_SIZE <= len(data):
                header = parse_header(data, pos)
                if pos + header.size > len(data):
                    break
                yield header, data[pos:pos + header.size]  # a view: the bytes go out as read
                pos += header.size
