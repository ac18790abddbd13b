"""Which frames a connection may send at each stage of SASL authentication, as one table.

    PLAINTEXT / SSL listener:  AUTHENTICATED from the start (principal ANONYMOUS, or the TLS
                               client certificate's subject)
    SASL_* listener:

    HANDSHAKE ──SaslHandshake v1, mechanism enabled──► AUTHENTICATE ──SaslAuthenticate, last token──► AUTHENTICATED
        │  ▲                                              │ ▲
        │  └── ApiVersions                                │ └── SaslAuthenticate, more tokens to come
        └──SaslHandshake v0──► RAW_TOKEN ──bare token, last──► AUTHENTICATED
                                 ▲    │
                                 └────┘ bare token, more to come
    any stage ──a mechanism refused, credentials wrong──► FAILED (answered once, then closed)

After SaslHandshake v0 the client sends its tokens as bare size-prefixed frames, no request
header (how Kafka before 1.0 did it; kafka-python, aiokafka and librdkafka still do when the
handshake they pick is v0), so at RAW_TOKEN a frame is a token whatever its bytes.

Every (stage, frame) pair has an entry, as broker/groups/state.py does for groups: SERVE hands
the request to its API handler, AUTHENTICATE to the connection's authenticator (whose outcome
picks the next stage), CLOSE drops the connection with one log line, as Kafka does for any
request other than these before authentication. Once authenticated everything is served; a
second SaslHandshake / SaslAuthenticate gets ILLEGAL_SASL_STATE from its handler, as from
Kafka's KafkaApis (re-authentication, KIP-368, is not offered: session_lifetime_ms is 0).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

API_VERSIONS_KEY = 18
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


class Stage(enum.Enum):
    HANDSHAKE = "waiting for SaslHandshake"
    AUTHENTICATE = "waiting for SaslAuthenticate"
    RAW_TOKEN = "waiting for a bare SASL token"
    AUTHENTICATED = "authenticated"
    FAILED = "authentication failed"


class Frame(enum.Enum):
    API_VERSIONS = "ApiVersions"
    SASL_HANDSHAKE_V0 = "SaslHandshake v0"
    SASL_HANDSHAKE_V1 = "SaslHandshake v1"
    SASL_AUTHENTICATE = "SaslAuthenticate"
    OTHER_API = "any other request"
    RAW_TOKEN = "a bare token (no request header)"


class Verdict(enum.Enum):
    SERVE = "the API handler answers"
    AUTHENTICATE = "the authenticator answers"
    CLOSE = "close the connection"


class Outcome(enum.Enum):
    """What the authenticator made of a frame it was given."""
    CONTINUE = "accepted; more tokens to come"
    COMPLETE = "the client proved who it is"
    FAILED = "refused"


class Step(NamedTuple):
    verdict: Verdict
    next: Stage  # after SERVE; after AUTHENTICATE whose outcome is CONTINUE
    complete: Stage | None = None  # after AUTHENTICATE whose outcome is COMPLETE


H, A, R, OK, F = Stage.HANDSHAKE, Stage.AUTHENTICATE, Stage.RAW_TOKEN, Stage.AUTHENTICATED, Stage.FAILED


def _close(stage: Stage) -> Step:
    return Step(Verdict.CLOSE, stage)


TRANSITIONS: dict[tuple[Stage, Frame], Step] = {
    (H, Frame.API_VERSIONS): Step(Verdict.SERVE, H),
    (H, Frame.SASL_HANDSHAKE_V0): Step(Verdict.AUTHENTICATE, R),
    (H, Frame.SASL_HANDSHAKE_V1): Step(Verdict.AUTHENTICATE, A),
    (H, Frame.SASL_AUTHENTICATE): _close(H),  # Kafka: "Unexpected Kafka request ... during SASL handshake"
    (H, Frame.OTHER_API): _close(H),
    (H, Frame.RAW_TOKEN): _close(H),

    (A, Frame.API_VERSIONS): _close(A),  # Kafka accepts only SaslAuthenticate once the mechanism is chosen
    (A, Frame.SASL_HANDSHAKE_V0): _close(A),
    (A, Frame.SASL_HANDSHAKE_V1): _close(A),
    (A, Frame.SASL_AUTHENTICATE): Step(Verdict.AUTHENTICATE, A, OK),
    (A, Frame.OTHER_API): _close(A),
    (A, Frame.RAW_TOKEN): _close(A),

    (R, Frame.RAW_TOKEN): Step(Verdict.AUTHENTICATE, R, OK),

    (OK, Frame.API_VERSIONS): Step(Verdict.SERVE, OK),
    (OK, Frame.SASL_HANDSHAKE_V0): Step(Verdict.SERVE, OK),  # answered ILLEGAL_SASL_STATE
    (OK, Frame.SASL_HANDSHAKE_V1): Step(Verdict.SERVE, OK),
    (OK, Frame.SASL_AUTHENTICATE): Step(Verdict.SERVE, OK),
    (OK, Frame.OTHER_API): Step(Verdict.SERVE, OK),
    (OK, Frame.RAW_TOKEN): _close(OK),
}
# At RAW_TOKEN no frame has a header to classify: only RAW_TOKEN arrives. FAILED closes on
# anything (the failure was answered; the connection goes once that answer is written).
for _frame in Frame:
    TRANSITIONS.setdefault((R, _frame), _close(R))
    TRANSITIONS[(F, _frame)] = _close(F)


def initial_stage(security_protocol: str) -> Stage:
    return Stage.HANDSHAKE if security_protocol in SASL_PROTOCOLS else Stage.AUTHENTICATED


def classify(stage: Stage, api_key: int, api_version: int) -> Frame:
    """The frame kind of a request whose header reads (api_key, api_version)."""
    if stage is Stage.RAW_TOKEN:
        return Frame.RAW_TOKEN
    if api_key == API_VERSIONS_KEY:
        return Frame.API_VERSIONS
    if api_key == SASL_HANDSHAKE_KEY:
        return Frame.SASL_HANDSHAKE_V0 if api_version == 0 else Frame.SASL_HANDSHAKE_V1
    if api_key == SASL_AUTHENTICATE_KEY:
        return Frame.SASL_AUTHENTICATE
    return Frame.OTHER_API


def transition(stage: Stage, frame: Frame) -> Step:
    return TRANSITIONS[(stage, frame)]


def after(step: Step, outcome: Outcome) -> Stage:
    """The stage an AUTHENTICATE step leads to, given what the authenticator made of it."""
    if outcome is Outcome.FAILED:
        return Stage.FAILED
    if outcome is Outcome.COMPLETE:
        return step.complete or step.next
    return step.next
