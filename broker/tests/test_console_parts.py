"""The console's pure parts: how a record's fields are shown (message_browser.shown), the charts'
samples and SVG (charts.py), the login's checks and sessions (login.py), and the
parsing of the page's requests (message_browser.BrowseQuery, topic_configs.parse_changes)."""

from __future__ import annotations

import json
import secrets
import xml.etree.ElementTree as ET

import pytest
from wire.scram import ScramCredential

from broker.observability.console import login
from broker.observability.console.broker_state import RequestRefused
from broker.observability.console.charts import MAX_GROUPS_CHARTED, History, Series, line_chart
from broker.observability.console.message_browser import DISPLAY_BYTES, MAX_RECORDS, BrowseQuery, shown
from broker.observability.console.topic_configs import parse_changes


def test_json_objects_are_pretty_printed_and_other_text_is_kept_as_it_came():
    assert shown(b'{"a":[1,2],"b":"\xc3\xa9"}') == {"kind": "json", "text": '{\n  "a": [\n    1,\n    2\n  ],\n  "b": "é"\n}',
                                                    "size": 20, "cut": False}
    assert shown(b"42")["kind"] == "text" and shown(b"{not json")["kind"] == "text"
    assert shown(b"[" * 100 + b"]" * 100)["kind"] == "text"  # too deep to pretty-print cheaply
    assert shown(None) == {"kind": "null", "text": None, "size": 0, "cut": False}


def test_binary_is_hex_and_base64_and_long_values_are_cut():
    binary = shown(b"\x00\xff\x10")
    assert (binary["kind"], binary["text"], binary["base64"]) == ("binary", "00 ff 10", "AP8Q")
    long = shown("é".encode() * DISPLAY_BYTES)  # a cut through a two-byte character is still text
    assert long["kind"] == "text" and long["cut"] and long["size"] == 2 * DISPLAY_BYTES
    assert len(long["text"].encode()) <= DISPLAY_BYTES


def test_history_turns_counters_into_rates_keeps_an_hour_and_the_groups_most_behind():
    history = History(interval_s=10)
    history.add(0, 1000, 0, {})
    history.add(10, 6000, 2000, {f"g{i}": i for i in range(MAX_GROUPS_CHARTED + 5)})
    history.add(20, 10, 2000, {})  # a counter reset: no negative rate
    first, second = history.samples()
    assert (first.bytes_in_per_s, first.bytes_out_per_s) == (500.0, 200.0)
    assert set(first.lag) == {f"g{i}" for i in range(5, MAX_GROUPS_CHARTED + 5)}
    assert second.bytes_in_per_s == 0.0
    for at in range(30, 30 + 3600 * 2, 10):
        history.add(at, 0, 0, {})
    assert len(history.samples()) == 360


def test_svg_chart_escapes_names_and_says_each_series_latest_value():
    svg = line_chart("lag-chart", "Lag", "", [Series('<g>&"x"', [(100, 5), (160, 1200)])], span_s=3600, now=200)
    root = ET.fromstring(svg)  # well-formed XML, whatever the names
    ns = "{http://www.w3.org/2000/svg}"
    (line,) = root.iter(f"{ns}polyline")
    assert (line.get("data-name"), line.get("data-latest")) == ('<g>&"x"', "1200")
    assert '<g>&"x": 1.2 k' in [t.text for t in root.iter(f"{ns}text")]
    empty = ET.fromstring(line_chart("c", "t", "B/s", [], span_s=3600, now=0))
    assert "no samples yet" in [t.text for t in empty.iter(f"{ns}text")]


def test_a_scram_password_is_checked_against_the_stored_key():
    credential = ScramCredential.from_password("sha512", "s3cret", secrets.token_bytes(16), 4096)
    assert login.scram_password_ok(credential, "SCRAM-SHA-512", "s3cret")
    assert not login.scram_password_ok(credential, "SCRAM-SHA-512", "s3creT")
    assert login.password_ok(login.Credentials(False, (("SCRAM-SHA-512", credential),)), "s3cret")
    assert not login.password_ok(login.Credentials(False, ()), "s3cret")
    assert login.password_ok(login.Credentials(True, ()), "anything the PLAIN check accepted")


def test_sessions_expire_are_bounded_and_close():
    sessions = login.Sessions(ttl_s=10, most=2)
    first = sessions.open("a", now=0)
    cookie = f"other=1; {login.COOKIE}={first}"
    assert sessions.find(cookie, now=5).principal == "User:a"
    assert sessions.find(cookie, now=10) is None  # expired
    tokens = [sessions.open(u, now=20) for u in ("b", "c", "d")]
    assert sessions.find(f"{login.COOKIE}={tokens[0]}", now=21) is None  # the oldest was dropped
    sessions.close(f"{login.COOKIE}={tokens[2]}")
    assert sessions.find(f"{login.COOKIE}={tokens[2]}", now=21) is None
    assert sessions.find(f"{login.COOKIE}={tokens[1]}", now=21).user == "c"
    assert sessions.find('bad"cookie', now=21) is None
    assert "HttpOnly" in login.set_cookie("t")[1] and "SameSite=Strict" in login.set_cookie("t")[1]


def test_cross_site_requests_are_named():
    ok = {"HTTP_X_TWINLOG_CONSOLE": "1", "HTTP_HOST": "h:9", "HTTP_ORIGIN": "http://h:9"}
    assert login.cross_site(ok) is None
    assert "missing" in login.cross_site({"HTTP_HOST": "h:9"})
    assert "Origin" in login.cross_site({**ok, "HTTP_ORIGIN": "http://other:9"})
    assert "another site" in login.cross_site({**ok, "HTTP_SEC_FETCH_SITE": "cross-site"})


def test_browse_queries_and_config_changes_are_checked():
    q = BrowseQuery.parse({"topic": ["t"], "from": ["timestamp"], "position": ["1700000000000"], "limit": ["5"]})
    assert q == BrowseQuery("t", 0, "timestamp", 1700000000000, 5)
    assert BrowseQuery.parse({"topic": ["t"]}).start == "end"
    for bad in ({}, {"topic": ["t"], "from": ["middle"]}, {"topic": ["t"], "limit": [str(MAX_RECORDS + 1)]},
                {"topic": ["t"], "partition": ["x"]}, {"topic": ["t"], "from": ["offset"], "position": ["-1"]}):
        with pytest.raises(RequestRefused) as refused:
            BrowseQuery.parse(bad)
        assert refused.value.status == 400
    assert parse_changes({"changes": [{"name": "retention.ms", "value": "5"},
                                      {"name": "cleanup.policy", "op": "delete", "value": None}]}) == \
        [("retention.ms", 0, "5"), ("cleanup.policy", 1, None)]
    for bad in (None, {"changes": []}, {"changes": [{"name": 1}]}, {"changes": [{"name": "a", "op": "drop"}]},
                json.loads('{"changes": [{"name": "a", "value": 5}]}')):
        with pytest.raises(RequestRefused):
            parse_changes(bad)
