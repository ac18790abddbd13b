"""Broker registration under a lease, against a real etcd: seen by others, gone when
keep-alives stop, at once on a clean close, and has_session() honest while etcd is away."""

from __future__ import annotations

import asyncio

from broker.cluster.cluster_metadata import ClusterMetadata

from broker.cluster.tests.harness import Members, run


def test_registration_seen_by_others_and_expires_when_keepalives_stop(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix, session_timeout_ms=2000) as members:
            a, b = await members.start(1, 2)
            reg = b.image.brokers[1]
            assert (reg.host, reg.port, reg.broker_epoch) == ("127.0.0.1", 19001, a.session.lease_id)
            stopped = await members.crash(1)
            await b.wait_for(lambda im: 1 not in im.brokers, 4)
            gone_after = asyncio.get_running_loop().time() - stopped
            assert 1.2 <= gone_after <= 3.0, gone_after  # TTL 2 s from the last keep-alive (sent every 0.67 s)
    run(scenario())


def test_clean_close_revokes_the_lease_at_once(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix, session_timeout_ms=5000) as members:
            _, b = await members.start(1, 2)
            await members.stop(1)
            await b.wait_for(lambda im: 1 not in im.brokers, 0.5)
    run(scenario())


def test_restart_before_expiry_replaces_the_old_registration(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix, session_timeout_ms=5000) as members:
            old, observer = await members.start(1, 2)
            old_epoch = old.session.lease_id
            await members.crash(1)  # its lease would run 5 more seconds
            new, = await members.start(1)
            assert new.session.lease_id != old_epoch
            image = await observer.wait_for(lambda im: 1 in im.brokers and im.brokers[1].broker_epoch != old_epoch, 1)
            assert image.brokers[1].broker_epoch == new.session.lease_id
    run(scenario())


def test_has_session_turns_false_while_etcd_is_away_and_back_after(own_etcd):
    async def scenario():
        member = ClusterMetadata(own_etcd.endpoint, 7, "127.0.0.1", 19007, session_timeout_ms=1000)
        heard: list[bool] = []
        member.add_session_listener(heard.append)
        await member.start()
        assert member.has_session() and heard == [True]
        first_epoch = member.session.lease_id
        own_etcd.pause()
        loop = asyncio.get_running_loop()
        paused_at = loop.time()
        # Within the TTL of the last keep-alive, sent before the pause. has_session() compares
        # the loop's clock with that deadline, so asking once the TTL has passed is exact
        # however late a loaded machine wakes the test (polling for the change was not).
        await asyncio.sleep(1.0 - (loop.time() - paused_at))
        assert not member.has_session(), loop.time() - paused_at
        while heard != [True, False]:  # the listener hears it from the expiry timer
            assert loop.time() - paused_at < 5, heard
            await asyncio.sleep(0.01)
        # Paused on past the lease's TTL, so that etcd expires it once it runs again; no
        # session meanwhile.
        while loop.time() - paused_at < 2.5:
            assert not member.has_session() and heard == [True, False]
            await asyncio.sleep(0.01)
        own_etcd.resume()
        await member.wait_for(lambda im: 7 in im.brokers and im.brokers[7].broker_epoch != first_epoch, 10)
        for _ in range(100):  # the registration shows before the session call returns
            if member.has_session():
                break
            await asyncio.sleep(0.01)
        assert member.has_session() and heard[-1] is True
        assert member.session.lease_id != first_epoch  # a new session: a new broker epoch
        await member.close()
    run(scenario())
