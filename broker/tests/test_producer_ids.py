"""The single broker's producer-id blocks on a full disk: no id handed out, a retriable answer."""

from __future__ import annotations

import asyncio

import pytest

from wire.error_codes import ErrorCode
from broker.producer_ids import BLOCK_SIZE, NoProducerIdBlock, ProducerIdAllocator


def test_a_block_that_cannot_be_written_hands_out_no_id_and_a_later_one_can(small_disk):
    disk = small_disk("256k")
    ids = ProducerIdAllocator(disk.path)
    filler = disk.fill()
    with pytest.raises(NoProducerIdBlock) as refused:
        asyncio.run(ids.allocate())
    assert refused.value.code is ErrorCode.coordinator_load_in_progress
    assert not (disk.path / "producer-id-block.tmp").exists()
    filler.unlink()
    assert asyncio.run(ids.allocate()) == 0  # no id was used up by the refusal
    assert (disk.path / "producer-id-block").read_text() == str(BLOCK_SIZE)
