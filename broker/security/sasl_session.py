"""One connection's SASL authentication: the stage it is at (wire/sasl_stage.py) and the
mechanism exchange under way (wire/sasl_plain.py, wire/scram.py).

`gate(frame)` is asked before any request of a connection that is not authenticated yet. It
answers what the stage table says: ApiVersions goes to its handler (returns None: dispatch
goes on as usual), SaslHandshake / SaslAuthenticate / bare tokens are answered here, anything
else closes the connection with one log line (ConnectionClosed), as Kafka's
SaslServerAuthenticator does. A refused mechanism or wrong credentials are answered once
(SaslAuthenticate's SASL_AUTHENTICATION_FAILED with Kafka's message; nothing for a bare
token, as Kafka) and the connection closes after that answer (`failed`).

Re-authentication (KIP-368) is not offered: session_lifetime_ms is 0, which tells clients
none is required, and connections.max.reauth.ms is 0 as Kafka's default.
"""

from __future__ import annotations

import datetime
import logging
import secrets
import struct

from wire.error_codes import ErrorCode
from wire.framing import PeerProtocolError
from wire.protocol import decode_request, encode_response, response_for
from wire.sasl_mechanism import SaslAuthenticationFailed
from wire.sasl_plain import PlainServer
from wire.sasl_stage import Outcome, Stage, Verdict, after, classify, initial_stage, transition
from wire.scram import SCRAM_MECHANISMS, ScramServer

from broker.api.response_builder import make
from broker.net.request_context import RequestContext

log = logging.getLogger(__name__)

_KEY_VERSION = struct.Struct(">hh")
_SIZE = struct.Struct(">i")
NO_SESSION_LIFETIME = datetime.timedelta(0)  # KIP-368: no re-authentication required


class SaslSession:
    def __init__(self, security, context: RequestContext) -> None:
        self._security = security  # broker.security: enabled mechanisms and credential stores
        self._context = context
        self.stage = initial_stage(context.listener.security_protocol)
        self._mechanism = None  # PlainServer | ScramServer once the handshake chose one

    @property
    def authenticated(self) -> bool:
        return self.stage is Stage.AUTHENTICATED

    @property
    def failed(self) -> bool:
        return self.stage is Stage.FAILED

    def gate(self, frame: bytes) -> list | None:
        """None: hand the frame to dispatch as usual. Else the answer's chunks (possibly empty).
        Raises PeerProtocolError when the connection must close."""
        stage = self.stage
        if stage is Stage.RAW_TOKEN:
            key = version = -1
        elif len(frame) < _KEY_VERSION.size:
            raise PeerProtocolError(f"request of {len(frame)} bytes before authentication")
        else:
            key, version = _KEY_VERSION.unpack_from(frame)
        kind = classify(stage, key, version)
        step = transition(stage, kind)
        if step.verdict is Verdict.CLOSE:
            raise PeerProtocolError(f"unexpected {kind.value} (api key {key}) while {stage.value} "
                                    f"on listener {self._context.listener.name}")
        if step.verdict is Verdict.SERVE:
            self.stage = step.next
            return None
        if stage is Stage.RAW_TOKEN:
            reply, outcome = self._token(frame)
            self.stage = after(step, outcome)
            if outcome is Outcome.FAILED:
                raise PeerProtocolError(f"SASL authentication failed on a bare token: {reply.decode()}")
            return [_SIZE.pack(len(reply)) + reply]
        header, request = decode_request(frame)
        if key == 17:
            response, outcome = self._handshake(header, request)
        else:
            reply, outcome = self._token(request.auth_bytes)
            failed = outcome is Outcome.FAILED
            code = ErrorCode.sasl_authentication_failed if failed else ErrorCode.none
            response = make(response_for(header), error_code=code,
                            error_message=reply.decode() if failed else None,
                            auth_bytes=b"" if failed else reply, session_lifetime=NO_SESSION_LIFETIME)
        self.stage = after(step, outcome)
        return encode_response(header, response)

    def _handshake(self, header, request):
        enabled = self._security.enabled_mechanisms
        name = request.mechanism
        cls = response_for(header)
        if name not in enabled:
            log.info("closing connection from %s: SASL mechanism %r is not enabled (%s)",
                     self._context.peer, name, ", ".join(enabled))
            return make(cls, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=enabled), Outcome.FAILED
        if name == "PLAIN":
            self._mechanism = PlainServer(self._security.plain_users.password_ok)
        else:
            self._mechanism = ScramServer(name, lambda user: self._security.scram.get(user, name),
                                          secrets.token_urlsafe(18), hash_name=SCRAM_MECHANISMS[name][0],
                                          token_lookup=lambda token_id: self._security.tokens.login(token_id, name))
        return make(cls, error_code=ErrorCode.none, mechanisms=enabled), Outcome.CONTINUE

    def _token(self, token: bytes) -> tuple[bytes, Outcome]:
        """The mechanism's answer and what it made of the token; on failure, the message."""
        try:
            reply = self._mechanism.step(token)
        except SaslAuthenticationFailed as exc:
            log.info("failed authentication from %s on listener %s: %s",
                     self._context.peer, self._context.listener.name, exc)
            return str(exc).encode(), Outcome.FAILED
        if not self._mechanism.complete:
            return reply, Outcome.CONTINUE
        self._context.principal = f"User:{self._mechanism.username}"
        self._context.token_authenticated = self._mechanism.token_authenticated
        return reply, Outcome.COMPLETE
