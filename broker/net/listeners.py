"""Kafka's listener model: `listeners`, `advertised.listeners`, `listener.security.protocol.map`,
`inter.broker.listener.name`.

    --listeners                        NAME://host:port[,NAME://host:port...]   (host empty: every interface)
    --advertised-listeners             NAME://host:port,...   what Metadata names for a client that
                                       came in on NAME (default: the listener's own address; port 0:
                                       the port bound at start-up)
    --listener-security-protocol-map   NAME:PROTOCOL,...   (default Kafka's: each of PLAINTEXT,
                                       SSL, SASL_PLAINTEXT, SASL_SSL maps to itself)
    --inter-broker-listener-name       the listener followers fetch on (default: the first one)

Without --listeners the broker has one listener, PLAINTEXT://--host:--port, advertised as
--advertised-host: exactly what it was before listeners existed. The same rules as Kafka's
KafkaConfig: names unique, ports unique (0 aside), every advertised name a listener, every
name mapped to a protocol.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
_ENDPOINT = re.compile(r"^([A-Za-z0-9_]+)://(\[[0-9A-Fa-f:.]*\]|[^:\[\]]*):(\d+)$")


class InvalidListeners(ValueError):
    """A listener setting Kafka would refuse at start-up; the message says which and why."""


@dataclass(frozen=True)
class Listener:
    name: str
    host: str  # bind address; "" = every interface
    port: int
    security_protocol: str
    advertised_host: str
    advertised_port: int

    def bound_to(self, port: int) -> "Listener":
        """After binding: a port 0 listener has its real port, advertised too unless set apart."""
        advertised = port if self.advertised_port in (0, self.port) else self.advertised_port
        return replace(self, port=port, advertised_port=advertised)


def _endpoints(text: str, what: str) -> list[tuple[str, str, int]]:
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        m = _ENDPOINT.match(item)
        if m is None:
            raise InvalidListeners(f"{what}: {item!r} is not NAME://host:port")
        port = int(m.group(3))
        if port > 65535:
            raise InvalidListeners(f"{what}: port {port} of {item!r} is out of range")
        out.append((m.group(1).upper(), m.group(2).strip("[]"), port))
    if not out:
        raise InvalidListeners(f"{what}: no listener given")
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names):
        raise InvalidListeners(f"{what}: each listener must have a different name: {text}")
    return out


def _protocol_map(text: str) -> dict[str, str]:
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.upper() not in SECURITY_PROTOCOLS:
            raise InvalidListeners(f"--listener-security-protocol-map: {item!r} is not NAME:PROTOCOL "
                                   f"with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}")
        out[name.strip().upper()] = protocol.upper()
    return out


def parse_listeners(listeners: str, advertised: str | None = None, protocol_map: str | None = None,
                    advertised_host: str | None = None) -> tuple[Listener, ...]:
    """The listeners, in the order given; raises InvalidListeners."""
    protocols = _protocol_map(protocol_map or DEFAULT_PROTOCOL_MAP)
    bound = _endpoints(listeners, "--listeners")
    ports = [p for _, _, p in bound if p != 0]
    if len(set(ports)) != len(ports):
        raise InvalidListeners(f"--listeners: each listener must have a different port: {listeners}")
    shown = {n: (h, p) for n, h, p in _endpoints(advertised, "--advertised-listeners")} if advertised else {}
    names = {n for n, _, _ in bound}
    if set(shown) - names:
        raise InvalidListeners(f"--advertised-listeners names {sorted(set(shown) - names)}, "
                               f"which --listeners does not have")
    out = []
    for name, host, port in bound:
        if name not in protocols:
            raise InvalidListeners(f"listener {name} has no security protocol: add {name}:PROTOCOL to "
                                   f"--listener-security-protocol-map")
        a_host, a_port = shown.get(name, (advertised_host or host or "127.0.0.1", port))
        out.append(Listener(name, host, port, protocols[name], a_host, a_port))
    return tuple(out)


def default_listener(host: str, port: int, advertised_host: str | None) -> Listener:
    """--host/--port alone: one PLAINTEXT listener, as before listeners existed."""
    return Listener("PLAINTEXT", host, port, "PLAINTEXT", advertised_host or host, port)


def inter_broker_listener(listeners: tuple[Listener, ...], name: str | None) -> Listener:
    if name is None:
        return listeners[0]
    for listener in listeners:
        if listener.name == name.upper():
            return listener
    raise InvalidListeners(f"--inter-broker-listener-name {name} is not one of --listeners "
                           f"({', '.join(l.name for l in listeners)})")
