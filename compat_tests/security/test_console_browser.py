"""The console (issue 37 item 3) in headless Chromium against a real broker with SASL users.

One broker (commitlog by default) with a SCRAM user `admin`, a PLAIN user `bob` and the authorizer on (admin and
the PLAINTEXT clients' ANONYMOUS are super users, so the real clients below need no login):
- the API answers 401 before a login, and the page shows only the login form; a wrong password
  is refused in the page; the right one opens the console as admin; a PLAIN user logs in too;
- a POST without the console's header is refused as cross-site (403), even with the cookie;
- the message browser shows records produced by confluent-kafka, from an offset, from the end
  and from a time, in both layouts: keys, timestamps, header values, JSON values pretty-printed,
  binary as hex;
- a topic config changed in the page is what a real client's DescribeConfigs reads back, and a
  bad value shows Kafka's INVALID_CONFIG message;
- the lag chart shows a real consumer group's lag; the throughput chart has samples;
- the brokers view lists this broker with its partitions, the ACLs view a binding a real
  client created.

Everything is read from the page (its DOM and text), not from pixels. Cost: ~15 s.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, ConfigResource, ResourcePatternType, ResourceType)

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.headless_browser import HeadlessBrowser
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

PASSWORD = "console-secret"
BOB_PASSWORD = "bob-secret"  # a PLAIN user
XSS = '<img id="xss" src="x">'
DOC = {"order": 7, "items": ["tea", "milk"], "paid": True}
LAG = 3  # records the group has not read


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    jaas = tmp_path_factory.mktemp("console") / "plain.jaas"
    jaas.write_text(f'user_bob="{BOB_PASSWORD}";\n')
    broker = BrokerProcess(storage_mode="commitlog", metrics=True, extra_args=[
        "--sasl-scram-user", f"SCRAM-SHA-256=[name=admin,password={PASSWORD}]", "--sasl-plain-users", str(jaas),
        "--authorizer", "--super-users", "User:admin;User:ANONYMOUS", "--console-sample-interval-ms", "300"])
    try:
        yield broker.start()
    finally:
        broker.cleanup()


def call(port: int, path: str, body: dict | None = None, cookie: str = "", csrf: bool = True):
    headers = {"Cookie": cookie, "Content-Type": "application/json"}
    if csrf:
        headers["X-Twinlog-Console"] = "1"
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.headers, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read())


def produce(bootstrap: str, topic: str, base_ms: int) -> None:
    """Record i has the timestamp base_ms + i s."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.produce(topic, key=b"order-7", value=json.dumps(DOC).encode(), partition=0, timestamp=base_ms,
                     headers=[("trace-id", b"abc-123"), ("source", b"till-4"), ("html", XSS.encode())])
    producer.produce(topic, key=b"raw", value=b"\x00\xffbinary", partition=0, timestamp=base_ms + 1000)
    for i in range(LAG + 1):
        producer.produce(topic, value=f"plain {i}".encode(), partition=0, timestamp=base_ms + (i + 2) * 1000)
    assert producer.flush(15) == 0


def iso(ms: int) -> str:
    """As the page writes a time (JavaScript's toISOString)."""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_messages(page, topic: str, start: str, position: str = "") -> list[list[str]]:
    page.evaluate(f"""(() => {{
        document.querySelector('#tabs button[data-view=messages]').click();
        const topic = document.getElementById('msg-topic');
        topic.replaceChildren(new Option({json.dumps(topic)}, {json.dumps(topic)}, true, true));
        document.getElementById('msg-from').value = {json.dumps(start)};
        document.getElementById('msg-position').value = {json.dumps(position)};
        document.getElementById('msg-status').textContent = '';
        document.querySelector('#msg-form button').click();
    }})()""")
    page.wait_for("document.getElementById('msg-status').textContent.includes('record(s)')")
    return page.evaluate("[...document.querySelectorAll('#message-list tbody tr')]"
                         ".map((tr) => [...tr.cells].map((td) => td.innerText))")


def test_secured_console_in_chromium(secured):
    broker, port = secured, secured.metrics_port
    topic, segment_topic = unique_topic("console-cl"), unique_topic("console-seg")
    group = f"console-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, partitions=1)
    create_topic(broker.bootstrap, segment_topic, partitions=1, configs={"storage.mode": "segment"})
    base_ms = int(time.time() * 1000) - 60_000
    produce(broker.bootstrap, topic, base_ms)
    produce(broker.bootstrap, segment_topic, base_ms)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)  # 2 + LAG + 1 produced
    finally:
        consumer.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    admin.create_acls([binding])[binding].result(15)

    # no session: the API refuses, and a POST without the console's header is cross-site
    status, _, body = call(port, "/api/partitions")
    assert status == 401 and "log in" in body["error"]
    assert call(port, "/api/login", {"user": "bob", "password": BOB_PASSWORD})[2] == {"user": "bob"}  # PLAIN
    assert call(port, "/api/login", {"user": "bob", "password": PASSWORD})[0] == 401
    status, headers, _ = call(port, "/api/login", {"user": "admin", "password": PASSWORD})
    cookie = headers["Set-Cookie"].split(";")[0]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    change = {"changes": [{"name": "retention.ms", "op": "set", "value": "1"}]}
    assert call(port, f"/api/configs?topic={topic}", change, cookie, csrf=False)[0] == 403
    assert call(port, f"/api/configs?topic={topic}", change)[0] == 401  # the header, no login

    with HeadlessBrowser() as browser:
        page = browser.open(f"http://127.0.0.1:{port}/")
        page.wait_for("!document.getElementById('login').hidden")
        assert page.evaluate("document.getElementById('tabs').hidden") is True
        assert page.evaluate("document.querySelectorAll('#partitions tbody tr').length") == 0

        def log_in(password: str) -> None:
            page.evaluate(f"""(() => {{
                document.getElementById('login-user').value = 'admin';
                document.getElementById('login-password').value = {json.dumps(password)};
                document.querySelector('#login-form button').click(); }})()""")
        log_in("wrong")
        page.wait_for("document.getElementById('login-status').textContent.includes('wrong user name or password')")
        log_in(PASSWORD)
        page.wait_for("document.getElementById('login').hidden && "
                      f"document.getElementById('partitions').textContent.includes({json.dumps(topic)})")
        assert page.text("#whoami") == "logged in as admin"

        # the message browser: the last records, then from an offset, in each layout
        for name, layout in ((topic, "commitlog"), (segment_topic, "segment")):
            rows = read_messages(page, name, "offset", "0")
            assert f"({layout})" in page.text("#msg-status")
            assert [row[1] for row in rows] == [str(i) for i in range(LAG + 3)]
            offset, key, value, headers = rows[0][1], rows[0][3], rows[0][4], rows[0][5]
            assert (offset, key) == ("0", "order-7")
            assert value == json.dumps(DOC, indent=2)  # pretty-printed, as the page shows it
            assert headers.splitlines() == ["trace-id: abc-123", "source: till-4", f"html: {XSS}"]
            assert page.evaluate("document.getElementById('xss')") is None  # text, not markup
            assert rows[1][4] == "00 ff 62 69 6e 61 72 79"  # binary, shown as hex
            assert [row[2] for row in rows] == [iso(base_ms + i * 1000) for i in range(LAG + 3)]
            last = read_messages(page, name, "end")
            assert len(last) == LAG + 3 and last[-1][4] == f"plain {LAG}"
            since = read_messages(page, name, "timestamp", iso(base_ms + 2500))  # the time index finds offset 3
            assert [(row[1], row[4]) for row in since] == [(str(i + 2), f"plain {i}") for i in range(1, LAG + 1)]

        # topic configs: edited in the page, read back by a real client
        page.evaluate("document.querySelector('#tabs button[data-view=topics]').click()")
        page.evaluate(f"""(() => {{ const s = document.getElementById('cfg-topic');
            s.value = {json.dumps(topic)}; s.dispatchEvent(new Event('change')); }})()""")
        page.wait_for("document.querySelector('#configs input[data-name=\"retention.ms\"]') !== null && "
                      f"document.getElementById('cfg-status').textContent.includes({json.dumps(topic)})")

        def set_retention(value: str) -> None:
            page.evaluate(f"""(() => {{ const input = document.querySelector('#configs input[data-name="retention.ms"]');
                input.value = {json.dumps(value)}; input.dispatchEvent(new Event('input'));
                document.getElementById('cfg-status').textContent = '';
                document.getElementById('cfg-save').click(); }})()""")
        set_retention("not-a-number")
        page.wait_for("document.getElementById('cfg-status').textContent.includes('INVALID_CONFIG')")
        set_retention("86400123")
        page.wait_for("document.getElementById('cfg-status').textContent.includes('saved retention.ms')")
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        described = admin.describe_configs([resource])[resource].result(15)
        assert described["retention.ms"].value == "86400123"
        assert page.evaluate("document.querySelector('#configs input[data-name=\"retention.ms\"]').value") == "86400123"

        # charts: the group's lag, sampled every 300 ms
        page.evaluate("document.querySelector('#tabs button[data-view=charts]').click()")
        lag_of = (f"(() => {{ const s = [...document.querySelectorAll('#lag-chart polyline.series')]"
                  f".find((p) => p.dataset.name === {json.dumps(group)}); return s ? s.dataset.latest : null; }})()")

        def lag_shown():
            page.evaluate("document.querySelector('#tabs button[data-view=charts]').click()")
            return page.evaluate(lag_of)
        assert wait_until(lag_shown, "the lag chart to show the group", timeout=20) == str(LAG + 1)
        assert f"{group}: {LAG + 1}" in page.text("#lag-chart")
        # the two charts are fetched at once and each drawn when its own answer arrives: the lag
        # chart showing says nothing of the throughput chart (it was asserted at once, and failed)
        def throughput_series():
            page.evaluate("document.querySelector('#tabs button[data-view=charts]').click()")
            return page.evaluate("document.querySelectorAll('#throughput-chart polyline.series').length") == 2
        assert wait_until(throughput_series, "the throughput chart's two series", timeout=20)

        # brokers and ACLs
        page.evaluate("document.querySelector('#tabs button[data-view=brokers]').click()")
        page.wait_for("document.getElementById('brokers-status').textContent.includes('1 broker')")
        (row,) = page.evaluate("[...document.querySelectorAll('#broker-list tbody tr')]"
                               ".map((tr) => [...tr.cells].map((td) => td.textContent))")
        assert row[0] == "1" and row[1] == broker.bootstrap and "controller" in row[2]
        assert f"{topic}-0*" in row[5].split() and f"{segment_topic}-0*" in row[5].split()
        page.evaluate("document.querySelector('#tabs button[data-view=acls]').click()")
        page.wait_for("document.getElementById('acls-status').textContent.includes('binding')")
        acls = page.evaluate("[...document.querySelectorAll('#acl-list tbody tr')]"
                             ".map((tr) => [...tr.cells].map((td) => td.textContent))")
        assert ["TOPIC", topic, "LITERAL", "User:alice", "*", "READ", "ALLOW"] in acls
