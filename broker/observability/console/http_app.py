"""The console's HTTP side: the page, its scripts and its endpoints, a WSGI app mounted on the
metrics port (metrics_http.py).

    GET  /                                console.html; /console redirects here
    GET  /static/NAME                     the page's scripts and stylesheet (static/), nothing else
    GET  /api/session                     {login_required, user}
    POST /api/login                       {"user", "password"}: a session cookie (login.py)
    POST /api/logout
    /api/...                              api_routes.py
    errors                                {"error": "..."}: 400 bad request, 401 login needed,
                                          403 refused (ACLs, cross-site), 404 unknown,
                                          409 hosted on another broker, 503 starting or busy

With SASL users on the broker every /api/ request but the session and login ones needs a
session; without them the console is open, as before logins existed. Every POST must pass
login.cross_site (whether or not a login is needed), so no other site can change a config.

Topic names, group ids, keys and values are user data: the page writes them with textContent
only, and the Content-Security-Policy allows scripts, styles and requests from this origin
only (no inline script, no eval), so markup that got in can neither run nor load anything.
"""

from __future__ import annotations

import asyncio
import json
import logging
from http import HTTPStatus
from importlib import resources
from typing import Any
from urllib.parse import parse_qs
from wsgiref.types import StartResponse, WSGIEnvironment

from broker.observability.console import api_routes, broker_state, login
from broker.observability.console.broker_state import ConsoleSources, RequestRefused
from broker.observability.console.charts import History
from broker.observability.console.topic_configs import console_context
from broker.observability.loop_read import LoopBusy, read_on_loop
from broker.observability.metrics_collector import SNAPSHOT_TIMEOUT_S

log = logging.getLogger(__name__)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
MAX_BODY_BYTES = 64 * 1024
# answered whether or not a session is open
_SESSION_ENDPOINTS = {("GET", "/api/session"), ("HEAD", "/api/session"), ("POST", "/api/login"),
                      ("POST", "/api/logout")}
_COMMON_HEADERS = [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
                   ("Cache-Control", "no-store")]


def _static_files() -> dict[str, bytes]:
    folder = resources.files(__package__).joinpath("static")
    return {f"/static/{f.name}": f.read_bytes() for f in folder.iterdir()
            if any(f.name.endswith(ext) for ext in STATIC_TYPES)}


class ConsoleApp:
    """Serves before the broker is attached too: the page loads, the API answers 503."""

    def __init__(self, history: History, timeout_s: float = SNAPSHOT_TIMEOUT_S) -> None:
        self._timeout_s = timeout_s
        self._page = resources.files(__package__).joinpath("console.html").read_bytes()
        self._static = _static_files()
        self._sources: ConsoleSources | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.history = history
        self.sessions = login.Sessions()

    def attach(self, sources: ConsoleSources, loop: asyncio.AbstractEventLoop) -> None:
        self._sources, self._loop = sources, loop

    def handles(self, path: str) -> bool:
        return path in ("/", "/console") or path in self._static or path.startswith("/api/")

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        path, method = environ.get("PATH_INFO", "/"), environ.get("REQUEST_METHOD", "GET")
        if path == "/console":  # where the console was before it moved to /
            query = environ.get("QUERY_STRING", "")
            start_response("302 Found", [("Location", f"/?{query}" if query else "/"), *_COMMON_HEADERS])
            return [b""]
        if path == "/" or path in self._static:
            if method not in ("GET", "HEAD"):
                return self._json(start_response, 405, {"error": "only GET is served here"})
            kind = "text/html; charset=utf-8" if path == "/" else STATIC_TYPES[path[path.rindex("."):]]
            start_response("200 OK", [("Content-Type", kind), ("Content-Security-Policy", CSP), *_COMMON_HEADERS])
            return [self._page if path == "/" else self._static[path]]
        try:
            return self._api(environ, start_response, path, method)
        except RequestRefused as exc:
            return self._json(start_response, exc.status, {"error": str(exc)})
        except LoopBusy as exc:
            return self._json(start_response, 503, {"error": str(exc)})
        except Exception as exc:  # a storage error must not end as wsgiref's bare 500 page
            log.warning("console: %s failed", path, exc_info=True)
            return self._json(start_response, 500, {"error": f"reading the broker's state failed: {exc}"})

    def _api(self, environ: WSGIEnvironment, start_response: StartResponse, path: str, method: str) -> list[bytes]:
        if method not in ("GET", "HEAD", "POST"):
            return self._json(start_response, 405, {"error": "only GET and POST are served"})
        routes = api_routes.POSTS if method == "POST" else api_routes.GETS
        if path not in routes and (method, path) not in _SESSION_ENDPOINTS:
            return self._json(start_response, 404, {"error": f"no such endpoint: {method} {path}"})
        if method == "POST" and (why := login.cross_site(environ)) is not None:
            return self._json(start_response, 403, {"error": f"refused as cross-site: {why}"})
        sources, loop = self._sources, self._loop
        if sources is None or loop is None:
            return self._json(start_response, 503, {"error": "the broker is starting: its logs are still opening"})
        login_required = read_on_loop(loop, lambda: broker_state.sasl_users_exist(sources.users), self._timeout_s)
        session = self.sessions.find(environ.get("HTTP_COOKIE")) if login_required else None
        if path == "/api/session":  # GET or HEAD
            return self._json(start_response, 200, {"login_required": login_required,
                                                    "user": session.user if session else None})
        if path == "/api/logout":
            self.sessions.close(environ.get("HTTP_COOKIE"))
            return self._json(start_response, 200, {"user": None}, login.clear_cookie())
        body = self._body(environ) if method == "POST" else None
        if path == "/api/login":
            return self._login(start_response, body, login_required, sources, loop)
        if login_required and session is None:
            return self._json(start_response, 401, {"error": "log in with a SASL user of the broker"})
        context = None
        if session is not None:
            host, port = environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT") or 0)
            context = console_context(session.principal, environ.get("REMOTE_ADDR", ""), host, port)
        call = api_routes.Call(sources, loop, self._timeout_s, parse_qs(environ.get("QUERY_STRING", ""),
                               keep_blank_values=True), body, context, self.history)
        answer = routes[path](call)
        if isinstance(answer, tuple):  # (content type, text): a chart
            kind, text = answer
            start_response("200 OK", [("Content-Type", kind), *_COMMON_HEADERS])
            return [text.encode()]
        return self._json(start_response, 200, answer)

    def _login(self, start_response: StartResponse, body: object, login_required: bool, sources: ConsoleSources,
               loop: asyncio.AbstractEventLoop) -> list[bytes]:
        if not login_required:
            return self._json(start_response, 400, {"error": "the broker has no SASL users: no login is needed"})
        user = body.get("user") if isinstance(body, dict) else None
        password = body.get("password") if isinstance(body, dict) else None
        if not isinstance(user, str) or not isinstance(password, str) or not user:
            raise RequestRefused(400, 'give {"user": ..., "password": ...}')
        credentials = read_on_loop(loop, lambda: broker_state.credentials_of(sources.users, user, password),
                                   self._timeout_s)
        if not login.password_ok(credentials, password):  # hashed here, in the HTTP thread
            return self._json(start_response, 401, {"error": "wrong user name or password"})
        token = self.sessions.open(user)
        return self._json(start_response, 200, {"user": user}, login.set_cookie(token))

    @staticmethod
    def _body(environ: WSGIEnvironment) -> object:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise RequestRefused(400, "a bad Content-Length") from None
        if length > MAX_BODY_BYTES:
            raise RequestRefused(413, f"a body of at most {MAX_BODY_BYTES} bytes")
        if not environ.get("CONTENT_TYPE", "").startswith("application/json"):
            raise RequestRefused(415, "send the body as application/json")
        try:
            return json.loads(environ["wsgi.input"].read(length) or b"null")
        except ValueError:
            raise RequestRefused(400, "the body is not JSON") from None

    @staticmethod
    def _json(start_response: StartResponse, status: int, body: Any, *headers: tuple[str, str]) -> list[bytes]:
        start_response(f"{status} {HTTPStatus(status).phrase}",
                       [("Content-Type", "application/json"), *_COMMON_HEADERS, *headers])
        return [json.dumps(body).encode()]
