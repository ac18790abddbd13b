"""A leader whose controller store is out of reach (etcd cut off: member._propose_isr answers
None) keeps the ISR it has: it neither drops a silent follower nor adds one that caught up on
its own. That is what lets a leader keep acknowledging while cut off from etcd: if etcd
elects another leader meanwhile, the followers that go over to it stop fetching from us, and
our high watermark, the minimum over an ISR we cannot shrink, stays below what they hold
(broker/cluster/member.py)."""

from __future__ import annotations

import asyncio

from replica.partition import Partition
from wire.error_codes import ErrorCode
from replica.partition_state import PartitionState
from segment.kafka.store import SegmentLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.record_batch import parse_header

TIMEOUT_S = 30.0


async def _until(check, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT_S
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.001)


def _cut_off_leader(tmp_path, isr: tuple[int, ...]) -> tuple[SegmentLogStore, Partition, list]:
    """Broker 1 leading (1, 2, 3) with `isr`, its every ISR proposal unanswered; the list
    collects what it proposed."""
    store = SegmentLogStore(tmp_path)
    log = store.open_partition("t", 0, log_config())
    # lag time 1 ms: a follower that does not fetch is lagging at once
    p = Partition("t", 0, log, 1, log_config(), min_insync_replicas=1, lag_time_max_ms=1, lead_alone=False)
    proposed: list[list[int]] = []

    async def etcd_out_of_reach(partition, new_isr):
        proposed.append(new_isr)
        return None

    p.isr_maintenance.propose_through(etcd_out_of_reach)
    p.make_leader(PartitionState(1, 1, 0, (1, 2, 3), isr))
    return store, p, proposed


def _append(p: Partition) -> int:
    batch = build_batch([(b"k", b"v")], 0)
    info, _ = p.append_as_leader(batch, parse_header(batch), acks=-1)
    p.publish()
    return info.last_offset + 1


def test_a_silent_follower_stays_in_the_isr_and_holds_back_acks_all(tmp_path):
    async def scenario():
        store, p, proposed = _cut_off_leader(tmp_path, (1, 2, 3))
        end = _append(p)
        p.follower_fetched(3, end)  # 3 has the record, 2 never fetches again
        await _until(lambda: 2 in p.leader.lagging(), "follower 2 lagging")
        p.follower_fetched(3, end)
        p.shrink_isr_if_lagging()
        await _until(lambda: proposed, "a shrink proposed")
        assert 2 not in proposed[0], proposed  # 3 too, if a loaded machine let 1 ms pass
        assert p.isr == (1, 2, 3), "the ISR shrank without the controller store's acceptance"
        assert p.high_watermark == 0
        # acks=all is not acknowledged while 2, still in the ISR, lacks the record
        assert await p.wait_for_replication(end, 0.05) is not ErrorCode.none
        p.follower_fetched(2, end)
        assert p.high_watermark == end
        assert await p.wait_for_replication(end, TIMEOUT_S) is ErrorCode.none
        store.close()

    asyncio.run(scenario())


def test_a_follower_that_caught_up_joins_only_with_the_stores_acceptance(tmp_path):
    async def scenario():
        store, p, proposed = _cut_off_leader(tmp_path, (1, 2))
        end = _append(p)
        p.follower_fetched(3, end)  # 3, out of the ISR, caught up: the leader asks to add it
        await _until(lambda: proposed, "an expansion proposed")
        assert proposed == [[1, 2, 3]]
        assert p.isr == (1, 2), "the ISR grew without the controller store's acceptance"
        assert p.high_watermark == 0  # 2, in the ISR, has not fetched
        p.follower_fetched(2, end)
        assert p.high_watermark == end
        store.close()

    asyncio.run(scenario())
