"""Kafka's ClientQuotaManager: which quota a (user, client-id) has for a key, and its rates.

Resolution is Kafka's DefaultQuotaCallback, first match wins, per quota key on its own:

    1. user + client-id          5. default user + default client-id
    2. user + default client-id  6. default user
    3. user                      7. client-id
    4. default user + client-id  8. default client-id

The match also decides who shares a rate: a quota set on a user alone (3, 6) is one rate for all
of that user's client-ids, one on a client-id alone (7, 8) one rate for that client-id whatever
the user; the others are one rate per (user, client-id). A client no quota names is not measured.

A rate is recorded after the request is served (a produce's request bytes, a consumer fetch's
response bytes, a request's handler time), then checked: over the quota, the answer carries a
throttle time (Kafka's throttleTime: how long the client must stay quiet to get back to it) and
the transport mutes the connection that long (server.py). Request-time throttles are bounded by
one window, as Kafka's ClientRequestQuotaManager bounds them; byte-rate throttles are not.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Callable

from broker.quotas.entities import (CLIENT_ID, CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE,
                                    CONTROLLER_MUTATION_RATE, IP, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, USER, Entity)
from broker.quotas.ip_hosts import HostAddresses, address
from broker.quotas.rate import SampledRate, TokenBucket

IDLE_RATE_S = 3600  # a rate nobody recorded into for an hour is dropped (Kafka's inactive sensor expiry)
Tags = tuple[str, str]  # (user, client-id) of a rate, "" where the matched entity has no such part


def _candidates(user: str, client: str) -> list[tuple[Entity, Tags]]:
    return [
        (((CLIENT_ID, client), (USER, user)), (user, client)),
        (((CLIENT_ID, None), (USER, user)), (user, client)),
        (((USER, user),), (user, "")),
        (((CLIENT_ID, client), (USER, None)), (user, client)),
        (((CLIENT_ID, None), (USER, None)), (user, client)),
        (((USER, None),), (user, "")),
        (((CLIENT_ID, client),), ("", client)),
        (((CLIENT_ID, None),), ("", client)),
    ]


class ClientQuotaManager:
    def __init__(self, samples: int, window_s: float, source: Callable[[], dict],
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`source()`: the stored quotas (store.py or cluster_store.py), a new object after each change."""
        self._source = source
        self._samples = samples
        self._window = window_s
        self._clock = clock
        self._quotas: dict[Entity, dict[str, float]] = {}
        self._keys: set[str] = set()  # keys any entity sets: the others cost nothing per request
        self._resolved: dict[tuple[str, str, str], tuple[float, Tags] | None] = {}
        self._rates: dict[tuple[str, Tags], SampledRate] = {}
        self._bounds: dict[tuple[str, Tags], float] = {}  # the quota each rate was last checked against
        self._buckets: dict[Tags, TokenBucket] = {}  # controller mutations (a token bucket, as Kafka's)
        self._connection_rates: dict[str, SampledRate] = {}  # per ip address
        self.hosts = HostAddresses()  # ip entities named by host (AlterClientQuotas resolves through it too)
        self._ip_quotas: dict[str | None, float] = {}  # connection_creation_rate by address (None: default)
        self._ip_quotas_of: tuple[object, int] | None = None  # (the quotas, hosts.generation) it was built from
        # what /metrics shows per (key, tags): throttle time given, and how many throttled answers
        self.throttle_ms_total: dict[tuple[str, Tags], int] = defaultdict(int)
        self.throttled: dict[tuple[str, Tags], int] = defaultdict(int)
        self._last_sweep = clock()

    def _refresh(self) -> None:
        """Resolve afresh once the stored quotas changed (on this broker, or etcd's on another)."""
        quotas = self._source()
        if quotas is not self._quotas:
            self._quotas = quotas
            self._keys = {key for values in quotas.values() for key in values}
            self._resolved.clear()

    def quota_for(self, key: str, user: str, client: str) -> tuple[float, Tags] | None:
        """(quota, the tags of the rate it limits), or None when no quota applies."""
        self._refresh()
        if key not in self._keys:
            return None
        cache_key = (key, user, client)
        if cache_key not in self._resolved:
            found = None
            for entity, tags in _candidates(user, client):
                values = self._quotas.get(entity)
                if values is not None and key in values:
                    found = (values[key], tags)
                    break
            self._resolved[cache_key] = found
        return self._resolved[cache_key]

    def record(self, key: str, user: str, client: str, value: float, bound_ms: int | None = None) -> int:
        """Records `value` into the client's rate for `key`; returns the throttle time in ms."""
        found = self.quota_for(key, user, client)
        if found is None:
            return 0
        quota, tags = found
        now = self._clock()
        rate = self._rates.get((key, tags))
        if rate is None:
            rate = self._rates[(key, tags)] = SampledRate(self._samples, self._window)
        rate.record(value, now)
        self._bounds[(key, tags)] = quota
        throttle = rate.throttle_ms(quota, now)
        if bound_ms is not None:
            throttle = min(throttle, bound_ms)
        if throttle:
            self.throttle_ms_total[(key, tags)] += throttle
            self.throttled[(key, tags)] += 1
        self._sweep(now)
        return throttle

    def unrecord(self, key: str, user: str, client: str, value: float) -> None:
        """Takes back what `record` added (a fetch answered empty because it was throttled)."""
        found = self.quota_for(key, user, client)
        rate = self._rates.get((key, found[1])) if found is not None else None
        if rate is not None:
            rate.record(-value, self._clock())

    def produce(self, user: str, client: str, request_bytes: int) -> int:
        return self.record(PRODUCER_BYTE_RATE, user, client, request_bytes)

    def fetch(self, user: str, client: str, response_bytes: int) -> int:
        return self.record(CONSUMER_BYTE_RATE, user, client, response_bytes)

    def fetch_window_bytes(self, user: str, client: str) -> int | None:
        """The most one fetch may carry and not be throttled with nothing else recorded in the
        window (Kafka's getMaxValueInQuotaWindow): consumer_byte_rate over every sample but the
        current one. None when no quota holds the client."""
        found = self.quota_for(CONSUMER_BYTE_RATE, user, client)
        if found is None:
            return None
        return int(found[0] * (self._samples - 1) * self._window)

    def unrecord_fetch(self, user: str, client: str, response_bytes: int) -> None:
        self.unrecord(CONSUMER_BYTE_RATE, user, client, response_bytes)

    def request_time(self, user: str, client: str, busy_s: float) -> int:
        """Handler time as Kafka's request quota counts it: percent of one thread, per second."""
        return self.record(REQUEST_PERCENTAGE, user, client, busy_s * 100, bound_ms=round(self._window * 1000))

    def admit_mutations(self, user: str, client: str, partitions: int, strict: bool) -> bool:
        """Takes `partitions` tokens of the client's controller_mutation_rate; False, taking none,
        when the client is already over it and the request is `strict` (KIP-599: CreateTopics v6+,
        DeleteTopics v5+, CreatePartitions v3+ refuse the topic; older versions are only throttled)."""
        found = self.quota_for(CONTROLLER_MUTATION_RATE, user, client)
        if found is None:
            return True
        quota, tags = found
        now, burst = self._clock(), quota * self._samples * self._window
        bucket = self._buckets.get(tags)
        if bucket is None:
            bucket = self._buckets[tags] = TokenBucket(burst, now)
        if strict and bucket.exceeded(quota, burst, now):
            return False
        bucket.take(partitions, quota, burst, now)
        return True

    def mutation_throttle_ms(self, user: str, client: str) -> int:
        """How long the client must wait for its mutation tokens to climb back to zero."""
        found = self.quota_for(CONTROLLER_MUTATION_RATE, user, client)
        bucket = self._buckets.get(found[1]) if found is not None else None
        if bucket is None:
            return 0
        quota = found[0]
        throttle = bucket.throttle_ms(quota, quota * self._samples * self._window, self._clock())
        if throttle:
            self.throttle_ms_total[(CONTROLLER_MUTATION_RATE, found[1])] += throttle
            self.throttled[(CONTROLLER_MUTATION_RATE, found[1])] += 1
        return throttle

    def connection_throttle_ms(self, ip: str) -> int:
        """A connection accepted from `ip`: recorded against its connection_creation_rate (its
        address's own, else the default ip's); the throttle time (at most one window) before it
        is closed, as Kafka's ConnectionQuotas closes a connection over the rate after that delay."""
        self._refresh()
        if CONNECTION_CREATION_RATE not in self._keys:
            return 0
        ip = address(ip) or ip
        quotas = self._ip_quotas_now()
        quota = quotas.get(ip, quotas.get(None))
        if quota is None:
            return 0
        now = self._clock()
        rate = self._connection_rates.get(ip)
        if rate is None:
            rate = self._connection_rates[ip] = SampledRate(self._samples, self._window)
        rate.record(1, now)
        return min(rate.throttle_ms(quota, now), round(self._window * 1000))

    def _ip_quotas_now(self) -> dict[str | None, float]:
        """connection_creation_rate by the address each ip entity holds (ip_hosts.py), None for
        the default ip; built again when the quotas change or a host name resolves. Two entities
        holding one address: the one written as an address wins over a host name."""
        source = (self._quotas, self.hosts.generation)
        if self._ip_quotas_of != source:
            named = [(entity[0][1], values[CONNECTION_CREATION_RATE]) for entity, values in self._quotas.items()
                     if entity[0][0] == IP and CONNECTION_CREATION_RATE in values]
            by_address: dict[str | None, float] = {}
            for name, quota in sorted(named, key=lambda nq: nq[0] is not None and address(nq[0]) is None):
                held = None if name is None else self.hosts.address_of(name)
                if name is None or held is not None:
                    by_address.setdefault(held, quota)
            self._ip_quotas, self._ip_quotas_of = by_address, source
        return self._ip_quotas

    def rates(self) -> list[tuple[str, Tags, float, float]]:
        """(key, tags, measured rate per second, quota) of every rate: for /metrics."""
        now = self._clock()
        return [(key, tags, rate.measure(now)[0], self._bounds[(key, tags)])
                for (key, tags), rate in list(self._rates.items())]

    def _sweep(self, now: float) -> None:
        if now - self._last_sweep < IDLE_RATE_S:
            return
        self._last_sweep = now
        for key, rate in list(self._rates.items()):
            if rate.idle_since(now) > IDLE_RATE_S:
                del self._rates[key], self._bounds[key]
        for ip, rate in list(self._connection_rates.items()):
            if rate.idle_since(now) > IDLE_RATE_S:
                del self._connection_rates[ip]
