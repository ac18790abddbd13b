"""AlterUserScramCredentials (API 51): add, replace or delete users' SCRAM credentials.

The client sends the salt and SaltedPassword (never the password); the broker keeps only
StoredKey and ServerKey derived from them (broker/security/sasl_credentials.py). Kafka's checks, one
result per user: a user named twice in one request (upsert and delete together, or twice in
either) is DUPLICATE_RESOURCE and nothing of it changes; an empty name, iterations outside
[4096, 16384] or an empty salt / salted password are UNACCEPTABLE_CREDENTIAL; an unknown
mechanism UNSUPPORTED_SASL_MECHANISM; deleting what does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for
from wire.scram import MAX_ITERATIONS, MECHANISM_BY_TYPE, SCRAM_MECHANISMS

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


def _upsert_problem(u: Any) -> tuple[ErrorCode, str] | None:
    mechanism = MECHANISM_BY_TYPE.get(u.mechanism)
    if mechanism is None:
        return ErrorCode.unsupported_sasl_mechanism, f"Unknown SCRAM mechanism type {u.mechanism}"
    if not u.name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if u.iterations < SCRAM_MECHANISMS[mechanism][2]:
        return ErrorCode.unacceptable_credential, f"Too few iterations: {u.iterations}"
    if u.iterations > MAX_ITERATIONS:
        return ErrorCode.unacceptable_credential, f"Too many iterations: {u.iterations}"
    if not u.salt or not u.salted_password:
        return ErrorCode.unacceptable_credential, "Salt and salted password must not be empty"
    return None


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls = nested(cls, "AlterUserScramCredentialsResult")
    store = ctx.security.scram
    if not ctx.authorizer.cluster_allowed(Operation.ALTER):  # ACLs, as Kafka's handleAlterUserScramCredentialsRequest
        names = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        return make(cls, throttle_time=NO_THROTTLE, results=tuple(
            make(result_cls, user=n, error_code=ErrorCode.cluster_authorization_failed, error_message="Cluster authorization failed.") for n in names))
    named = Counter([d.name for d in request.deletions] + [u.name for u in request.upsertions])
    outcome: dict[str, tuple[ErrorCode, str | None]] = {}
    upserts: list[tuple[str, str, bytes, bytes, int]] = []
    deletions: list[tuple[str, str]] = []
    for d in request.deletions:
        if named[d.name] > 1:
            outcome[d.name] = (ErrorCode.duplicate_resource, f"A user credential cannot be altered twice in the same "
                                                     f"request: {d.name}")
        elif MECHANISM_BY_TYPE.get(d.mechanism) is None:
            outcome[d.name] = (ErrorCode.unsupported_sasl_mechanism, f"Unknown SCRAM mechanism type {d.mechanism}")
        elif store.get(d.name, MECHANISM_BY_TYPE[d.mechanism]) is None:
            outcome[d.name] = (ErrorCode.resource_not_found, f"Attempt to delete a user credential that does not "
                                                     f"exist: {d.name}")
        else:
            deletions.append((d.name, MECHANISM_BY_TYPE[d.mechanism]))
            outcome[d.name] = (ErrorCode.none, None)
    for u in request.upsertions:
        if named[u.name] > 1:
            outcome[u.name] = (ErrorCode.duplicate_resource, f"A user credential cannot be altered twice in the same "
                                                     f"request: {u.name}")
        elif (problem := _upsert_problem(u)) is not None:
            outcome[u.name] = problem
        else:
            upserts.append((u.name, MECHANISM_BY_TYPE[u.mechanism], u.salt, u.salted_password, u.iterations))
            outcome[u.name] = (ErrorCode.none, None)
    if upserts or deletions:
        await store.alter(upserts, deletions)
    results = tuple(make(result_cls, user=user, error_code=code, error_message=message)
                    for user, (code, message) in outcome.items())
    return make(cls, throttle_time=NO_THROTTLE, results=results)
