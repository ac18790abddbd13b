"""ip quota entities as Kafka's broker holds them: an address compared by value, a host name by
the first (IPv4) address it resolves to, resolved in the resolver's thread."""

from __future__ import annotations

import asyncio

from broker.quotas.ip_hosts import address, first_address
from broker.quotas.manager import ClientQuotaManager

RATE = "connection_creation_rate"


def test_addresses_compare_by_value_as_inetaddress():
    assert address("::ffff:127.0.0.1") == "127.0.0.1"  # Java makes an IPv4-mapped address IPv4
    assert address("0:0:0:0:0:0:0:1") == "::1"
    assert address("localhost") is None


def test_a_name_holds_its_first_ipv4_address_as_getbyname_picks_it():
    assert first_address(["::1", "127.0.0.1", "127.0.0.2"]) == "127.0.0.1"
    assert first_address(["::1", "fe80::1"]) == "::1"
    assert first_address([]) is None


def _three_connections(manager, ip):
    return [manager.connection_throttle_ms(ip) for _ in range(3)]


def test_a_quota_on_a_host_name_holds_its_address_once_resolved():
    quotas = {(("ip", "localhost"),): {RATE: 1.0}, (("ip", "::ffff:127.0.0.2"),): {RATE: 1.0}}
    manager = ClientQuotaManager(3, 1.0, lambda: quotas, clock=lambda: 0.0)
    assert asyncio.run(manager.hosts.resolve("localhost")) == "127.0.0.1"
    # 1 a second over 3 samples of 1 s: 2 connections at once, the third waits a window
    assert _three_connections(manager, "127.0.0.1") == [0, 0, 1000]
    assert _three_connections(manager, "127.0.0.2") == [0, 0, 1000]  # written IPv4-mapped
    assert _three_connections(manager, "127.0.0.3") == [0, 0, 0]  # no quota, no default


def test_an_address_written_as_such_wins_over_a_host_name_holding_it():
    quotas = {(("ip", "localhost"),): {RATE: 1.0}, (("ip", "127.0.0.1"),): {RATE: 100.0}}
    manager = ClientQuotaManager(3, 1.0, lambda: quotas, clock=lambda: 0.0)
    asyncio.run(manager.hosts.resolve("localhost"))
    assert _three_connections(manager, "127.0.0.1") == [0, 0, 0]


def test_a_host_name_that_does_not_resolve_holds_nobody():
    quotas = {(("ip", "no-such-host.invalid"),): {RATE: 1.0}}
    manager = ClientQuotaManager(3, 1.0, lambda: quotas, clock=lambda: 0.0)
    assert asyncio.run(manager.hosts.resolve("no-such-host.invalid")) is None
    assert _three_connections(manager, "127.0.0.1") == [0, 0, 0]


def test_a_stored_host_name_is_resolved_in_the_background_and_holds_from_then():
    quotas = {(("ip", "localhost"),): {RATE: 1.0}}

    async def run():
        manager = ClientQuotaManager(3, 1.0, lambda: quotas, clock=lambda: 0.0)
        before = manager.connection_throttle_ms("127.0.0.1")  # starts resolving; holds nobody yet
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while manager.hosts.generation == 0 and loop.time() < deadline:
            await asyncio.sleep(0.01)
        return before, _three_connections(manager, "127.0.0.1")

    assert asyncio.run(run()) == (0, [0, 0, 1000])
