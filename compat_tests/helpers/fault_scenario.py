"""One fault scenario from start to verdict: a network of namespaces, etcd and three brokers in
it, an RF=3 topic with partition i led by node i+1, the workload (fault_workload.py) running
through a schedule of nemeses (nemeses.py), then the checkers (fault_checker.py,
fault_txn_checker.py) on the history and every replica's log, served and, once the brokers
stop, on disk.

    outcome = run_scenario("segment", [(Bridge(), 10.0)])
    assert outcome.clean(), outcome.report()

Each step starts its nemesis, holds the fault for its time (a schedule, not a wait), heals it
and waits for every ISR to be whole and led again before the next. The availability figure is,
per partition, the longest time between two acks=all acknowledgements from the first fault to
the whole ISRs after the last heal. A partition whose leader and a majority stay connected (every
partition, but those a nemesis's `exempt` brokers lead when it starts) must keep acknowledging
with no gap longer than the lag time plus the session timeout (a follower dropped from the ISR,
or a lost leader's lease expiring) plus slack for an election, a client's metadata refresh and
a loaded 2-core machine. An exempt partition's gap is reported, not bounded; so is the
transactional writer's longest time without a transaction ending (a transaction spans every
partition and its coordinator must reach every leader with its markers, so any cut can hold it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from broker.testing.process_cluster import LAG_MS, SESSION_MS
from compat_tests.helpers.fault_checker import files_unlike, parse_log, replicas_alike, violations
from compat_tests.helpers.fault_txn_checker import committed_view, txn_violations
from compat_tests.helpers.fault_txn_workload import TXN_TIMEOUT_MS, read_committed_to_end
from compat_tests.helpers.fault_workload import Workload, create_spread_topic, longest_gap
from compat_tests.helpers.nemeses import Nemesis
from compat_tests.helpers.netns import Network
from compat_tests.helpers.netns_cluster import NetnsCluster
from compat_tests.helpers.waiting import wait_until

GAP_LIMIT_S = (LAG_MS + SESSION_MS) / 1000 + 3.0
HEAL_LIMIT_S = 60.0  # whole ISRs again: a restarted broker's recovery, a catch-up, the lag time
TXN_END_LIMIT_S = TXN_TIMEOUT_MS / 1000 + 30.0  # the timeout, then the coordinator's abort and markers
UNHANDLED = ("Task exception was never retrieved", "metadata listener", "after an internal error")


@dataclass
class Outcome:
    label: str
    steps: list[str] = field(default_factory=list)
    gaps: dict[int, float] = field(default_factory=dict)
    exempt: set[int] = field(default_factory=set)  # partitions whose gap is not bounded
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unhandled: list[str] = field(default_factory=list)
    acked: int = 0
    txns: dict[str, int] = field(default_factory=dict)  # transactions per outcome the client saw
    txn_errors: list[str] = field(default_factory=list)  # what made a transaction unknown (allowed)
    txn_gap: float = 0.0  # the longest time without a transaction ending (reported, not bounded)

    def slow(self) -> dict[int, float]:
        return {p: g for p, g in self.gaps.items() if g >= GAP_LIMIT_S and p not in self.exempt}

    def clean(self) -> bool:
        return not (self.slow() or self.violations or self.errors or self.unhandled)

    def report(self) -> str:
        lines = [f"{self.label}: {'; '.join(self.steps)}",
                 f"  {self.acked} acks; longest acks=all gap per partition (s): "
                 f"{ {p: round(g, 2) for p, g in self.gaps.items()} } (limit {GAP_LIMIT_S:.1f}"
                 f"{f', partitions {sorted(self.exempt)} exempt' if self.exempt else ''})",
                 f"  transactions: {self.txns}; longest time without one ending {self.txn_gap:.2f} s"]
        lines += [f"  VIOLATION {v}" for v in self.violations]
        lines += [f"  client error {e}" for e in self.errors[:5]]
        lines += [f"  transactional writer: {e}" for e in self.txn_errors[:5]]
        lines += [f"  unhandled in a broker's log: {u}" for u in self.unhandled[:5]]
        return "\n".join(lines)


def unhandled_lines(cluster: NetnsCluster) -> list[str]:
    return [f"broker {node}: {line}" for node, proc in cluster.brokers.items()
            for line in proc.log_text().splitlines() if any(s in line for s in UNHANDLED)]


def wait_whole_isrs(cluster: NetnsCluster, topic: str, partitions: int, timeout: float = HEAL_LIMIT_S) -> None:
    """And a leader for each: right after a heal a partition can show its whole ISR and no
    leader (its leader's registration not back yet), and the next step's nemesis picks its
    victim by the leader."""
    cluster.wait_for(lambda md: all(len(md["topics"][topic][p]["isr"]) == 3 and md["topics"][topic][p]["leader"] >= 0
                                    for p in range(partitions)),
                     f"whole ISRs and leaders of {topic}", timeout=timeout)


def transactions_ended(cluster: NetnsCluster, topic: str, partitions: int) -> dict[int, bytes]:
    """Every partition's final log once no transaction is open in it: a commit returns before
    the coordinator has written its markers, and one the writer left unknown is ended by its
    next init or by the transaction timeout. After TXN_END_LIMIT_S, the logs as they are (the
    checker reports what is still open)."""
    deadline = time.monotonic() + TXN_END_LIMIT_S
    while True:
        fetched = {p: replicas_alike(cluster, topic, p) for p in range(partitions)}
        if time.monotonic() > deadline or not any(committed_view(parse_log(b))[1] for b in fetched.values()):
            return fetched
        time.sleep(0.2)


def run_scenario(storage_mode: str, schedule: list[tuple[Nemesis, float]], label: str = "",
                 leaders: tuple[int, ...] = (1, 2, 3), txn_seed: int = 0) -> Outcome:
    outcome = Outcome(f"{storage_mode} {label or '+'.join(n.name for n, _ in schedule)}")
    network = Network()
    cluster = workload = None
    try:
        cluster = NetnsCluster(network, storage_mode)
        for nemesis, _ in schedule:
            nemesis.prepare(cluster)
        cluster.start()
        topic = create_spread_topic(cluster, list(leaders), min(n.min_insync_replicas for n, _ in schedule))
        workload = Workload(cluster, topic, len(leaders), txn_seed=txn_seed).start()
        wait_until(workload.every_partition_acked, "acks on every partition before the faults")
        wait_until(lambda: workload.txn_writer.count("committed"), "a transaction committed before the faults")

        began = time.monotonic()
        for nemesis, hold in schedule:
            leaders_now = cluster.metadata()["topics"][topic]
            nemesis.start(cluster, topic)
            outcome.exempt |= {p for p, state in leaders_now.items() if state["leader"] in nemesis.exempt}
            time.sleep(hold)  # the nemesis's duration
            nemesis.stop(cluster)
            outcome.steps.append(f"{nemesis.describe()} for {hold} s")
            wait_whole_isrs(cluster, topic, len(leaders))
        ended = time.monotonic()
        workload.stop()

        outcome.gaps = {p: workload.longest_gap(p, began, ended) for p in range(len(leaders))}
        outcome.acked = sum(len(workload.acks(p)) for p in range(len(leaders)))
        outcome.errors = workload.errors()
        outcome.txn_errors = workload.txn_writer.errors
        outcome.txn_gap = longest_gap(workload.txn_writer.ends(), began, ended)
        outcome.txns = {o: workload.txn_writer.count(o) for o in ("committed", "aborted", "unknown")}
        acks = {p: workload.acks(p) for p in range(len(leaders))}
        fetched = transactions_ended(cluster, topic, len(leaders))
        logs = {p: parse_log(b) for p, b in fetched.items()}
        final_reads = read_committed_to_end(cluster, topic, {p: log[-1].offset + 1 for p, log in logs.items()})
        for proc in cluster.brokers.values():
            proc.stop()
        outcome.violations = (violations(acks, workload.reader.reads, logs)
                              + txn_violations(workload.txn_writer.txns, workload.committed_reader.reads,
                                               final_reads, logs)
                              + files_unlike(cluster, topic, fetched))
        outcome.unhandled = unhandled_lines(cluster)
        return outcome
    finally:
        if workload is not None:
            workload.close()
        if cluster is not None:
            cluster.cleanup()
        network.close()
