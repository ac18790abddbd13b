"""The console's HTTP side: the page and its JSON endpoints, a WSGI app mounted on the metrics port.

    GET /console                          console.html (inline CSS and JS, nothing fetched elsewhere)
    GET /api/partitions                   [{topic, partition, layout, log_end_offset, high_watermark,
                                            log_start_offset, size_bytes, leader, replicas, isr}]
    GET /api/groups                       [{group, topic, partition, committed, lag}]
    GET /api/lookup?topic=T&key=K         {topic, key, records: [{partition, offset, timestamp,
                                            value, headers}], truncated}; K is UTF-8 text
    errors                                {"error": "..."}: 400 bad request or a segment topic,
                                          404 unknown topic, 503 starting or the loop too busy

Topic names, group ids, keys and values are user data: the page writes them with textContent
only, and a Content-Security-Policy that allows the page's own inline script and style by hash
(and requests to this origin) stops any markup that got in from running or loading anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from http import HTTPStatus
from importlib import resources
from urllib.parse import parse_qs

from broker.observability.console import broker_state

log = logging.getLogger(__name__)


def _content_security_policy(page: str) -> str:
    def hashes(tag: str) -> str:
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.S)
        return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'"
                        for b in bodies)
    return (f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
            "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class ConsoleApp:
    """Serves before the broker is attached too: the page loads, the API answers 503."""

    def __init__(self, timeout_s: float = broker_state.SNAPSHOT_TIMEOUT_S) -> None:
        self._timeout_s = timeout_s
        self._page = resources.files(__package__).joinpath("console.html").read_text(encoding="utf-8")
        self._csp = _content_security_policy(self._page)
        self._broker = None
        self._loop = None

    def attach(self, broker, loop) -> None:
        self._broker, self._loop = broker, loop

    def handles(self, path: str) -> bool:
        return path == "/console" or path.startswith("/api/")

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return self._json(start_response, 405, {"error": "only GET is served"})
        if path == "/console":
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                      ("Content-Security-Policy", self._csp), *_COMMON_HEADERS])
            return [self._page.encode()]
        if self._broker is None:
            return self._json(start_response, 503, {"error": "the broker is starting: its logs are still opening"})
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        try:
            if path == "/api/partitions":
                body = self._read(broker_state.partition_rows(self._broker))
            elif path == "/api/groups":
                body = self._read(broker_state.group_rows(self._broker))
            elif path == "/api/lookup":
                topic, key = query.get("topic", [""])[0], query.get("key", [None])[0]
                if not topic or key is None:
                    return self._json(start_response, 400, {"error": "give ?topic=<commitlog topic>&key=<key>"})
                answer = self._read(broker_state.lookup(self._broker, topic, key.encode()))
                body = {"topic": topic, "key": key, "records": answer.records, "truncated": answer.truncated}
            else:
                return self._json(start_response, 404, {"error": f"no such endpoint: {path}"})
        except broker_state.LookupRefused as exc:
            return self._json(start_response, exc.status, {"error": str(exc)})
        except broker_state.LoopBusy as exc:
            return self._json(start_response, 503, {"error": str(exc)})
        except Exception as exc:  # a storage error must not end as wsgiref's bare 500 page
            log.warning("console: %s failed", path, exc_info=True)
            return self._json(start_response, 500, {"error": f"reading the broker's state failed: {exc}"})
        return self._json(start_response, 200, body)

    def _read(self, coro):
        return broker_state.read_on_loop(self._loop, coro, self._timeout_s)

    @staticmethod
    def _json(start_response, status: int, body) -> list[bytes]:
        start_response(f"{status} {HTTPStatus(status).phrase}", [("Content-Type", "application/json"), ("Cache-Control", "no-store"),
                                              *_COMMON_HEADERS])
        return [json.dumps(body).encode()]


_COMMON_HEADERS = [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer")]
