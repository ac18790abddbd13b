"""The console's HTTP side without a broker process (compat_tests/test_console.py has the real one):

- before the broker is attached the page loads and every endpoint answers 503 in JSON;
- the Content-Security-Policy allows exactly the page's own inline script and style (by hash);
- a loop that does not answer gives a 503 after the timeout, not a stuck HTTP thread;
- a request that is not GET, an unknown endpoint and a lookup without a key are JSON errors.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import time
from wsgiref.util import setup_testing_defaults

from broker.observability.console.http_app import ConsoleApp


def call(app: ConsoleApp, path: str, query: str = "", method: str = "GET") -> tuple[int, dict, bytes]:
    environ = {"PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": method}
    setup_testing_defaults(environ)
    answer = {}

    def start_response(status, headers):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(headers)

    body = b"".join(app(environ, start_response))
    return answer["status"], answer["headers"], body


def test_before_attach_the_page_loads_and_the_api_says_starting():
    app = ConsoleApp()
    status, headers, page = call(app, "/console")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"<table id=\"partitions\">" in page
    for path in ("/api/partitions", "/api/groups", "/api/lookup"):
        status, headers, body = call(app, path, "topic=t&key=k")
        assert (status, headers["Content-Type"]) == (503, "application/json")
        assert "starting" in json.loads(body)["error"]


def test_csp_allows_the_inline_script_and_style_by_hash_only():
    app = ConsoleApp()
    _, headers, page = call(app, "/console")
    csp = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";"))
    for tag in ("script", "style"):
        (inline,) = re.findall(rf"<{tag}>(.*?)</{tag}>", page.decode(), re.S)
        digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
        assert csp[f"{tag}-src"] == f"'sha256-{digest}'"
    assert csp["default-src"] == "'none'" and csp["connect-src"] == "'self'"
    assert b"http://" not in page and b"https://" not in page  # nothing loaded from elsewhere


def test_a_loop_that_does_not_answer_gives_503_after_the_timeout():
    loop = asyncio.new_event_loop()  # never run: a coroutine sent to it never starts
    try:
        app = ConsoleApp(timeout_s=0.2)
        app.attach(broker=object(), loop=loop)
        started = time.monotonic()
        status, _, body = call(app, "/api/partitions")
        assert status == 503 and "did not answer" in json.loads(body)["error"]
        assert time.monotonic() - started < 2
    finally:
        loop.close()


def test_bad_requests_are_json_errors():
    app = ConsoleApp()
    app.attach(broker=object(), loop=None)
    assert call(app, "/api/partitions", method="POST")[0] == 405
    assert call(app, "/api/nothing")[0] == 404
    status, _, body = call(app, "/api/lookup", "topic=t")
    assert status == 400 and "key=" in json.loads(body)["error"]
