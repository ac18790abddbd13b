"""The single broker's producer-id blocks on a full disk: no id handed out, a retriable answer."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess

import pytest

from broker.producer_ids import BLOCK_SIZE, NoProducerIdBlock, ProducerIdAllocator


@pytest.fixture
def full_disk(tmp_path):
    """A tmpfs of the test's own, every page taken by a filler file (the suite runs as root)."""
    path = tmp_path / "disk"
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_block_that_cannot_be_written_hands_out_no_id_and_a_later_one_can(full_disk):
    ids = ProducerIdAllocator(full_disk)
    _fill(full_disk / "filler")
    with pytest.raises(NoProducerIdBlock) as refused:
        asyncio.run(ids.allocate())
    assert refused.value.code == "coordinator_load_in_progress"
    assert not (full_disk / "producer-id-block.tmp").exists()
    (full_disk / "filler").unlink()
    assert asyncio.run(ids.allocate()) == 0  # no id was used up by the refusal
    assert (full_disk / "producer-id-block").read_text() == str(BLOCK_SIZE)
