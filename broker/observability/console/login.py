"""Login to the console, when the broker has SASL users: the same users and passwords a Kafka
client logs in with (PLAIN's JAAS users, the SCRAM credentials of AlterUserScramCredentials or
--sasl-scram-user), checked against the broker's own stores, never a list of the console's own.

A SCRAM credential keeps no password: the one typed is salted and hashed with the credential's
salt and iterations (PBKDF2, in the HTTP thread, never on the event loop) and its StoredKey
compared with the kept one in constant time, as the SCRAM exchange itself proves it.

A login opens a session: a random token in a cookie that is HttpOnly (no script reads it) and
SameSite=Strict (no other site's page sends it), kept in memory for SESSION_TTL_S, at most
MAX_SESSIONS at once (the oldest are dropped). Requests that change something must also carry
the header CSRF_HEADER and, if the browser names an Origin, this one: a form on another site
can set neither, and a script there cannot send a custom header here without a CORS preflight,
which this server never grants.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from wire.scram import SCRAM_MECHANISMS, ScramCredential

COOKIE = "twinlog_console_session"
CSRF_HEADER = "X-Twinlog-Console"  # the page sends it on every POST; its value is not checked
_CSRF_ENVIRON = "HTTP_" + CSRF_HEADER.upper().replace("-", "_")  # how WSGI names the header
SESSION_TTL_S = 8 * 3600
MAX_SESSIONS = 1000


@dataclass(frozen=True)
class Credentials:
    """What the broker keeps for one user name: a PLAIN password check, SCRAM credentials."""
    plain_ok: bool  # the PLAIN users' file has this name with this password
    scram: tuple[tuple[str, ScramCredential], ...]  # (mechanism, credential)


def scram_password_ok(credential: ScramCredential, mechanism: str, password: str) -> bool:
    hash_name = SCRAM_MECHANISMS[mechanism][0]
    proof = ScramCredential.from_password(hash_name, password, credential.salt, credential.iterations)
    return hmac.compare_digest(proof.stored_key, credential.stored_key)


def password_ok(credentials: Credentials, password: str) -> bool:
    return credentials.plain_ok or any(scram_password_ok(c, m, password) for m, c in credentials.scram)


@dataclass(frozen=True)
class Session:
    user: str
    expires: float

    @property
    def principal(self) -> str:
        return f"User:{self.user}"


class Sessions:
    def __init__(self, ttl_s: float = SESSION_TTL_S, most: int = MAX_SESSIONS) -> None:
        self._ttl_s = ttl_s
        self._most = most
        self._by_token: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()  # HTTP threads log in and out at once

    def open(self, user: str, now: float | None = None) -> str:
        token = secrets.token_urlsafe(32)
        now = time.monotonic() if now is None else now
        with self._lock:
            self._by_token[token] = Session(user, now + self._ttl_s)
            while len(self._by_token) > self._most:
                self._by_token.popitem(last=False)
        return token

    def find(self, cookie_header: str | None, now: float | None = None) -> Session | None:
        token = token_of(cookie_header)
        if token is None:
            return None
        now = time.monotonic() if now is None else now
        with self._lock:
            session = self._by_token.get(token)
            if session is not None and session.expires <= now:
                del self._by_token[token]
                return None
            return session

    def close(self, cookie_header: str | None) -> None:
        token = token_of(cookie_header)
        if token is None:
            return
        with self._lock:
            self._by_token.pop(token, None)


def token_of(cookie_header: str | None) -> str | None:
    if not cookie_header:
        return None
    try:
        morsel = SimpleCookie(cookie_header).get(COOKIE)
    except Exception:  # http.cookies raises CookieError on a malformed header  # noqa: BLE001
        return None
    return morsel.value if morsel is not None else None


def set_cookie(token: str, ttl_s: float = SESSION_TTL_S) -> tuple[str, str]:
    return ("Set-Cookie", f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={int(ttl_s)}")


def clear_cookie() -> tuple[str, str]:
    return ("Set-Cookie", f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")


def cross_site(environ: Mapping[str, Any]) -> str | None:
    """Why a state-changing request must be refused as cross-site, or None."""
    if _CSRF_ENVIRON not in environ:
        return f"the {CSRF_HEADER} header is missing"
    origin = environ.get("HTTP_ORIGIN")
    host = environ.get("HTTP_HOST")
    if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
        return f"Origin {origin} is not this console's"
    if environ.get("HTTP_SEC_FETCH_SITE", "same-origin") not in ("same-origin", "none"):
        return "the request came from another site"
    return None
