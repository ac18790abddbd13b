"""Against a real etcd: listener endpoints in the registration; topic config changes, SCRAM
credentials, delegation tokens, dynamic broker configs and finalized features by
compare-and-swap — concurrent writers from different brokers lose nothing."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from broker.cluster import ClusterError
from broker.cluster.etcd_layout import Endpoint
from broker.feature_store import ClusterFeatureStore
from broker.security.cluster_token_store import ClusterTokenStore
from broker.security.delegation_token import TokenInformation, key_check, token_credentials

from broker.cluster.tests.harness import Members, run
from wire.error_codes import ErrorCode

ENDPOINTS = (Endpoint("CLIENT", "localhost", 29092), Endpoint("REPLICATION", "127.0.0.1", 29093))


def test_registration_carries_every_listener_endpoint(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, endpoints=ENDPOINTS)
            (observer,) = await members.start(2)
            image = await observer.wait_for(lambda im: 1 in im.brokers, 5)
            registration = image.brokers[1]
            assert registration.endpoints == ENDPOINTS
            assert registration.endpoint("REPLICATION") == ENDPOINTS[1]
            assert registration.endpoint("EXTERNAL") is None
            assert image.brokers[2].endpoints == ()  # registered without: host/port only
            # a controlled shutdown rewrites the registration: the endpoints stay
            assert await members.live[1].session.announce_shutdown()
            image = await observer.wait_for(lambda im: im.brokers[1].shutting_down, 5)
            assert image.brokers[1].endpoints == ENDPOINTS
    run(scenario())


def test_concurrent_config_changes_from_two_brokers_both_land(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            one, two = await members.start(1, 2)
            await one.create_topic("conf", 1, 2, {"retention.ms": "1000"}, "segment")
            keys = [f"k{i}" for i in range(10)]

            def setting(key):
                return lambda current, mode: {**current, key: mode}

            await asyncio.gather(*(member.alter_topic_configs("conf", setting(k))
                                   for member, k in zip([one, two] * 5, keys)))
            image = await two.wait_for(lambda im: len(im.topics["conf"].configs) == 11, 5)
            assert image.topics["conf"].configs == {"retention.ms": "1000", **{k: "segment" for k in keys}}

            def refuse(current, mode):
                raise ValueError("invalid_config")
            with pytest.raises(ValueError):
                await one.alter_topic_configs("conf", refuse)
            unchanged = await one.alter_topic_configs("conf", lambda current, mode: current)
            assert unchanged == image.topics["conf"]
            with pytest.raises(ClusterError) as exc:
                await one.alter_topic_configs("missing", lambda current, mode: current)
            assert exc.value.code == ErrorCode.unknown_topic_or_partition
    run(scenario())


def test_scram_credentials_changed_on_one_broker_are_seen_by_the_other(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            one, two = await members.start(1, 2)
            mechanisms = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
            # two brokers add a mechanism each to one user at once: both are kept
            await asyncio.gather(*(m.update_scram_user("al/ice", lambda creds, mech=mech: {**creds, mech: {"i": 1}})
                                   for m, mech in zip([one, two], mechanisms)))
            image = await two.wait_for(lambda im: len(getattr(im.scram_users.get("al/ice"), "credentials", {})) == 2, 5)
            assert sorted(image.scram_users["al/ice"].credentials) == mechanisms
            assert await two.update_scram_user("al/ice", lambda creds: {}) is None
            image = await one.wait_for(lambda im: "al/ice" not in im.scram_users, 5)
            assert image.scram_users == {}
    run(scenario())


def test_a_delegation_token_changed_on_one_broker_is_seen_by_the_other(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            one, two = await members.start(1, 2)
            here, there = ClusterTokenStore(one), ClusterTokenStore(two)
            token = TokenInformation("t-1", "User:alice", "User:alice", ("User:bob",), 1000, 9000, 5000,
                                     token_credentials(b"hmac"), key_check(b"hmac"))
            await here.put(token)
            assert here.tokens() == {"t-1": token}  # this broker's image shows it on return
            await two.wait_for(lambda im: "t-1" in im.delegation_tokens, 5)
            assert there.tokens() == {"t-1": token}
            before = there.tokens()
            await two.update_scram_user("x", lambda creds: {"SCRAM-SHA-256": {"i": 1}})
            assert there.tokens() is before  # an unrelated change keeps the mapping (and the HMAC index)
            renewed = dataclasses.replace(token, expiry_ms=7000)
            await there.put(renewed, replace_only=True)
            await one.wait_for(lambda im: im.delegation_tokens["t-1"].info["expiry_ms"] == 7000, 5)
            assert here.tokens()["t-1"] == renewed
            await here.remove(["t-1"])
            await there.put(renewed, replace_only=True)  # a renew racing the expire does not revive it
            assert "t-1" not in there.tokens()
            await one.wait_for(lambda im: not im.delegation_tokens, 5)
    run(scenario())


def test_dynamic_broker_configs_by_compare_and_swap_are_seen_by_every_broker(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            one, two = await members.start(1, 2)
            names = [f"c{i}" for i in range(6)]
            # the cluster default changed from both brokers at once: every config lands
            await asyncio.gather(*(m.update_broker_configs("", lambda cur, n=n: {**cur, n: "1"})
                                   for m, n in zip([one, two] * 3, names)))
            await one.update_broker_configs("2", lambda cur: {"sasl.kerberos.min.time.before.relogin": "58000"})
            image = await two.wait_for(lambda im: len(getattr(im.broker_configs.get(""), "configs", {})) == 6
                                       and "2" in im.broker_configs, 5)
            assert image.broker_configs[""].configs == {n: "1" for n in names}
            assert image.broker_configs["2"].configs == {"sasl.kerberos.min.time.before.relogin": "58000"}
            assert await two.update_broker_configs("", lambda cur: {}) is None  # the last one: the key goes
            image = await one.wait_for(lambda im: "" not in im.broker_configs, 5)
            assert set(image.broker_configs) == {"2"}
    run(scenario())


def test_finalized_features_by_compare_and_swap_are_seen_by_every_broker(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            one, two = await members.start(1, 2)
            bootstrap = {"transaction.version": 2, "group.version": 1, "share.version": 1}
            stores = [ClusterFeatureStore(m, bootstrap) for m in (one, two)]
            assert stores[1].features().finalized == bootstrap  # no UpdateFeatures yet: the bootstrap levels
            before = stores[1].features().epoch
            # both brokers change a feature at once: neither change is lost
            await asyncio.gather(stores[0].update(lambda cur: {**cur, "transaction.version": 1}, False),
                                 stores[1].update(lambda cur: {**cur, "share.version": 0}, False))
            await two.wait_for(lambda im: im.features is not None and im.features.levels.get("share.version") == 0
                               and im.features.levels.get("transaction.version") == 1, 5)
            seen = stores[1].features()
            assert seen.finalized == {"transaction.version": 1, "group.version": 1} and seen.epoch > before
            assert stores[1].level("share.version") == 0
            await stores[0].update(lambda cur: {**cur, "group.version": 0}, True)  # validate_only
            assert stores[0].level("group.version") == 1
    run(scenario())
