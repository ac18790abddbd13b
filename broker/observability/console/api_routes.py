"""The console's JSON and SVG endpoints: what each one reads from the broker and how.

Every read runs on the broker's event loop through `Call.read` (broker_state.read_on_loop: a
timeout instead of a stuck HTTP thread) and copies plain values there, in slices that yield the
loop; decoding records and drawing charts happen afterwards, in the HTTP thread.

    GET  /api/partitions                  the partitions hosted here (broker_state.partition_rows)
    GET  /api/groups                      committed offsets and lag (broker_state.group_rows)
    GET  /api/lookup?topic=T&key=K        records by key, commitlog topics (broker_state.lookup)
    GET  /api/messages?topic=T&partition=P&from=offset|timestamp|end&position=N&limit=N
                                          records of one partition (message_browser.py)
    GET  /api/configs?topic=T             the topic's configs (DescribeConfigs' handler)
    POST /api/configs?topic=T             {"changes": [{name, op, value}]} (IncrementalAlterConfigs')
    GET  /api/brokers                     every member and its partitions (broker_state.py)
    GET  /api/acls                        the authorizer's bindings (broker_state.py)
    GET  /api/charts/throughput.svg       bytes in and out per second, the last hour (charts.py)
    GET  /api/charts/lag.svg              each group's lag, the last hour
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from broker.observability.console import broker_state, message_browser, topic_configs
from broker.observability.console.broker_state import RequestRefused
from broker.observability.console.charts import HISTORY_S, History, Series, line_chart

SVG = "image/svg+xml"


@dataclass
class Call:
    """One request as the endpoints see it."""
    broker: object
    read: Callable  # coroutine -> its result, run on the loop
    query: dict[str, list[str]]
    body: object  # the parsed JSON body of a POST, else None
    context: object  # the RequestContext a logged-in session acts with, None without login
    history: History

    def arg(self, name: str) -> str:
        value = self.query.get(name, [""])[0]
        if not value:
            raise RequestRefused(400, f"give ?{name}=")
        return value


def partitions(call: Call):
    return call.read(broker_state.partition_rows(call.broker))


def groups(call: Call):
    return call.read(broker_state.group_rows(call.broker))


def lookup(call: Call):
    topic, key = call.query.get("topic", [""])[0], call.query.get("key", [None])[0]
    if not topic or key is None:
        raise RequestRefused(400, "give ?topic=<commitlog topic>&key=<key>")
    answer = call.read(broker_state.lookup(call.broker, topic, key.encode()))
    return {"topic": topic, "key": key, "records": answer.records, "truncated": answer.truncated}


def messages(call: Call):
    query = message_browser.BrowseQuery.parse(call.query)
    raw = call.read(message_browser.read_batches(call.broker, query))
    return message_browser.decode(query, raw)


def configs(call: Call):
    return call.read(topic_configs.describe(call.broker, call.arg("topic"), call.context))


def alter_configs(call: Call):
    changes = topic_configs.parse_changes(call.body)
    return call.read(topic_configs.alter(call.broker, call.arg("topic"), changes, call.context))


def brokers(call: Call):
    return call.read(broker_state.broker_rows(call.broker))


def acls(call: Call):
    return call.read(broker_state.acl_rows(call.broker))


def throughput_chart(call: Call):
    samples = call.history.samples()
    return SVG, line_chart("throughput-chart", "Bytes in and out per second, the last hour", "B/s", [
        Series("bytes in", [(s.at, s.bytes_in_per_s) for s in samples]),
        Series("bytes out", [(s.at, s.bytes_out_per_s) for s in samples])], HISTORY_S)


def lag_chart(call: Call):
    samples = call.history.samples()
    names = sorted({g for s in samples for g in s.lag})
    series = [Series(name, [(s.at, s.lag[name]) for s in samples if name in s.lag]) for name in names]
    # the groups most behind now first: the legend lists at most what the chart kept
    series.sort(key=lambda s: (-(s.points[-1][1] if s.points else 0), s.name))
    return SVG, line_chart("lag-chart", "Consumer lag (records behind), the last hour", "", series, HISTORY_S)


GETS: dict[str, Callable] = {
    "/api/partitions": partitions, "/api/groups": groups, "/api/lookup": lookup, "/api/messages": messages,
    "/api/configs": configs, "/api/brokers": brokers, "/api/acls": acls,
    "/api/charts/throughput.svg": throughput_chart, "/api/charts/lag.svg": lag_chart,
}
POSTS: dict[str, Callable] = {"/api/configs": alter_configs}
