"""The console's HTTP side without a broker process (compat_tests/admin/test_console*.py and
security/test_console_browser.py have the real one):

- before the broker is attached the page and its scripts load and every endpoint answers 503;
- the Content-Security-Policy allows scripts, styles and requests from this origin only, and the
  page has no inline script or style for it to allow;
- /console redirects to / with its query;
- a loop that does not answer gives a 503 after the timeout, not a stuck HTTP thread, and the
  read it never began is never made (no "coroutine ... was never awaited" once the loop closes);
- a request that is not GET or POST, an unknown endpoint, a cross-site POST are JSON errors.
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import re
import threading
import time
import warnings
from wsgiref.util import setup_testing_defaults

import pytest

from broker.broker import Broker
from broker.observability.console.broker_state import ConsoleSources
from broker.observability.console.charts import History
from broker.observability.console.http_app import ConsoleApp
from broker.settings.config_from_settings import config_with


@pytest.fixture
def sources(tmp_path):
    """A broker's own console sources (its logs in tmp_path), the ones lifecycle.py attaches."""
    broker = Broker(config_with(data_dir=str(tmp_path)))
    yield broker.observed
    broker.storage.close()


def call(app: ConsoleApp, path: str, query: str = "", method: str = "GET", headers: dict | None = None,
         body: bytes = b"") -> tuple[int, dict, bytes]:
    environ = {"PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": method, "wsgi.input": io.BytesIO(body),
               "CONTENT_LENGTH": str(len(body)), **(headers or {})}
    setup_testing_defaults(environ)
    answer = {}

    def start_response(status, headers):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(headers)

    body = b"".join(app(environ, start_response))
    return answer["status"], answer["headers"], body


def test_before_attach_the_page_loads_and_the_api_says_starting():
    app = ConsoleApp(History(1))
    status, headers, page = call(app, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"<table id=\"partitions\">" in page
    for script in re.findall(rb'<script src="([^"]+)"', page):
        status, headers, _ = call(app, script.decode())
        assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    for path in ("/api/partitions", "/api/groups", "/api/lookup", "/api/messages", "/api/session"):
        status, headers, body = call(app, path, "topic=t&key=k")
        assert (status, headers["Content-Type"]) == (503, "application/json")
        assert "starting" in json.loads(body)["error"]


def test_csp_allows_this_origin_only_and_the_page_has_nothing_inline():
    app = ConsoleApp(History(1))
    _, headers, page = call(app, "/")
    csp = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";"))
    assert csp["default-src"] == "'none'"
    assert csp["script-src"] == csp["style-src"] == csp["connect-src"] == "'self'"
    assert re.search(rb"<script>|<style>|\son\w+=", page) is None  # nothing the CSP would have to allow
    assert b"http://" not in page and b"https://" not in page  # nothing loaded from elsewhere


def test_the_old_address_redirects_to_the_console_with_its_query():
    status, headers, _ = call(ConsoleApp(History(1)), "/console", "topic=t&key=k")
    assert (status, headers["Location"]) == (302, "/?topic=t&key=k")
    assert call(ConsoleApp(History(1)), "/static/../console.html")[0] == 404  # only the listed files are served


def test_a_loop_that_does_not_answer_gives_503_after_the_timeout(sources: ConsoleSources):
    loop = asyncio.new_event_loop()  # never run: a read sent to it never starts
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            app = ConsoleApp(History(1), timeout_s=0.2)
            app.attach(sources, loop)
            started = time.monotonic()
            status, _, body = call(app, "/api/partitions")
            assert status == 503 and "did not answer" in json.loads(body)["error"]
            assert time.monotonic() - started < 2
        finally:
            loop.close()  # drops what the loop never ran
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_a_stopped_loop_gives_503(sources: ConsoleSources):
    loop = asyncio.new_event_loop()
    loop.close()  # the broker stopped while the metrics port still serves
    app = ConsoleApp(History(1), timeout_s=0.2)
    app.attach(sources, loop)
    status, _, body = call(app, "/api/session")
    assert status == 503 and "stopped" in json.loads(body)["error"]


def test_bad_requests_are_json_errors(sources: ConsoleSources):
    app = ConsoleApp(History(1))
    loop = asyncio.new_event_loop()  # never run: none of these requests reaches the broker's state
    app.attach(sources, loop)
    try:
        assert call(app, "/api/partitions", method="DELETE")[0] == 405
        assert call(app, "/api/nothing")[0] == 404
        assert call(app, "/api/partitions", method="POST")[0] == 404  # a GET-only endpoint
        assert call(app, "/api/login")[0] == 404  # POST only
        status, _, body = call(app, "/api/configs", "topic=t", method="POST", body=b"{}",
                               headers={"CONTENT_TYPE": "application/json"})
        assert status == 403 and "X-Twinlog-Console" in json.loads(body)["error"]
        status, _, body = call(app, "/api/configs", "topic=t", method="POST", body=b"{}",
                               headers={"CONTENT_TYPE": "application/json", "HTTP_X_TWINLOG_CONSOLE": "1",
                                        "HTTP_HOST": "127.0.0.1:9", "HTTP_ORIGIN": "http://evil.example"})
        assert status == 403 and "evil.example" in json.loads(body)["error"]
    finally:
        loop.close()


def test_the_api_reads_the_brokers_services_on_its_loop(tmp_path):
    broker = Broker(config_with(data_dir=str(tmp_path)))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(broker.topic_admin.create_topic("t", 2, 1, {}), loop).result(10)
        app = ConsoleApp(History(1))
        app.attach(broker.observed, loop)
        status, _, body = call(app, "/api/session")
        assert status == 200 and json.loads(body) == {"login_required": False, "user": None}
        status, _, body = call(app, "/api/partitions")
        assert status == 200 and [(r["topic"], r["partition"]) for r in json.loads(body)] == [("t", 0), ("t", 1)]
        status, _, body = call(app, "/api/brokers")
        assert status == 200 and json.loads(body)["this_broker"] == broker.config.node_id
        assert json.loads(body)["brokers"][0]["replicas"] == 2
        status, _, body = call(app, "/api/acls")
        assert status == 200 and json.loads(body)["authorizer"] is False
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
        broker.storage.close()
