"""Leader failover, timed from the client's side: SIGKILL of a partition's leader to the first
acks=all record that a surviving broker (the new leader) acknowledges.

One RF=3 min.insync.replicas=2 partition; one confluent-kafka producer in this process sends a
record every ~10 ms (acks=all, 1 s request timeout, retries without end within a 120 s
message timeout), each record carrying its send time. The kill comes after 0.5 s of steady
sending; the failover time is (ack time - kill time) of the first acknowledged record *sent
after the kill*: the killed process can acknowledge nothing, so that ack is the new leader's,
and a reply the old leader wrote before dying, read late, cannot be mistaken for it. Records
sent before the kill and retried are acknowledged at the same moment or later (one partition,
in order). Then the killed broker restarts on its own data and the next kill waits until the
partition's ISR holds all three replicas again (that rejoin time is reported too).

Rolling restart (`measure_rolling_restart`): the same producer while each broker in turn is
stopped with SIGTERM (a controlled shutdown: it hands its leaderships over first), restarted,
and given time to rejoin every ISR; the figure is the longest gap between two consecutive
acknowledgements, next to the longest gap of the steady second before it.

Timing resolution is the producer loop's ~10 ms poll.
"""

from __future__ import annotations

import statistics
import struct
import threading
import time

from load_workers import PhaseError
from replicated_cluster import ReplicatedCluster

SEND_EVERY_S = 0.01
STEADY_S = 0.5
FAILOVER_LIMIT_S = 60.0
REJOIN_LIMIT_S = 120.0
PRODUCER = {"acks": "all", "linger.ms": 0, "request.timeout.ms": 1000, "message.timeout.ms": 120_000,
            "retry.backoff.ms": 50, "retry.backoff.max.ms": 200, "enable.idempotence": False,
            "max.in.flight.requests.per.connection": 5}


def _leader(cluster: ReplicatedCluster, topic: str) -> int:
    return cluster.metadata(topic).topics[topic].partitions[0].leader


def one_failover(cluster: ReplicatedCluster, producer, topic: str) -> dict:
    acked: list[tuple[float, float]] = []  # (sent at, acknowledged at), monotonic seconds
    failures: list[str] = []

    def on_delivery(err, msg):
        if err is None:
            acked.append((struct.unpack(">d", msg.value()[:8])[0], time.monotonic()))
        else:
            failures.append(str(err))

    old = _leader(cluster, topic)
    start, t_kill = time.monotonic(), None
    while True:
        now = time.monotonic()
        producer.produce(topic, struct.pack(">d", now) + bytes(92), partition=0, on_delivery=on_delivery)
        producer.poll(SEND_EVERY_S)
        if t_kill is None and now - start >= STEADY_S:
            if not acked:
                raise PhaseError(f"no record acknowledged in {STEADY_S} s before the kill: {failures[:3]}")
            cluster.kill(old)
            t_kill = time.monotonic()
        if t_kill is not None:
            first = next((a for s, a in acked if s >= t_kill), None)
            if first is not None:
                break
            if now - t_kill > FAILOVER_LIMIT_S:
                raise PhaseError(f"no acks=all record acknowledged {FAILOVER_LIMIT_S:.0f} s after killing "
                                 f"node {old}: {failures[:3]}")
    failover_s = first - t_kill
    new = _leader(cluster, topic)
    if new in (old, -1):
        raise PhaseError(f"acknowledged after the kill, yet metadata names leader {new} (killed: {old})")
    if producer.flush(30):
        raise PhaseError("records still unacknowledged 30 s after the failover")
    if failures:
        raise PhaseError(f"{len(failures)} records failed: {failures[:3]}")
    t_restart = time.monotonic()
    cluster.restart(old)
    cluster.wait_for(lambda md: cluster.whole(md, topic, 1, 3), f"node {old} back in the ISR", REJOIN_LIMIT_S)
    return {"killed": old, "new_leader": new, "failover_s": failover_s,
            "rejoin_s": time.monotonic() - t_restart, "records_acked": len(acked)}


def measure_failovers(cluster: ReplicatedCluster, kills: int, log=print) -> dict:
    from confluent_kafka import Producer

    topic = f"failover-{int(time.time() * 1000)}"
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "error_cb": lambda e: errors.append(str(e)),
                         **PRODUCER})
    samples = []
    for i in range(kills):
        s = one_failover(cluster, producer, topic)
        samples.append(s)
        log(f"session {cluster.session_ms} ms kill {i + 1}/{kills}: node {s['killed']} -> {s['new_leader']} "
            f"in {s['failover_s']:.2f} s; rejoined the ISR {s['rejoin_s']:.1f} s after restart")
    times = [s["failover_s"] for s in samples]
    return {"kills": len(samples), "failover_p50_s": statistics.median(times), "failover_max_s": max(times),
            "failover_min_s": min(times), "rejoin_p50_s": statistics.median(s["rejoin_s"] for s in samples),
            "samples": samples, "producer": PRODUCER, "client_errors_seen": len(errors)}


def _pump(producer, topic: str, until, on_delivery) -> None:
    """Send one timestamped record every ~10 ms until `until()` says stop."""
    while not until():
        producer.produce(topic, struct.pack(">d", time.monotonic()) + bytes(92), partition=0,
                         on_delivery=on_delivery)
        producer.poll(SEND_EVERY_S)


def measure_rolling_restart(cluster: ReplicatedCluster, log=print) -> dict:
    from confluent_kafka import Producer

    topic = f"rolling-{int(time.time() * 1000)}"
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, **PRODUCER})
    acked: list[float] = []
    failures: list[str] = []

    def on_delivery(err, msg):
        (failures.append(str(err)) if err else acked.append(time.monotonic()))

    def steady(seconds: float):
        end = time.monotonic() + seconds
        return lambda: time.monotonic() >= end

    _pump(producer, topic, steady(1.0), on_delivery)
    steady_gaps = [b - a for a, b in zip(acked, acked[1:])]
    started, first = time.monotonic(), len(acked)
    for node in sorted(cluster.brokers):
        stopper = threading.Thread(target=cluster.terminate, args=(node,))
        stopper.start()
        _pump(producer, topic, lambda: not stopper.is_alive(), on_delivery)
        stopper.join()
        restarter = threading.Thread(target=cluster.restart, args=(node,))
        restarter.start()
        _pump(producer, topic, lambda: not restarter.is_alive(), on_delivery)
        restarter.join()
        whole = threading.Event()
        waiter = threading.Thread(target=lambda: (cluster.wait_for(
            lambda md: cluster.whole(md, topic, 1, 3), f"node {node} back in the ISR", REJOIN_LIMIT_S),
            whole.set()))
        waiter.start()
        _pump(producer, topic, lambda: not waiter.is_alive(), on_delivery)
        waiter.join()
        if not whole.is_set():
            raise PhaseError(f"node {node} did not rejoin the ISR")
        log(f"rolling restart: node {node} stopped, restarted and back in the ISR")
    _pump(producer, topic, steady(1.0), on_delivery)
    if producer.flush(30):
        raise PhaseError("records still unacknowledged 30 s after the rolling restart")
    during = acked[first - 1:] if first else acked
    gaps = [b - a for a, b in zip(during, during[1:])]
    return {"restart_max_gap_s": max(gaps), "steady_max_gap_s": max(steady_gaps),
            "rolling_s": time.monotonic() - started, "records_acked": len(acked), "failed": len(failures)}
