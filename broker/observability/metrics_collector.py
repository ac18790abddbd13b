"""The metrics read from the broker's state when Prometheus scrapes, not counted as it changes.

Offsets, sizes, lag and replica counts already live in the partitions, groups and stores; a
gauge kept up to date on every append would cost the hot path what reading them once per
scrape does not. Only the event loop changes that state, and a scrape is served by
prometheus_client's HTTP thread, so the collector hops to the loop
(loop_read.py, with a timeout) and copies plain numbers there: a walk from another
thread could meet a segment list or a dict mid-change (a roll, a topic created) and would read
an HW and an LEO of two different moments. The copy yields the loop every CHUNK partitions or
group offsets, so a broker with 10,000 partitions serves its clients between the slices; the
samples are then built in the HTTP thread. A loop too busy to answer within the timeout gives a
scrape without these families (and a log line), never a stuck HTTP thread.

    kafka_log_log_logendoffset{topic,partition}          LEO (Kafka's Log LogEndOffset)
    kafka_log_log_logstartoffset{topic,partition}        log start offset
    kafka_log_log_size{topic,partition}                  bytes of the partition's batches
    twinlog_partition_highwatermark{topic,partition}     HW (Kafka has no MBean for it)
    twinlog_topic_info{topic,storage_mode}               1 per topic: its layout
    kafka_cluster_partition_insyncreplicascount{...}     ISR size (each partition hosted here)
    kafka_cluster_partition_replicascount{...}           replicas assigned
    kafka_cluster_partition_underreplicated{...}         1 when led here with ISR < replicas
    kafka_server_replicamanager_partitioncount           partitions hosted
    kafka_server_replicamanager_leadercount              partitions led
    kafka_server_replicamanager_underreplicatedpartitions
    kafka_server_replicamanager_underminisrpartitioncount
    kafka_controller_kafkacontroller_activecontrollercount  1 on the controller (one broker: 1)
    kafka_controller_kafkacontroller_offlinepartitionscount  partitions without a leader (on the
                                                         controller; 0 on the other brokers)
    kafka_server_replicamanager_isrshrinks_total         IsrShrinksPerSec / IsrExpandsPerSec: ISR
    kafka_server_replicamanager_isrexpands_total         changes accepted for partitions led here
    kafka_controller_controllerstats_leaderelectionrateandtimems  LeaderElectionRateAndTimeMs: a
                                                         summary (count, sum in ms) of the elections
                                                         this broker wrote (cluster_events.py)
    kafka_controller_controllerstats_uncleanleaderelections_total  UncleanLeaderElectionsPerSec
    kafka_server_replicafetchermanager_maxlag{clientid="Replica"}  MaxLag: offsets the furthest
                                                         behind partition followed here lags its
                                                         leader's HW
    kafka_consumergroup_current_offset{consumergroup,topic,partition}  committed offset
    kafka_consumergroup_lag{consumergroup,topic,partition}   HW - committed offset (partitions
                                                             hosted here; groups coordinated here)
    kafka_consumergroup_members{consumergroup}
    twinlog_commitlog_dispatch_behind_bytes              commitlog bytes written but not yet
                                                         dispatched to consume queues (RocketMQ's
                                                         dispatchBehindBytes)
    kafka_server_produce_byte_rate{user,client_id}       a quota'd client's rate now, per second
    kafka_server_fetch_byte_rate{user,client_id}           (bytes; request: percent of a thread's
    kafka_server_request_request_time{user,client_id}      time; controller mutations: partitions),
    kafka_server_controllermutation_rate{user,client_id}   as the quota measures it; the labels are
                                                           the entity sharing the rate ("" for a part
                                                           the quota's entity does not name)
    twinlog_client_quota{quota,user,client_id}           the quota that rate is held to
    twinlog_client_quota_throttle_time_ms_total{quota,user,client_id}  throttle time given
    twinlog_client_quota_throttled_total{quota,user,client_id}        answers throttled
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable, Iterator, Mapping, Protocol, Sized

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector
from replica.partition import Partition
from segment.rocket.store import RocketLogStore

from broker.api.topic_lookup import TopicLookup
from broker.cluster.cluster_events import ReplicationFigures
from broker.cluster.view import ClusterView
from broker.observability.loop_read import LoopBusy, read_on_loop
from broker.observability.metrics import BrokerMetrics
from broker.quotas.manager import ClientQuotaManager
from broker.storage.modes import StorageModes

log = logging.getLogger(__name__)

CHUNK = 500  # partitions or group offsets copied per turn of the event loop
SNAPSHOT_TIMEOUT_S = 5.0  # within Prometheus's default scrape_timeout (10 s): the rest still arrives


class HostedTopics(TopicLookup, Protocol):
    """The topics (TopicRegistry, broker/topics.py), and every partition hosted here."""

    def all_partitions(self) -> Iterable[Partition]: ...


class CommittedOffset(Protocol):
    @property
    def offset(self) -> int: ...


class CoordinatedGroup(Protocol):
    """A group coordinated here as the classic coordinator keeps it (broker/groups/group.py)."""

    @property
    def group_id(self) -> str: ...

    @property
    def members(self) -> Sized: ...

    @property
    def offsets(self) -> Mapping[tuple[str, int], CommittedOffset]: ...


class CoordinatedGroups(Protocol):
    """The groups coordinated here, by id (GroupCoordinator, broker/groups/coordinator.py)."""

    @property
    def groups(self) -> Mapping[str, CoordinatedGroup]: ...


@dataclass(frozen=True)
class StateSources:
    """What a snapshot reads; Broker (broker/broker.py) gives its own services."""
    node_id: int
    topics: HostedTopics
    groups: CoordinatedGroups
    quotas: ClientQuotaManager
    view: ClusterView
    storage: StorageModes


@dataclass
class Snapshot:
    # (topic, partition, leo, hw, log start, size, is leader, isr size, replicas, min isr)
    partitions: list[tuple[str, int, int, int, int, int, bool, int, int, int]] = field(default_factory=list)
    topics: list[tuple[str, str]] = field(default_factory=list)  # (name, storage mode)
    # (group, topic, partition, committed offset, HW or None when the partition is not hosted here)
    offsets: list[tuple[str, str, int, int, int | None]] = field(default_factory=list)
    members: list[tuple[str, int]] = field(default_factory=list)
    is_controller: bool = True
    replication: ReplicationFigures = field(default_factory=ReplicationFigures)
    dispatch_behind: int | None = None
    # (quota key, (user, client-id), rate, quota, throttle ms given, answers throttled)
    quota_rates: list[tuple[str, tuple[str, str], float, float, int, int]] = field(default_factory=list)


async def take_snapshot(sources: StateSources, metrics: BrokerMetrics | None = None) -> Snapshot:
    """Copy what the families show; runs on the event loop, yielding it every CHUNK items."""
    snap = Snapshot()
    snap.topics = [(t.name, t.storage_mode) for t in sources.topics.topics.values()]
    if metrics is not None:
        metrics.forget_topics({name for name, _ in snap.topics})
    for i, p in enumerate(list(sources.topics.all_partitions())):
        if i and i % CHUNK == 0:
            await asyncio.sleep(0)
        snap.partitions.append((p.topic, p.index, p.log_end_offset, p.high_watermark, p.log_start_offset,
                                p.size_in_bytes, p.is_leader, len(p.isr), len(p.state.replicas),
                                p.min_insync_replicas))
    count = 0
    for group in list(sources.groups.groups.values()):
        snap.members.append((group.group_id, len(group.members)))
        for (topic, index), committed in list(group.offsets.items()):
            count += 1
            if count % CHUNK == 0:
                await asyncio.sleep(0)
            partition = sources.topics.partition(topic, index)
            hw = partition.high_watermark if partition is not None else None
            snap.offsets.append((group.group_id, topic, index, committed.offset, hw))
    quotas = sources.quotas
    snap.quota_rates = [(key, tags, rate, bound, quotas.throttle_ms_total.get((key, tags), 0),
                         quotas.throttled.get((key, tags), 0)) for key, tags, rate, bound in quotas.rates()]
    snap.is_controller = sources.view.controller_id == sources.node_id
    snap.replication = sources.view.replication_figures()
    store = sources.storage.opened().get("commitlog")
    if isinstance(store, RocketLogStore):
        snap.dispatch_behind = store.commitlog.write_pos - store.dispatcher.dispatched
    return snap


class BrokerStateCollector(Collector):
    """`snapshot`: the read of the broker's state (take_snapshot of its sources), run on `loop`."""

    def __init__(self, snapshot: Callable[[], Awaitable[Snapshot]], loop: asyncio.AbstractEventLoop,
                 timeout_s: float = SNAPSHOT_TIMEOUT_S) -> None:
        self._snapshot = snapshot
        self._loop = loop
        self._timeout_s = timeout_s

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not collect: that would wait on the loop from the loop

    def collect(self) -> Iterator[Metric]:
        try:
            snap = read_on_loop(self._loop, self._snapshot, self._timeout_s)
        except LoopBusy as exc:
            log.warning("metrics scrape: %s; partition, group and replica metrics left out of this scrape", exc)
            return
        except Exception:
            log.warning("metrics scrape: reading the broker's state failed", exc_info=True)
            return
        yield from families(snap)


def families(snap: Snapshot) -> Iterator[Metric]:
    """The metric families of one snapshot."""
    tp = ("topic", "partition")
    leo = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=tp)
    start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=tp)
    size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's record batches", labels=tp)
    hw = GaugeMetricFamily("twinlog_partition_highwatermark", "High watermark", labels=tp)
    isr = GaugeMetricFamily("kafka_cluster_partition_insyncreplicascount", "In-sync replicas", labels=tp)
    replicas = GaugeMetricFamily("kafka_cluster_partition_replicascount", "Replicas assigned", labels=tp)
    under = GaugeMetricFamily("kafka_cluster_partition_underreplicated",
                              "1 when led here and the ISR is smaller than the replicas", labels=tp)
    leaders = under_count = under_min_isr = 0
    for topic, index, end, high, log_start, nbytes, is_leader, isr_size, n_replicas, min_isr in snap.partitions:
        labels = (topic, str(index))
        leo.add_metric(labels, end)
        start.add_metric(labels, log_start)
        size.add_metric(labels, nbytes)
        hw.add_metric(labels, high)
        isr.add_metric(labels, isr_size)
        replicas.add_metric(labels, n_replicas)
        lagging = is_leader and isr_size < n_replicas
        under.add_metric(labels, int(lagging))
        leaders += is_leader
        under_count += lagging
        under_min_isr += is_leader and isr_size < min_isr
    yield from (leo, start, size, hw, isr, replicas, under)
    yield GaugeMetricFamily("kafka_server_replicamanager_partitioncount", "Partitions hosted here",
                            value=len(snap.partitions))
    yield GaugeMetricFamily("kafka_server_replicamanager_leadercount", "Partitions led here", value=leaders)
    yield GaugeMetricFamily("kafka_server_replicamanager_underreplicatedpartitions",
                            "Partitions led here whose ISR is smaller than their replicas", value=under_count)
    yield GaugeMetricFamily("kafka_server_replicamanager_underminisrpartitioncount",
                            "Partitions led here whose ISR is below min.insync.replicas", value=under_min_isr)
    yield GaugeMetricFamily("kafka_controller_kafkacontroller_activecontrollercount",
                            "1 on the cluster's controller", value=int(snap.is_controller))
    yield from replication_families(snap.replication)
    info = GaugeMetricFamily("twinlog_topic_info", "1 per topic, labelled with its storage layout",
                             labels=("topic", "storage_mode"))
    for name, mode in snap.topics:
        info.add_metric((name, mode), 1)
    yield info
    group_tp = ("consumergroup", "topic", "partition")
    current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset", labels=group_tp)
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus committed offset", labels=group_tp)
    for group, topic, index, offset, group_hw in snap.offsets:
        offset_labels = (group, topic, str(index))
        current.add_metric(offset_labels, offset)
        if group_hw is not None:
            lag.add_metric(offset_labels, group_hw - offset)
    members = GaugeMetricFamily("kafka_consumergroup_members", "Members of the group",
                                labels=("consumergroup",))
    for group, count in snap.members:
        members.add_metric((group,), count)
    yield from (current, lag, members)
    yield from _quota_families(snap)
    if snap.dispatch_behind is not None:
        yield GaugeMetricFamily("twinlog_commitlog_dispatch_behind_bytes",
                                "Commitlog bytes not yet dispatched to consume queues", value=snap.dispatch_behind)


_RATE_FAMILIES = {  # quota key -> (family, help): Kafka's per-client sensors, as JMX exporters name them
    "producer_byte_rate": ("kafka_server_produce_byte_rate", "Produce bytes per second of a quota'd client"),
    "consumer_byte_rate": ("kafka_server_fetch_byte_rate", "Fetch bytes per second of a quota'd client"),
    "request_percentage": ("kafka_server_request_request_time", "Handler time of a quota'd client, percent"),
    "controller_mutation_rate": ("kafka_server_controllermutation_rate",
                                 "Partition mutations per second of a quota'd client"),
}


def _quota_families(snap: Snapshot) -> Iterator[Metric]:
    client = ("user", "client_id")
    rates = {key: GaugeMetricFamily(name, doc, labels=client) for key, (name, doc) in _RATE_FAMILIES.items()}
    labelled = ("quota", *client)
    bound = GaugeMetricFamily("twinlog_client_quota", "The quota a client's rate is held to", labels=labelled)
    throttle = CounterMetricFamily("twinlog_client_quota_throttle_time_ms", "Throttle time given to a client",
                                   labels=labelled)
    throttled = CounterMetricFamily("twinlog_client_quota_throttled", "Answers throttled", labels=labelled)
    for key, (user, client_id), rate, quota, throttle_ms, count in snap.quota_rates:
        rates[key].add_metric((user, client_id), rate)
        bound.add_metric((key, user, client_id), quota)
        throttle.add_metric((key, user, client_id), throttle_ms)
        throttled.add_metric((key, user, client_id), count)
    yield from rates.values()
    yield from (bound, throttle, throttled)


def replication_families(r: ReplicationFigures) -> Iterator[Metric]:
    yield GaugeMetricFamily("kafka_controller_kafkacontroller_offlinepartitionscount",
                            "Partitions without a leader (on the controller)", value=r.offline_partitions)
    yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks",
                              "ISR shrinks accepted for partitions led here", value=r.isr_shrinks)
    yield CounterMetricFamily("kafka_server_replicamanager_isrexpands",
                              "ISR expands accepted for partitions led here", value=r.isr_expands)
    yield SummaryMetricFamily("kafka_controller_controllerstats_leaderelectionrateandtimems",
                              "Leader elections this broker wrote, and the milliseconds each took",
                              count_value=r.leader_elections, sum_value=r.election_seconds * 1000)
    yield CounterMetricFamily("kafka_controller_controllerstats_uncleanleaderelections",
                              "Leader elections this broker wrote that chose a replica outside the ISR",
                              value=r.unclean_leader_elections)
    lag = GaugeMetricFamily("kafka_server_replicafetchermanager_maxlag",
                            "Offsets the furthest-behind partition followed here lags its leader's HW",
                            labels=("clientid",))
    lag.add_metric(("Replica",), r.fetcher_max_lag)
    yield lag
