"""The console on `--metrics-port` without SASL users (open, no login), against a real broker and
a real browser (test_console_browser.py has the secured one and the other views).

One broker (commitlog by default) with a commitlog topic and a segment topic, both written by
confluent-kafka, and a group offset committed on the commitlog topic:
- the JSON endpoints answer exactly what was produced and committed: each partition's layout,
  LEO = HW = records produced, log start 0, leader / replicas / ISR of a single broker; the
  group's committed offset and lag; the records of one key, in offset order; a clear error for
  a key lookup on the segment topic, an unknown topic, a request without a key;
- Debian's headless Chromium loads /console, which redirects to / (with a key lookup in its address) and runs its
  script: the DOM it dumps has the topic's rows with their LEO, the group's lag, and the looked-up
  records, whose value carries markup that must come out as text, not as an element (XSS);
- the screenshot it takes is a 1200x800 PNG with the tables drawn (enough non-background pixels).

If chromium is not installed this test fails (it does not skip): install_deps.sh installs it.
Cost: one broker start and two Chromium runs, ~6 s.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import urllib.parse
import uuid
from html.parser import HTMLParser

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from PIL import Image

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.console_api import get
from compat_tests.helpers.topics import create_topic, unique_topic

XSS = '<b id="xss">bold</b><img src=x onerror="document.title=1">'
KEYS = [b"alpha", b"beta", b"alpha", XSS.encode(), b"alpha"]  # partition 0 of the commitlog topic, in order
OTHER_PARTITION = 2  # records on partition 1
SEGMENT_RECORDS = 3
COMMITTED = 2  # the group's offset on partition 0: lag 5 - 2 = 3


@pytest.fixture(scope="module")
def console_broker():
    broker = BrokerProcess(storage_mode="commitlog", extra_args=["--metrics-port", "0"])
    try:
        broker.start()
        found = re.search(r"metrics on http://[^ ]*:(\d+)/metrics", broker.log_text())
        assert found, broker.log_tail()
        broker.metrics_port = int(found.group(1))
        yield broker
    finally:
        broker.cleanup()


class TableCells(HTMLParser):
    """The text of each row of each <table id=...> in a dumped DOM: {table id: [[cell, ...], ...]},
    and the ids of every element (an element id="xss" would be markup that escaped into the page)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.element_ids: list[str] = []
        self._table = self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.element_ids.append(attrs["id"])
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag == "td" and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._table[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def chromium(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is not installed: run compat_tests/install_deps.sh (apt-get install chromium)"
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,800",
                           "--virtual-time-budget=5000", *args], capture_output=True, text=True, timeout=60)


def produce(bootstrap: str, commitlog_topic: str, segment_topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for i, key in enumerate(KEYS):
        producer.produce(commitlog_topic, key=key, value=f"v{i} {key.decode()}".encode(), partition=0)
        producer.flush(15)  # one batch per record: offsets in produce order
    for i in range(OTHER_PARTITION):
        producer.produce(commitlog_topic, key=b"alpha", value=b"p1", partition=1)
    for i in range(SEGMENT_RECORDS):
        producer.produce(segment_topic, value=b"s" * 50, partition=0)
    assert producer.flush(15) == 0


def commit(bootstrap: str, group: str, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, COMMITTED)], asynchronous=False)
    finally:
        consumer.close()


def test_console_json_and_page_in_chromium(console_broker, tmp_path):
    broker, port = console_broker, console_broker.metrics_port
    topic, segment_topic = unique_topic("console-cl"), unique_topic("console-seg")
    group = f"console-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, partitions=2)
    create_topic(broker.bootstrap, segment_topic, partitions=1, configs={"storage.mode": "segment"})
    produce(broker.bootstrap, topic, segment_topic)
    commit(broker.bootstrap, group, topic)

    assert get(port, "/api/session") == (200, {"login_required": False, "user": None})  # no SASL users: open
    status, partitions = get(port, "/api/partitions")
    assert status == 200
    rows = {(r["topic"], r["partition"]): r for r in partitions}
    expected = {(topic, 0): ("commitlog", len(KEYS)), (topic, 1): ("commitlog", OTHER_PARTITION),
                (segment_topic, 0): ("segment", SEGMENT_RECORDS)}
    for tp, (layout, records) in expected.items():
        row = rows[tp]
        assert (row["layout"], row["log_end_offset"], row["high_watermark"], row["log_start_offset"]) == \
            (layout, records, records, 0), row
        assert row["size_bytes"] > records * 2
        assert row["replicas"] == row["isr"] == [row["leader"]]

    status, groups = get(port, "/api/groups")
    assert status == 200
    assert [g for g in groups if g["group"] == group] == [
        {"group": group, "topic": topic, "partition": 0, "committed": COMMITTED, "lag": len(KEYS) - COMMITTED}]

    status, found = get(port, "/api/lookup", topic=topic, key="alpha")
    assert status == 200
    assert [(r["partition"], r["offset"], r["value"]) for r in found["records"]] == \
        [(0, 0, "v0 alpha"), (0, 2, "v2 alpha"), (0, 4, "v4 alpha"), (1, 0, "p1"), (1, 1, "p1")]
    assert found["truncated"] is False
    status, refused = get(port, "/api/lookup", topic=segment_topic, key="alpha")
    assert status == 400 and "storage.mode=commitlog" in refused["error"]
    assert get(port, "/api/lookup", topic="no-such-topic", key="alpha")[0] == 404
    assert get(port, "/api/lookup", topic=topic)[0] == 400

    # the console's old address redirects to / with its query
    page = f"http://127.0.0.1:{port}/console?" + urllib.parse.urlencode({"topic": topic, "key": XSS})
    started = time.monotonic()
    dumped = chromium("--dump-dom", page)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    cells = TableCells()
    cells.feed(dumped.stdout)
    # topic, partition, layout, moving to (no move under way), LEO, HW, log start
    assert [topic, "0", "commitlog", "", str(len(KEYS)), str(len(KEYS)), "0"] in \
        [row[:7] for row in cells.tables["partitions"]], dumped.stdout
    assert [segment_topic, "0", "segment", "", str(SEGMENT_RECORDS)] in [row[:5] for row in cells.tables["partitions"]]
    assert [group, topic, "0", str(COMMITTED), str(len(KEYS) - COMMITTED)] in cells.tables["groups"]
    looked_up = [row for row in cells.tables["lookup"] if row]
    assert [(row[0], row[1], row[3]) for row in looked_up] == [("0", "3", f"v3 {XSS}")]
    assert "xss" not in cells.element_ids  # the value was written as text, not parsed as markup

    shot = tmp_path / "console.png"
    taken = chromium(f"--screenshot={shot}", page)
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    elapsed = time.monotonic() - started
    with Image.open(shot) as image:
        assert image.size == (1200, 800)
        rgb = image.convert("RGB")
        counts = {color: n for n, color in rgb.getcolors(rgb.width * rgb.height)}
        drawn = rgb.width * rgb.height - counts[rgb.getpixel((rgb.width - 1, rgb.height - 1))]  # vs the background
    assert drawn > 20_000, f"only {drawn} pixels differ from the background: the page looks blank"
    assert elapsed < 30
