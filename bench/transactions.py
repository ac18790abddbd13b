"""Transactions: what a transactional producer costs against an idempotent one, and what
read_committed costs a consumer, per layout, against a real broker over the network.

    .venv/bin/python bench/transactions.py [--seconds 5] [--partitions 1,64] [--txn-sizes 100,1000,10000]
        [--layouts segment,commitlog] [--record-size 100] [--fill-records 500000]

Per layout, one fresh broker (bench/broker_launcher.py), pinned to CPU 0 with the load
generator (one confluent-kafka process, bench/txn_workers.py) on CPU 1 where there are two:

1. produce, for each partition count: idempotent (acks=all, the transactional producer's own
   settings without transactions), then transactional with a commit every N records for each
   N of --txn-sizes, each on a fresh topic for --seconds; linger 5 ms, 1 MiB batches, records
   spread uniformly over the partitions (random partitioner, as compare_cells does). A
   transactional record counts once its commit returned. Checked after each cell: the
   partitions grew by the records plus the markers (reported per transaction), and the last
   stable offset (ListOffsets read_committed) equals the high watermark everywhere: nothing
   was left open. The broker's /metrics, scraped before and after each cell, give the commit's
   steps as the broker saw them and the requests per transaction (txn_broker_steps.py);
2. consume, for each partition count: --fill-records written in transactions of
   --consume-txn records with every 10th transaction aborted (records flushed before the
   abort, so they are in the log), then read once with read_uncommitted to warm the page
   cache, then --consume-rounds rounds of read_committed and read_uncommitted, alternated.
   read_committed must return exactly the committed records and none of an aborted
   transaction (each value's first byte says which), read_uncommitted all of them.

Ceilings from the same run: dd (fdatasync) and write() into the page cache beside the data,
and each produce cell against librdkafka's mock broker, run as a process of its own on the
broker's CPU with a topic of the same partition count (mock_cluster.py): the load generator's
own limit, with no broker of ours. Writes bench/results/transactions.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_launcher import BrokerProcess, broker_command, free_port  # noqa: E402
from compare_cells import percentiles  # noqa: E402
from load_workers import PhaseError, run_phase  # noqa: E402
from machine_ceilings import page_cache_write_rate  # noqa: E402
from machine_facts import disk_write_rate, machine_facts  # noqa: E402
from mock_cluster import MockCluster  # noqa: E402
from topic_admin import create_topic  # noqa: E402
from transactions_report import STEP_NAMES, markdown, step_ms  # noqa: E402
from txn_broker_steps import commit_steps, scrape  # noqa: E402
from txn_workers import isolation_consume_worker, txn_produce_worker  # noqa: E402

BENCH = Path(__file__).resolve().parent
HOST = "127.0.0.1"
ABORT_EVERY = 10  # the "10% of transactions aborted"


def _cpus() -> tuple[set[int] | None, list[int] | None]:
    usable = sorted(os.sched_getaffinity(0))
    return ({usable[0]}, usable[1:]) if len(usable) >= 2 else (None, None)


def _spread(partitions: int) -> dict:
    if partitions == 1:
        return {"partition": 0}
    return {"partition": None, "client_config": {"sticky.partitioning.linger.ms": 0, "partitioner": "random"}}


def offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int, int]]:
    """{partition: (log start, high watermark, last stable offset)} from ListOffsets."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition(topic, p) for p in range(partitions)]

    def ask(spec, isolation):
        futures = admin.list_offsets({tp: spec for tp in tps}, isolation_level=isolation, request_timeout=30)
        return {tp.partition: f.result().offset for tp, f in futures.items()}

    low = ask(OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED)
    high = ask(OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED)
    lso = ask(OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
    return {p: (low[p], high[p], lso[p]) for p in range(partitions)}


def _produce_params(bootstrap: str, topic: str, partitions: int, txn: int, ns, cpus, **extra) -> list[dict]:
    return [{"bootstrap": bootstrap, "topic": topic, "value_size": ns.record_size, "seconds": ns.seconds,
             "txn_records": txn, "abort_every": 0, "linger_ms": 5, "cpus": cpus, **_spread(partitions), **extra}]


def _produce_figures(res: dict, secs: float, broker_cpu_s: float | None) -> dict:
    return {"records": res["committed"], "seconds": secs, "msgs_s": res["committed"] / secs,
            "mb_s": res["bytes"] / 1e6 / secs, "txns": res["txns"], "txns_s": res["txns"] / secs,
            "client_cpu": res["client_cpu_s"] / secs,
            "broker_cpu": None if broker_cpu_s is None else broker_cpu_s / secs,
            "commit": percentiles(res["commit_s"])}


def produce_cell(broker: BrokerProcess, metrics_port: int, layout: str, partitions: int, txn: int, ns,
                 cpus) -> dict:
    topic = f"txn-{layout}-p{partitions}-n{txn}"
    create_topic(broker.bootstrap, topic, partitions)
    before = scrape(metrics_port)
    run = run_phase(txn_produce_worker, _produce_params(broker.bootstrap, topic, partitions, txn, ns, cpus),
                    ns.seconds + 150, broker)
    after = scrape(metrics_port)
    (res,) = run.results
    ends = offsets(broker.bootstrap, topic, partitions)
    grown = sum(high - low for low, high, _ in ends.values())
    records = res["committed"] + res["warmup"]
    if grown < records:
        raise PhaseError(f"{topic}: {records:,} acknowledged but the partitions grew by {grown:,}")
    open_ = {p: e for p, e in ends.items() if e[2] != e[1]}
    if open_:
        raise PhaseError(f"{topic}: last stable offset below the high watermark after the run: {open_}")
    out = _produce_figures(res, run.end_time - run.go_time, run.broker_cpu_s)
    out.update(layout=layout, partitions=partitions, txn_records=txn,
               markers_per_txn=(grown - records - 1) / res["txns"] if txn else 0.0,  # 1: the warm-up's
               broker_cpu_us_per_record=run.broker_cpu_s / res["committed"] * 1e6,
               steps=commit_steps(before, after, res["txns"] + 1) if txn else None)  # + 1: the warm-up's
    if not txn and grown != records:
        raise PhaseError(f"{topic}: idempotent produce, yet {grown - records} offsets more than records")
    return out


def mock_cell(mock: MockCluster, partitions: int, txn: int, ns, cpus) -> dict:
    """The same producer against librdkafka's mock broker on the broker's CPU, with a topic of the
    same partition count: the load generator's own limit."""
    topic = f"mock-p{partitions}-n{txn}"
    mock.create_topic(topic, partitions)
    run = run_phase(txn_produce_worker, _produce_params(mock.bootstrap, topic, partitions, txn, ns, cpus),
                    ns.seconds + 120, mock)
    (res,) = run.results
    return {"partitions": partitions, "txn_records": txn,
            **_produce_figures(res, run.end_time - run.go_time, run.broker_cpu_s)}


def consume_cells(broker: BrokerProcess, layout: str, partitions: int, ns, cpus) -> dict:
    topic = f"txn-read-{layout}-p{partitions}"
    create_topic(broker.bootstrap, topic, partitions)
    fill = _produce_params(broker.bootstrap, topic, partitions, ns.consume_txn, ns, cpus,
                           abort_every=ABORT_EVERY, count=ns.fill_records)
    fill[0]["seconds"] = 600
    (filled,) = run_phase(txn_produce_worker, fill, 750, broker).results
    if filled["committed"] + filled["aborted"] < ns.fill_records:
        raise PhaseError(f"fill wrote {filled['committed'] + filled['aborted']:,} of {ns.fill_records:,}")
    ends = offsets(broker.bootstrap, topic, partitions)
    ranges = {str(p): [low, high] for p, (low, high, _) in ends.items()}
    expect = {"read_committed": (filled["committed"] + filled["warmup"], 0),
              "read_uncommitted": (filled["committed"] + filled["aborted"] + filled["warmup"], filled["aborted"])}

    def one(isolation: str) -> dict:
        want, want_aborted = expect[isolation]
        params = [{"bootstrap": broker.bootstrap, "topic": topic, "ranges": ranges, "isolation": isolation,
                   "expected": want, "fetch_bytes": 1 << 20, "seconds": 120, "cpus": cpus}]
        run = run_phase(isolation_consume_worker, params, 200, broker)
        (x,) = run.results
        if (x["consumed"], x["aborted_seen"]) != (want, want_aborted):
            raise PhaseError(f"{topic} {isolation}: read {x['consumed']:,} records ({x['aborted_seen']:,} aborted), "
                             f"expected {want:,} ({want_aborted:,} aborted)")
        secs = x["t1"] - x["t0"]
        return {"isolation": isolation, "records": x["consumed"], "seconds": secs, "msgs_s": x["consumed"] / secs,
                "mb_s": x["bytes"] / 1e6 / secs, "offsets_s": sum(h - lo for lo, h in ranges.values()) / secs,
                "client_cpu": x["client_cpu_s"] / secs, "broker_cpu": run.broker_cpu_s / secs}

    one("read_uncommitted")  # warms the page cache; not counted
    passes = []
    for r in range(ns.consume_rounds):
        order = ("read_committed", "read_uncommitted") if r % 2 == 0 else ("read_uncommitted", "read_committed")
        passes += [one(iso) for iso in order]
    best = {iso: max((p for p in passes if p["isolation"] == iso), key=lambda p: p["msgs_s"])
            for iso in expect}
    return {"layout": layout, "partitions": partitions, "fill": {k: filled[k] for k in ("committed", "aborted", "txns")},
            "offsets": sum(h - lo for lo, h in ranges.values()), "best": best, "passes": passes}


def run_layout(layout: str, ns, work: Path, broker_cpus, client_cpus) -> dict:
    data = work / layout
    data.mkdir()
    ceilings = {"dd_mb_s": disk_write_rate(data, 1024, 300)["mb_s"],
                "page_cache_mb_s": page_cache_write_rate(str(data), 1024, broker_cpus and sorted(broker_cpus))["mb_s"]}
    port, metrics_port = free_port(), free_port()
    broker = BrokerProcess(broker_command("twinlog", None, ["--storage-mode", layout, "--metrics-port",
                                                            str(metrics_port)], data, HOST, port),
                           HOST, port, work / f"broker-{layout}.log", broker_cpus)
    broker.start()
    out = {"layout": layout, "ceilings": ceilings, "produce": [], "consume": []}
    try:
        for partitions in ns.partitions:
            for txn in [0, *ns.txn_sizes]:
                out["produce"].append(produce_cell(broker, metrics_port, layout, partitions, txn, ns, client_cpus))
                c = out["produce"][-1]
                print(f"{layout:9} p{partitions:<3} {'idempotent' if not txn else f'commit/{txn}':>12}: "
                      f"{c['msgs_s']:>10,.0f} msg/s"
                      + (f", {c['txns_s']:,.1f} txn/s, commit p50 {c['commit']['p50_ms']:.1f} ms ("
                         + ", ".join(f"{k} {step_ms(c['steps'][k]['p50_ms'])}" for k in STEP_NAMES)
                         + f"), markers/txn {c['markers_per_txn']:.1f}" if txn else "")
                      + f", broker CPU {c['broker_cpu']:.0%}, "
                      f"client CPU {c['client_cpu']:.0%}", flush=True)
        for partitions in ns.partitions:
            out["consume"].append(consume_cells(broker, layout, partitions, ns, client_cpus))
            for iso, b in out["consume"][-1]["best"].items():
                print(f"{layout:9} p{partitions:<3} {iso:>16}: {b['msgs_s']:>10,.0f} msg/s {b['mb_s']:6.1f} MB/s, "
                      f"broker CPU {b['broker_cpu']:.0%}, client CPU {b['client_cpu']:.0%}", flush=True)
    finally:
        broker.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    parser.add_argument("--seconds", type=float, default=5.0, help="each produce cell")
    parser.add_argument("--partitions", type=ints, default=[1, 64])
    parser.add_argument("--txn-sizes", type=ints, default=[100, 1000, 10000], help="records per transaction")
    parser.add_argument("--layouts", default="segment,commitlog")
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--fill-records", type=int, default=500_000, help="records of the consume topic")
    parser.add_argument("--consume-txn", type=int, default=1000, help="records per transaction of the fill")
    parser.add_argument("--consume-rounds", type=int, default=2)
    ns = parser.parse_args()
    broker_cpus, client_cpus = _cpus()
    (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="transactions-", dir=BENCH / "results" / "tmp"))
    results = {"machine": machine_facts(), "settings": vars(ns), "load_average": os.getloadavg(),
               "mock": [], "layouts": []}
    try:
        with MockCluster(broker_cpus) as mock:
            for partitions in ns.partitions:
                for txn in [0, *ns.txn_sizes]:
                    c = mock_cell(mock, partitions, txn, ns, client_cpus)
                    results["mock"].append(c)
                    print(f"mock      p{partitions:<3} {'idempotent' if not txn else f'commit/{txn}':>12}: "
                          f"{c['msgs_s']:>10,.0f} msg/s"
                          + (f", commit p50 {c['commit']['p50_ms']:.1f} ms" if txn else "")
                          + f", mock CPU {c['broker_cpu']:.0%}, client CPU {c['client_cpu']:.0%}", flush=True)
        for layout in ns.layouts.split(","):
            results["layouts"].append(run_layout(layout, ns, work, broker_cpus, client_cpus))
    finally:
        out = BENCH / "results" / "transactions.json"
        out.write_text(json.dumps(results, indent=1, default=str))
        shutil.rmtree(work, ignore_errors=True)
    (BENCH / "results" / "transactions.md").write_text(markdown(results))
    print(markdown(results))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
