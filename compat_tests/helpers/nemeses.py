"""Nemeses: faults a scenario starts and stops, over a NetnsCluster (netns_cluster.py).

Each is a small object: `prepare(cluster)` before the cluster starts (only the clock skew needs
it), `start(cluster, topic)` picks its victims from the metadata of that moment and injects
the fault, `stop(cluster)` heals it. `describe()` says what it did, for the report.

    isolate(role)   one node cut from every other node and etcd (DROP, or REJECT with resets):
                    role "leader" (of partition 0), "follower" (leads no partition 0 and is not
                    the controller), "controller"
    isolate_etcd    etcd cut from every broker
    leader_etcd     partition 0's leader cut from etcd alone, still reaching both peers; with
                    `stale_clients` the clients reach only it, as clients on its side of a cut
    split           one broker (partition 0's leader) cut from the two others; all reach etcd
    bridge          A-B-C: partition 0's leader A and one other broker C cannot talk; B reaches
                    both, and all reach etcd
    reset_cut       partition 0's leader cut from both followers by resets (REJECT tcp-reset and
                    the open connections reset), reaching etcd
    pause           SIGSTOP, then SIGCONT, partition 0's leader
    kill            SIGKILL partition 0's leader, start it again (same port, same data)
    clock_skew      partition 0's leader runs under libfaketime; its wall clock jumps 30 s ahead
                    at the start and back at the stop. CLOCK_MONOTONIC is left alone
                    (FAKETIME_DONT_FAKE_MONOTONIC=1), as an NTP step leaves it: libfaketime
                    fakes it by default, and then asyncio's timers jump with it.

`random_schedule(seed, steps)` draws a list of them (with hold times) from a seeded RNG.
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

from compat_tests.helpers.netns_cluster import NetnsCluster

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
SKEW = "+30s"


class Nemesis:
    name = "nemesis"
    # The topic's min.insync.replicas for a scenario with this fault (the lowest of a schedule's)
    min_insync_replicas = 2

    def __init__(self) -> None:
        self.victims: list[int] = []
        # Brokers this fault leaves leading without a majority of their peers (cut from both
        # while reaching etcd, so their leases hold): the availability promise covers
        # a partition whose leader and a majority stay connected, not the ones these lead.
        self.exempt: list[int] = []

    def prepare(self, cluster: NetnsCluster) -> None:
        """Before the cluster starts."""

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        raise NotImplementedError

    def stop(self, cluster: NetnsCluster) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name} {self.victims}"


def _leader(cluster: NetnsCluster, topic: str) -> int:
    return cluster.metadata()["topics"][topic][0]["leader"]


def _heal(cluster: NetnsCluster) -> None:
    cluster.network.heal()


class Isolate(Nemesis):
    def __init__(self, role: str, mode: str = "drop") -> None:
        super().__init__()
        self.role, self.mode = role, mode
        self.name = f"isolate-{role}-{mode}"

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        md = cluster.metadata()
        leader = md["topics"][topic][0]["leader"]
        victim = {"leader": leader, "controller": md["controller"],
                  "follower": next((n for n in sorted(cluster.brokers) if n not in (leader, md["controller"])),
                                   None)}[self.role]
        assert victim is not None, f"no broker is a {self.role} alone: {md}"
        self.victims = [victim]
        others = [h for n, h in cluster.hosts.items() if n != victim] + [cluster.etcd_host]
        cluster.network.cut(cluster.hosts[victim], others, self.mode)

    stop = staticmethod(_heal)


class IsolateEtcd(Nemesis):
    name = "isolate-etcd"

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        cluster.network.cut(cluster.etcd_host, list(cluster.hosts.values()), "drop")

    stop = staticmethod(_heal)


class LeaderEtcd(Nemesis):
    """Partition 0's leader keeps leading on its last image while etcd expires its lease and
    elects one of its followers, which then stop fetching from it.

    With `stale_clients` the clients reach only the deposed leader, whose image still names
    itself, so they keep writing to it for the whole hold: the ISR rule alone
    (broker/cluster/member.py) keeps it from acknowledging what the new leader never gets, and
    the checker fails the scenario if an acknowledged record is missing from the final log.
    min.insync.replicas 1 (Kafka's default) leaves the ISR rule alone in the way: with 2, a
    leader that dropped its silent followers from its ISR on its own would refuse acks=all as
    NOT_ENOUGH_REPLICAS instead. No partition's gap is bounded then: the clients reach no
    other leader."""

    min_insync_replicas = 1

    def __init__(self, stale_clients: bool = False) -> None:
        super().__init__()
        self.stale_clients = stale_clients
        self.name = "leader-etcd-stale-clients" if stale_clients else "leader-etcd"

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        victim = _leader(cluster, topic)
        self.victims = [victim]
        cluster.network.cut(cluster.hosts[victim], [cluster.etcd_host], "drop")
        if self.stale_clients:
            self.exempt = sorted(cluster.brokers)
            cluster.network.cut_clients([h for n, h in cluster.hosts.items() if n != victim])

    stop = staticmethod(_heal)


class Split(Nemesis):
    """Partition 0's leader on one side, the two other brokers on the other, all reaching etcd.
    With DROP the leader keeps its lease and leadership, its ISR shrinks below
    min.insync.replicas and its partition waits for the heal, as in Kafka, whose controller
    still hears the leader's heartbeats: exempt. With resets the two others' refusals are a
    majority's evidence and fence it (broker/cluster/fencing.py): its partition must move."""

    def __init__(self, mode: str = "drop") -> None:
        super().__init__()
        self.mode = mode
        self.name = "split" if mode == "drop" else "reset-cut"

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        victim = _leader(cluster, topic)
        self.victims = [victim]
        self.exempt = [victim] if self.mode == "drop" else []
        cluster.network.cut(cluster.hosts[victim], [h for n, h in cluster.hosts.items() if n != victim], self.mode)

    stop = staticmethod(_heal)


class Bridge(Nemesis):
    name = "bridge"

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        a = _leader(cluster, topic)
        c = max(n for n in cluster.brokers if n != a)
        self.victims = [a, c]
        cluster.network.cut(cluster.hosts[a], [cluster.hosts[c]], "drop")

    def describe(self) -> str:
        return f"bridge {self.victims[0]} x {self.victims[1]}"

    stop = staticmethod(_heal)


class Pause(Nemesis):
    name = "pause"

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        self.victims = [_leader(cluster, topic)]
        os.kill(cluster.brokers[self.victims[0]].pid, signal.SIGSTOP)

    def stop(self, cluster: NetnsCluster) -> None:
        os.kill(cluster.brokers[self.victims[0]].pid, signal.SIGCONT)


class Kill(Nemesis):
    name = "kill"

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        self.victims = [_leader(cluster, topic)]
        cluster.brokers[self.victims[0]].kill()

    def stop(self, cluster: NetnsCluster) -> None:
        cluster.brokers[self.victims[0]].start()


class ClockSkew(Nemesis):
    """Broker 1 (partition 0's leader when the topic is spread from node 1) runs under
    libfaketime, reading its offset from a file at most once a second."""

    name = "clock-skew"

    def __init__(self, node: int = 1) -> None:
        super().__init__()
        self.victims = [node]
        self._file: Path | None = None

    def _set(self, offset: str) -> None:
        self._file.write_text(offset + "\n")

    def prepare(self, cluster: NetnsCluster) -> None:
        broker = cluster.brokers[self.victims[0]]
        self._file = broker.workdir / "faketime-offset"  # goes with the broker's work dir
        self._set("+0")
        broker.environment = {
            "LD_PRELOAD": LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE": str(self._file),
            "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}

    def start(self, cluster: NetnsCluster, topic: str) -> None:
        self._set(SKEW)

    def stop(self, cluster: NetnsCluster) -> None:
        self._set("+0")

    def describe(self) -> str:
        return f"clock-skew {SKEW} on {self.victims}"


NEMESES = {
    "isolate-leader": lambda: Isolate("leader"),
    "isolate-follower": lambda: Isolate("follower"),
    "isolate-controller": lambda: Isolate("controller"),
    "isolate-etcd": IsolateEtcd,
    "leader-etcd": LeaderEtcd,
    "leader-etcd-stale-clients": lambda: LeaderEtcd(stale_clients=True),
    "split": Split,
    "bridge": Bridge,
    "reset-cut": lambda: Split("reject"),
    "pause": Pause,
    "kill": Kill,
    "clock-skew": ClockSkew,
}
# The clock skew needs its broker started under libfaketime, and stale clients reach no leader
# but one: a schedule draws from the others, whose every step must keep the availability bound.
SCHEDULABLE = sorted(set(NEMESES) - {"clock-skew", "leader-etcd-stale-clients"})


def random_schedule(seed: int, steps: int, hold: tuple[float, float] = (4.0, 10.0)) -> list[tuple[Nemesis, float]]:
    rng = random.Random(seed)
    return [(NEMESES[rng.choice(SCHEDULABLE)](), round(rng.uniform(*hold), 1)) for _ in range(steps)]
