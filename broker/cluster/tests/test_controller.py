"""The controller against a real etcd: one elected, another after it dies with a higher epoch,
and leadership moved off dead brokers by Kafka's rules (ISR only, epochs bumped, offline when
the whole ISR is gone, back when an ISR member returns)."""

from __future__ import annotations

import asyncio

from broker.cluster import NO_LEADER

from broker.cluster.tests.harness import Members, run


async def _own_epoch(members: Members, shown) -> list[int]:
    """Every live member's controller epoch, once the winner shown in an image knows its own:
    it learns it from its election transaction's answer, which may reach it after the other
    members' watches (and its own) showed the new key."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while members.live[shown.node_id].controller.epoch != shown.controller_epoch:
        assert loop.time() < deadline, (shown, members.live[shown.node_id].controller.epoch)
        await asyncio.sleep(0.01)
    return [m.controller.epoch for m in members.live.values()]


def test_one_controller_and_failover_with_a_higher_epoch(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            views = {m.image.controller for m in members.live.values()}
            assert len(views) == 1
            first = views.pop()
            assert sorted(await _own_epoch(members, first)) == [0, 0, first.controller_epoch]
            await members.crash(first.node_id)
            observer = members.any()
            image = await observer.wait_for(
                lambda im: im.controller is not None and im.controller.node_id != first.node_id, 5)
            assert image.controller.controller_epoch > first.controller_epoch
            assert sorted(await _own_epoch(members, image.controller)) == [0, image.controller.controller_epoch]
    run(scenario())


def test_leader_loss_elects_from_isr_and_shrinks_isr(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            admin = members.any()
            await admin.create_topic("orders", 3, 3, {}, "segment", assignments=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
            await admin.wait_for(lambda im: len(im.partitions_of("orders")) == 3, 5)
            await members.crash(1)
            # The topic's three partitions, each without 1: `all` of none is true on a member
            # whose image has not yet seen the topic (only broker 1's was waited for above).
            image = await members.any().wait_for(
                lambda im: len(parts := im.partitions_of("orders")) == 3 and all(1 not in p.isr for p in parts), 5)
            p0, p1, p2 = image.partitions_of("orders")
            # p0 was led by 1: the next replica in the ISR leads, both epochs bumped
            assert (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (2, (2, 3), 1, 1)
            # 1 was a follower of p1 and p2: it only leaves the ISR
            assert (p1.leader, p1.isr, p1.leader_epoch, p1.partition_epoch) == (2, (2, 3), 0, 1)
            assert (p2.leader, p2.isr, p2.leader_epoch, p2.partition_epoch) == (3, (3, 2), 0, 1)
    run(scenario())


def test_whole_isr_dead_goes_offline_until_an_isr_member_returns(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            observer = members.live[3]
            await observer.create_topic("ledger", 1, 2, {}, "segment", assignments=[[1, 2]])
            await observer.wait_for(lambda im: im.partition("ledger", 0) is not None, 5)
            await members.crash(2)
            await observer.wait_for(lambda im: im.partition("ledger", 0).isr == (1,), 5)
            await members.crash(1)
            image = await observer.wait_for(lambda im: im.partition("ledger", 0).offline, 5)
            offline = image.partition("ledger", 0)
            assert offline.isr == (1,) and offline.leader_epoch == 1
            await members.start(2)  # not in the ISR: may hold less than was acknowledged
            await observer.wait_for(lambda im: 2 in im.brokers, 5)
            for _ in range(50):  # and stays leaderless while the controller takes broker 2's return in
                assert observer.image.partition("ledger", 0).leader == NO_LEADER
                await asyncio.sleep(0.01)
            await members.start(1)
            image = await observer.wait_for(lambda im: im.partition("ledger", 0).leader == 1, 5)
            back = image.partition("ledger", 0)
            assert back.isr == (1,) and back.leader_epoch == 2
    run(scenario())


def test_unclean_election_when_the_topic_allows_it(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            observer = members.live[3]
            await observer.create_topic("metrics", 1, 2, {"unclean.leader.election.enable": "true"}, "segment",
                                        assignments=[[1, 2]])
            await observer.wait_for(lambda im: im.partition("metrics", 0) is not None, 5)
            await members.crash(2)
            await observer.wait_for(lambda im: im.partition("metrics", 0).isr == (1,), 5)
            await members.crash(1)
            await observer.wait_for(lambda im: im.partition("metrics", 0).offline, 5)
            await members.start(2)
            image = await observer.wait_for(lambda im: im.partition("metrics", 0).leader == 2, 5)
            assert image.partition("metrics", 0).isr == (2,)
    run(scenario())


def test_restarted_leader_is_fenced_before_it_leads_again(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix, session_timeout_ms=5000) as members:
            await members.start(1, 2, 3)
            observer = members.live[3]
            await observer.create_topic("audit", 1, 3, {}, "segment", assignments=[[1, 2, 3]])
            await observer.wait_for(lambda im: im.partition("audit", 0) is not None, 5)
            await members.crash(1)   # lease still valid for 5 s
            await members.start(1)   # the new incarnation revokes it
            image = await observer.wait_for(lambda im: im.partition("audit", 0).leader_epoch >= 1, 3)
            state = image.partition("audit", 0)
            # leadership left the old incarnation: its unflushed tail must not stay the truth
            assert state.leader == 2 and 1 not in state.isr
    run(scenario())


def test_failover_time_with_a_two_second_session(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix, session_timeout_ms=2000) as members:
            await members.start(1, 2, 3)
            observer = members.live[3]
            await observer.create_topic("fast", 1, 3, {}, "segment", assignments=[[1, 2, 3]])
            await observer.wait_for(lambda im: im.partition("fast", 0) is not None, 5)
            stopped = await members.crash(1)
            await observer.wait_for(lambda im: im.partition("fast", 0).leader == 2, 5)
            elapsed = asyncio.get_running_loop().time() - stopped
            print(f"session loss -> new leader in another broker's image: {elapsed:.2f} s (TTL 2 s)")
            assert elapsed < 3.0, elapsed
    run(scenario())


def test_dynamic_unclean_election_config_elects_at_once(etcd, prefix):
    """unclean.leader.election.enable as Kafka's controller resolves it: the topic's config, else
    the dynamic config of the controller's own broker id, else the cluster default's, else the
    static setting (off here). Each change is a metadata change, so it elects at once."""
    def set_unclean(member, name: str, value: str | None):
        decide = (lambda c: {**c, "unclean.leader.election.enable": value}) if value is not None else \
            (lambda c: {k: v for k, v in c.items() if k != "unclean.leader.election.enable"})
        return member.update_broker_configs(name, decide)

    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            ctl = members.live[3]
            await ctl.create_topic("gauges", 1, 2, {}, "segment", assignments=[[1, 2]])
            await ctl.create_topic("pinned", 1, 2, {"unclean.leader.election.enable": "false"}, "segment",
                                   assignments=[[1, 2]])
            await ctl.wait_for(lambda im: im.partition("pinned", 0) is not None, 5)
            await members.crash(2)
            await ctl.wait_for(lambda im: all(im.partition(t, 0).isr == (1,) for t in ("gauges", "pinned")), 5)
            await members.crash(1)
            await ctl.wait_for(lambda im: all(im.partition(t, 0).offline for t in ("gauges", "pinned")), 5)
            await members.start(2)  # out of sync: only an unclean election may make it lead
            image = await ctl.wait_for(lambda im: 2 in im.live_broker_ids() and im.controller is not None, 5)
            assert image.controller.node_id == 3

            await set_unclean(ctl, "2", "true")  # another broker's own value is not the controller's
            assert await ctl.controller.reconcile(ctl.image) == 0
            await set_unclean(ctl, "3", "false")  # the controller's id beats the cluster default
            await set_unclean(ctl, "", "true")
            assert await ctl.controller.reconcile(ctl.image) == 0
            assert ctl.image.partition("gauges", 0).offline

            await set_unclean(ctl, "3", None)  # the cluster default's true now counts
            image = await ctl.wait_for(lambda im: im.partition("gauges", 0).leader == 2, 5)
            assert image.partition("gauges", 0).isr == (2,)
            assert await ctl.controller.reconcile(ctl.image) == 0  # the topic's own false beats every layer
            assert ctl.image.partition("pinned", 0).offline
            await set_unclean(ctl, "3", "true")
            assert await ctl.controller.reconcile(ctl.image) == 0
            assert ctl.image.partition("pinned", 0).offline
    run(scenario())
