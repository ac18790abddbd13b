"""The markdown report of replicated.py: the produce table with every broker's CPU, the ratio
RF=3 acks=all / RF=1 acks=1 per mode and partition count, and the failover times."""

from __future__ import annotations

FAILOVER_GOAL_S = 5.0


def _cpu(cpu: dict | None) -> str:
    if not cpu:
        return "-"
    return " / ".join(f"{v:.0%}" for _, v in sorted(cpu.items())) + f" (sum {sum(cpu.values()):.0%})"


def _row(r: dict, *path):
    for p in path:
        if not isinstance(r, dict) or p not in r:
            return None
        r = r[p]
    return r


def ratios(r: dict) -> list[dict]:
    """RF=3 acks=all over RF=1 acks=1, for throughput and for the brokers' summed CPU per record."""
    out = []
    keyed = {(p["mode"], p["partitions"], p["rf"]): p for p in r["produce"]}
    for (mode, parts, rf), rf3 in keyed.items():
        rf1 = keyed.get((mode, parts, 1))
        if rf != 3 or rf1 is None or "throughput" not in rf1 or "throughput" not in rf3:
            continue
        t1, t3 = rf1["throughput"], rf3["throughput"]
        cpu1, cpu3 = sum(t1["broker_cpu"].values()), sum(t3["broker_cpu"].values())
        out.append({"mode": mode, "partitions": parts, "throughput_ratio": t3["msgs_s"] / t1["msgs_s"],
                    "cpu_per_record_ratio": (cpu3 / t3["msgs_s"]) / (cpu1 / t1["msgs_s"])})
    return out


def markdown(r: dict) -> str:
    m = r["machine"]
    lines = [f"# Replicated cells ({r['profile']} profile, {r['started_at']})", "",
             f"Machine: {m.get('cpu_model', '?')}, {m.get('nproc', '?')} CPUs, git {m.get('git_commit', '?')}. "
             f"Pinning: {r['pinning']}. Load average (1/5/15 min) before {r['loadavg_before']}, "
             f"after {r.get('loadavg_after')}: other work shared these cores, so the figures are noisy.", "",
             f"Brokers' --flush-messages: {r['settings'].get('flush_messages', 0)} (1: every replica fsyncs "
             "before its offset counts; 0: page cache, Kafka's ISR semantics).", "",
             "## Produce: RF=3 acks=all against RF=1 acks=1 on one 3-broker cluster", "",
             f"{r['settings']['record_size']} B records; peak = one confluent-kafka producer, queue full, "
             f"{r['settings']['throughput_s']:.0f} s; latency = send-to-ack at half that peak for "
             f"{r['settings']['latency_s']:.0f} s. Broker CPU = CPU-seconds per second of each broker "
             "(nodes 1/2/3) in the peak window; 100% is one whole core. Idle = the same with no client, "
             "measured just before the peak phase (the topic and __consumer_offsets present).", "",
             "| mode | partitions | replication | msg/s | MB/s | broker CPU 1/2/3 | client CPU | "
             "latency p50 / p99 ms | broker CPU at half peak | broker CPU idle, before |",
             "|---|---:|---|---:|---:|---|---:|---|---|---|"]
    for p in r["produce"]:
        t, lat = p.get("throughput"), p.get("latency")
        if t is None:
            lines.append(f"| {p['mode']} | {p['partitions']} | {p['replication']} | failed: {p.get('error', '?')} "
                         "| | | | | | |")
            continue
        lat_s = f"{lat['p50_ms']:.1f} / {lat['p99_ms']:.1f}" if lat else "-"
        lines.append(f"| {p['mode']} | {p['partitions']} | {p['replication']} | {t['msgs_s']:,.0f} | "
                     f"{t['mb_s']:,.1f} | {_cpu(t['broker_cpu'])} | {t['client_cpu']:.0%} | {lat_s} | "
                     f"{_cpu(_row(p, 'latency', 'broker_cpu'))} | {_cpu(p.get('idle_cpu'))} |")
    lines += ["", "| mode | partitions | throughput RF=3 acks=all / RF=1 acks=1 | brokers' CPU per record, same ratio |",
              "|---|---:|---:|---:|"]
    for x in ratios(r):
        lines.append(f"| {x['mode']} | {x['partitions']} | {x['throughput_ratio']:.2f} | "
                     f"{x['cpu_per_record_ratio']:.2f} |")
    lines += ["", "## Failover: leader SIGKILL to the first acks=all record acknowledged by the new leader", "",
              f"Goal: under {FAILOVER_GOAL_S:.0f} s with default settings. One RF=3 "
              "min.insync.replicas=2 partition, the killed broker restarted and back in the ISR before "
              "the next kill. Then a rolling restart (each broker SIGTERMed, restarted, back in the ISR): "
              "the longest gap between two acks=all acknowledgements, and the longest in a steady second.", "",
              "| mode | broker session timeout | kills | p50 s | max s | min s | goal | restart to ISR whole, p50 s "
              "| rolling restart: longest ack gap s (steady) |",
              "|---|---|---:|---:|---:|---:|---|---:|---|"]
    for f in r["failover"]:
        mode = f.get("mode", "segment")
        if "failover_p50_s" not in f:
            lines.append(f"| {mode} | {f['session_ms']} ms | failed | | | | | | |")
            continue
        goal = "met" if f["failover_max_s"] < FAILOVER_GOAL_S else (
            "p50 met, max not" if f["failover_p50_s"] < FAILOVER_GOAL_S else "not met")
        rolling = f.get("rolling_restart")
        rolling_s = (f"{rolling['restart_max_gap_s']:.2f} ({rolling['steady_max_gap_s']:.2f})" if rolling else "")
        lines.append(f"| {mode} | {f['session_ms']} ms | {f['kills']} | {f['failover_p50_s']:.2f} "
                     f"| {f['failover_max_s']:.2f} | {f['failover_min_s']:.2f} | {goal} | {f['rejoin_p50_s']:.1f} "
                     f"| {rolling_s} |")
    if r["errors"]:
        lines += ["", "## Errors", ""] + [f"- {e}" for e in r["errors"]]
    lines.append(f"\nElapsed {r.get('elapsed_s', 0):.0f} s.")
    return "\n".join(lines) + "\n"
