"""The address an ip quota entity holds, its name resolved as Kafka's broker resolves it.

Kafka's controller takes an ip entity that is an address or a host name that resolves
(ClientQuotaControlManager.isValidIpEntity, entities.py). Each broker then resolves the name
once, as it applies the quota (ClientQuotaMetadataManager.handleIpQuota: InetAddress.getByName,
the first address, IPv4 before IPv6), and the quota holds connections from that address:
a quota on `localhost` holds connections from 127.0.0.1. Addresses compare as InetAddress does,
by value: `::ffff:127.0.0.1` is 127.0.0.1. A name that does not resolve when a broker applies
it holds nobody there (Kafka logs that too).

Resolving runs in the resolver's thread (loop.getaddrinfo), never on the event loop.
AlterClientQuotas resolves the names it is given before it stores them, so its answer comes
once this broker holds their connections; a name this broker first meets among the stored
quotas (at start, or altered on another broker of a cluster) is resolved in the background and
holds connections from when that is done.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket

log = logging.getLogger(__name__)


def address(name: str) -> str | None:
    """`name` as the address it is (IPv4-mapped IPv6 as IPv4, as Java's InetAddress), None when
    it is not an address."""
    try:
        parsed = ipaddress.ip_address(name)
    except ValueError:
        return None
    mapped = getattr(parsed, "ipv4_mapped", None)
    return str(mapped or parsed)


def first_address(resolved: list[str]) -> str | None:
    """The address InetAddress.getByName picks from a name's addresses: the first IPv4 one, else
    the first (Java prefers IPv4 unless java.net.preferIPv6Addresses)."""
    addresses = [a for a in map(address, resolved) if a is not None]
    return next((a for a in addresses if ":" not in a), addresses[0] if addresses else None)


class HostAddresses:
    """Host names of ip entities and the address each resolved to (None: it did not)."""

    def __init__(self) -> None:
        self._resolved: dict[str, str | None] = {}
        self._resolving: dict[str, asyncio.Task] = {}  # names met in stored quotas, being resolved
        self.generation = 0  # counts resolutions landed, so a reader knows to look again

    def address_of(self, name: str) -> str | None:
        """The address the entity `name` holds: itself when an address; a host's address once
        resolved. A host not yet resolved is started resolving and holds nobody meanwhile."""
        literal = address(name)
        if literal is not None:
            return literal
        if name in self._resolved:
            return self._resolved[name]
        if name not in self._resolving:
            task = asyncio.get_running_loop().create_task(self._resolve_stored(name))
            self._resolving[name] = task
            task.add_done_callback(lambda _done: self._resolving.pop(name, None))
        return None

    async def resolve(self, host: str) -> str | None:
        """Resolves `host` now (AlterClientQuotas: the quota is being set) and keeps the address."""
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
            found = first_address([info[4][0] for info in infos])
        except (OSError, UnicodeError):
            found = None
        self._resolved[host] = found
        self.generation += 1
        return found

    async def _resolve_stored(self, host: str) -> None:
        if await self.resolve(host) is None:
            log.warning("ip quota entity %s: unable to resolve the address; it holds no connection", host)
