"""The console's JSON and SVG endpoints: what each one reads from the broker and how.

Every read runs on the broker's event loop through `Call.read` (loop_read.read_on_loop: a
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

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, TypeAlias, TypeVar

from broker.net.request_context import RequestContext
from broker.observability.console import broker_state, message_browser, topic_configs
from broker.observability.console.broker_state import ConsoleSources, RequestRefused
from broker.observability.console.charts import HISTORY_S, History, Series, line_chart
from broker.observability.loop_read import read_on_loop

SVG = "image/svg+xml"
T = TypeVar("T")
# JSON (an object, or a list of rows), or (content type, text): a chart
Answer: TypeAlias = "dict[str, Any] | list[dict[str, Any]] | tuple[str, str]"


@dataclass
class Call:
    """One request as the endpoints see it."""
    sources: ConsoleSources
    loop: asyncio.AbstractEventLoop  # the broker's, where every read runs
    timeout_s: float
    query: dict[str, list[str]]
    body: object  # the parsed JSON body of a POST, else None
    context: RequestContext | None  # a logged-in session's (it acts as that user), None without login
    history: History

    def read(self, read: Callable[[], Awaitable[T]]) -> T:
        """`read()`'s result, run on the broker's loop (loop_read.py)."""
        return read_on_loop(self.loop, read, self.timeout_s)

    def arg(self, name: str) -> str:
        value = self.query.get(name, [""])[0]
        if not value:
            raise RequestRefused(400, f"give ?{name}=")
        return value


def partitions(call: Call) -> Answer:
    return call.read(lambda: broker_state.partition_rows(call.sources))


def groups(call: Call) -> Answer:
    return call.read(lambda: broker_state.group_rows(call.sources.state))


def lookup(call: Call) -> Answer:
    topic, key = call.query.get("topic", [""])[0], call.query.get("key", [None])[0]
    if not topic or key is None:
        raise RequestRefused(400, "give ?topic=<commitlog topic>&key=<key>")
    state = call.sources.state
    answer = call.read(lambda: broker_state.lookup(state.topics, state.storage, topic, key.encode()))
    return {"topic": topic, "key": key, "records": answer.records, "truncated": answer.truncated}


def messages(call: Call) -> Answer:
    query = message_browser.BrowseQuery.parse(call.query)
    api = call.sources.api
    raw = call.read(lambda: message_browser.read_batches(api.topics, api.view, query))
    return message_browser.decode(query, raw)


def configs(call: Call) -> Answer:
    topic = call.arg("topic")
    return call.read(lambda: topic_configs.describe(call.sources.api, topic, call.context))


def alter_configs(call: Call) -> Answer:
    changes = topic_configs.parse_changes(call.body)
    topic = call.arg("topic")
    return call.read(lambda: topic_configs.alter(call.sources.api, topic, changes, call.context))


def brokers(call: Call) -> Answer:
    api = call.sources.api
    return call.read(lambda: broker_state.broker_rows(api.view, api.topics, api.config.node_id))


def acls(call: Call) -> Answer:
    return call.read(lambda: broker_state.acl_rows(call.sources.api.security.acls))


def throughput_chart(call: Call) -> Answer:
    samples = call.history.samples()
    return SVG, line_chart("throughput-chart", "Bytes in and out per second, the last hour", "B/s", [
        Series("bytes in", [(s.at, s.bytes_in_per_s) for s in samples]),
        Series("bytes out", [(s.at, s.bytes_out_per_s) for s in samples])], HISTORY_S)


def lag_chart(call: Call) -> Answer:
    samples = call.history.samples()
    names = sorted({g for s in samples for g in s.lag})
    series = [Series(name, [(s.at, s.lag[name]) for s in samples if name in s.lag]) for name in names]
    # the groups most behind now first: the legend lists at most what the chart kept
    series.sort(key=lambda s: (-(s.points[-1][1] if s.points else 0), s.name))
    return SVG, line_chart("lag-chart", "Consumer lag (records behind), the last hour", "", series, HISTORY_S)


GETS: dict[str, Callable[[Call], Answer]] = {
    "/api/partitions": partitions, "/api/groups": groups, "/api/lookup": lookup, "/api/messages": messages,
    "/api/configs": configs, "/api/brokers": brokers, "/api/acls": acls,
    "/api/charts/throughput.svg": throughput_chart, "/api/charts/lag.svg": lag_chart,
}
POSTS: dict[str, Callable[[Call], Answer]] = {"/api/configs": alter_configs}
