"""The demo's streaming job on a replicated cluster, with brokers SIGKILLed under it.

    orders (RF 3) --twinlog source--> windowed revenue per region --+--> parquet
                                                                    +--twinlog sink--> order-stats (RF 3)

`run_with_failures` produces two thirds of the orders, starts both queries (processing-time
trigger, maxOffsetsPerTrigger so the input takes several micro-batches), then:

1. SIGKILLs the broker leading orders-0 after the second micro-batch and produces the last third
   while it is down (acks=all, min.insync.replicas=2 still holds with two brokers), restarts it;
2. two micro-batches later SIGKILLs the broker leading order-stats-0, restarts it after a while;
3. waits until both queries have run a micro-batch at the final watermark (max event time minus
   2 minutes), which emits every window ending at or before it.

A query that fails anyway is started again from its checkpoint, as a Spark user would (counted
in the report: the source and sink are meant to need none). The orders have no late events, so
a run without failures emits exactly `expected_windows`: the test and the demo compare contents
(orders, revenue in cents, items per window and region) of parquet and of order-stats with it.
The sink is at-least-once like the connector's: a micro-batch written again after a restart
repeats identical window rows in order-stats, which the report counts as duplicates.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable, Protocol

from spark import order_events
from spark.revenue_job import windowed_revenue

WATERMARK = timedelta(minutes=2)
WindowKey = tuple[int, str]  # (window start, epoch seconds; region)
WindowValue = tuple[int, int, int]  # (orders, revenue in cents, items)


class Brokers(Protocol):
    """The cluster under the job: who leads a partition, SIGKILL a broker, start it again."""

    @property
    def bootstrap(self) -> str: ...

    def leader(self, topic: str, partition: int) -> int: ...

    def kill(self, node: int) -> None: ...

    def restart(self, node: int) -> None: ...


@dataclass
class FailoverReport:
    events: list[str] = field(default_factory=list)
    query_restarts: int = 0
    batches: list[int] = field(default_factory=list)  # input rows per parquet micro-batch
    parquet: dict[WindowKey, WindowValue] = field(default_factory=dict)
    topic: dict[WindowKey, WindowValue] = field(default_factory=dict)
    topic_duplicates: int = 0
    expected: dict[WindowKey, WindowValue] = field(default_factory=dict)
    seconds: float = 0.0


def _event_time(o: order_events.Order) -> datetime:
    # As Spark parses it from the JSON: milliseconds.
    return o.event_time.replace(microsecond=o.event_time.microsecond // 1000 * 1000)


def final_watermark(orders: list[order_events.Order]) -> datetime:
    return max(_event_time(o) for o in orders) - WATERMARK


def expected_windows(orders: list[order_events.Order]) -> dict[WindowKey, WindowValue]:
    """What append mode emits for on-time orders: every window that ends by the final watermark."""
    final = final_watermark(orders)
    out: dict[WindowKey, list[int]] = {}
    for o in orders:
        start = _event_time(o).replace(second=0, microsecond=0)
        if start + timedelta(minutes=1) <= final:
            acc = out.setdefault((int(start.timestamp()), o.region), [0, 0, 0])
            acc[0] += 1
            acc[1] += round(o.amount * 100)
            acc[2] += o.items
    return {k: tuple(v) for k, v in out.items()}


class _Pipeline:
    """Both streaming queries, started again from their checkpoints if one dies."""

    def __init__(self, spark, bootstrap: str, workdir: str, max_per_trigger: int, trigger: str):
        self.spark, self.bootstrap, self.workdir = spark, bootstrap, workdir
        self.max_per_trigger, self.trigger = max_per_trigger, trigger
        self.restarts = 0
        self.rows_before_restarts: list[int] = []  # input rows per micro-batch of stopped parquet queries
        self.queries = {"parquet": self._start("parquet"), "topic": self._start("topic")}

    def _start(self, which: str):
        # A leader change can take the brokers more than the default 3 retries 1 s apart to
        # agree on: on a loaded machine a reader's ListOffsets got FENCED_LEADER_EPOCH for longer.
        stats = windowed_revenue(self.spark, self.bootstrap, max_offsets=self.max_per_trigger, retries=10)
        checkpoint = os.path.join(self.workdir, f"cp-{which}")
        if which == "parquet":
            writer = stats.writeStream.format("parquet").option("path", os.path.join(self.workdir, "windows"))
        else:
            writer = (stats.selectExpr("region AS key", "to_json(struct(*)) AS value").writeStream
                      .format("twinlog").option("kafka.bootstrap.servers", self.bootstrap)
                      .option("topic", "order-stats"))
        return (writer.outputMode("append").option("checkpointLocation", checkpoint)
                .trigger(processingTime=self.trigger).start())

    def supervise(self, log: Callable[[str], None]) -> None:
        for which, q in self.queries.items():
            if not q.isActive:
                log(f"query {which} stopped ({_cause(q.exception())}); restarting it from its checkpoint")
                self.restarts += 1
                if which == "parquet":
                    self.rows_before_restarts += self._rows(q)
                self.queries[which] = self._start(which)

    def batches_done(self, which: str) -> int:
        progress = self.queries[which].lastProgress
        return -1 if progress is None else progress["batchId"]

    def at_watermark(self, which: str, final: datetime) -> bool:
        progress = self.queries[which].lastProgress
        mark = progress and progress.get("eventTime", {}).get("watermark")
        return bool(mark) and datetime.fromisoformat(mark.replace("Z", "+00:00")) >= final

    def wait(self, done: Callable[[], bool], what: str, log: Callable[[str], None], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            self.supervise(log)
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.2)

    @staticmethod
    def _rows(query) -> list[int]:
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    def stop(self) -> list[int]:
        for q in self.queries.values():
            q.stop()
        return self.rows_before_restarts + self._rows(self.queries["parquet"])


def _cause(exc) -> str:
    """The Python exception inside a StreamingQueryException's text (its task's traceback)."""
    text = str(exc).split("JVM stacktrace")[0]
    found = re.findall(r"^\s*((?:[\w.]+\.)?\w+(?:Error|Exception)\b[:{].*)$", text, re.MULTILINE)
    return (found[-1] if found else text.splitlines()[0] if text else "no exception")[:300]


def _kill_and_restart(brokers: Brokers, topic: str, pipeline: _Pipeline, report: FailoverReport,
                      log: Callable[[str], None], down_s: float, while_down: Callable[[], None] | None = None) -> None:
    node = brokers.leader(topic, 0)
    batch = pipeline.batches_done("parquet")
    brokers.kill(node)
    t0 = time.monotonic()
    log(f"SIGKILL broker {node} (leader of {topic}-0) after micro-batch {batch}")
    if while_down is not None:
        while_down()
    time.sleep(max(0.0, down_s - (time.monotonic() - t0)))
    pipeline.supervise(log)
    brokers.restart(node)
    log(f"broker {node} restarted after {time.monotonic() - t0:.1f}s down; "
        f"{topic}-0 now led by broker {brokers.leader(topic, 0)}")
    report.events.append(f"broker {node} (leader of {topic}-0) killed after batch {batch}, "
                         f"down {time.monotonic() - t0:.1f}s")


def run_with_failures(spark, brokers: Brokers, workdir: str, orders: list[order_events.Order],
                      max_per_trigger: int, trigger: str = "1 second", down_s: float = 3.0,
                      log: Callable[[str], None] = print, timeout: float = 240.0) -> FailoverReport:
    t0 = time.monotonic()
    report = FailoverReport(expected=expected_windows(orders))
    split = len(orders) * 2 // 3
    order_events.produce(brokers.bootstrap, "orders", orders[:split])
    pipeline = _Pipeline(spark, brokers.bootstrap, workdir, max_per_trigger, trigger)
    try:
        pipeline.wait(lambda: pipeline.batches_done("parquet") >= 1, "two micro-batches", log, timeout)
        _kill_and_restart(brokers, "orders", pipeline, report, log, down_s,
                          while_down=lambda: order_events.produce(brokers.bootstrap, "orders", orders[split:]))
        mark = pipeline.batches_done("topic")
        pipeline.wait(lambda: pipeline.batches_done("topic") >= mark + 2, "two more micro-batches", log, timeout)
        _kill_and_restart(brokers, "order-stats", pipeline, report, log, down_s)
        final = final_watermark(orders)
        pipeline.wait(lambda: all(pipeline.at_watermark(w, final) for w in pipeline.queries),
                      f"both queries at the final watermark {final:%H:%M:%S}", log, timeout)
    finally:
        report.batches = pipeline.stop()
        report.query_restarts = pipeline.restarts
    report.parquet = read_parquet_windows(spark, workdir)
    report.topic, report.topic_duplicates = read_topic_windows(spark, brokers.bootstrap)
    report.seconds = time.monotonic() - t0
    return report


def read_parquet_windows(spark, workdir: str) -> dict[WindowKey, WindowValue]:
    rows = (spark.read.parquet(os.path.join(workdir, "windows"))
            .selectExpr("unix_timestamp(window_start) AS start", "region", "orders",
                        "CAST(round(revenue * 100) AS BIGINT) AS cents", "items").collect())
    out = {(r.start, r.region): (r.orders, r.cents, r.items) for r in rows}
    if len(out) != len(rows):
        raise AssertionError(f"parquet holds {len(rows) - len(out)} windows twice")
    return out


def read_topic_windows(spark, bootstrap: str) -> tuple[dict[WindowKey, WindowValue], int]:
    """order-stats' windows, and how many rows repeat one already seen (identical ones only)."""
    out: dict[WindowKey, WindowValue] = {}
    seen: Counter = Counter()
    for r in (spark.read.format("twinlog").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "order-stats").load().selectExpr("CAST(value AS STRING) AS v").collect()):
        w = json.loads(r.v)
        start = datetime.fromisoformat(w["window_start"].replace("Z", "+00:00")).astimezone(timezone.utc)
        key = (int(start.timestamp()), w["region"])
        value = (w["orders"], round(w["revenue"] * 100), w["items"])
        if key in out and out[key] != value:
            raise AssertionError(f"order-stats holds two different results for window {key}: {out[key]}, {value}")
        out[key] = value
        seen[key] += 1
    return out, sum(n - 1 for n in seen.values())
