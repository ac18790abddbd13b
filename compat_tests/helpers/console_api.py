"""The console's JSON endpoints as the tests call them (broker/observability/console/api_routes.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request


def get(port: int, path: str, **query) -> tuple[int, object]:
    """GET `path` with `query` from the console on `port`: (HTTP status, the decoded JSON body),
    error answers included."""
    url = f"http://127.0.0.1:{port}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
